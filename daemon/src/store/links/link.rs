//! A stored short link ([`Link`]), its state, and the stored form of its
//! JSON columns: what both stores read and write.

use shortlink_core::check_mode::CheckMode;
use shortlink_core::country::{Country, CountryTargets};
use shortlink_core::ipc::DeviceTargets;
use shortlink_core::variants::{Variant, MAX_VARIANTS};

/// A stored short link.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Link {
    /// Numeric id; the generated code is the codec's encoding of it.
    pub id: u64,
    /// Custom alias, reachable in addition to the generated code.
    pub alias: Option<String>,
    /// Normalized target URL.
    pub url: String,
    pub created_at: i64,
    pub updated_at: i64,
    /// Unix seconds after which the link is gone.
    pub expires_at: Option<i64>,
    /// Renew-on-access: each use pushes the expiry to at least now + this.
    pub renew_ttl: Option<i64>,
    /// Human (non-bot) visits after which the link is gone.
    pub max_visits: Option<i64>,
    /// Redirect status, `None` for the edge's default.
    pub redirect: Option<u16>,
    pub targets: DeviceTargets,
    pub disabled: bool,
    pub tags: Vec<String>,
    /// Who created it (`key:3`, `app:name`, `cli`).
    pub created_by: Option<String>,
    /// All clicks counted so far, bots included.
    pub clicks: i64,
    /// The bot share of `clicks`.
    pub bot_clicks: i64,
    /// Append the visit's query string to the target: `None` leaves it to
    /// the location's `shortlink_forward_query`, a value wins over it.
    pub forward_query: Option<bool>,
    /// Targets per visitor country, chosen at the edge before the device
    /// targets (checked by `links::rules`; stored as a JSON object).
    pub country_targets: CountryTargets,
    /// Argon2id hash of the password visitors must give; `None`: no
    /// password. Never leaves the daemon (views show `protected`).
    pub password_hash: Option<String>,
    /// A/B variants, which replace `url` at the edge (checked by
    /// `links::rules`; stored as a JSON array of `{url, weight}`).
    pub variants: Vec<Variant>,
    /// The team of whoever created it: only that team (and admins) see it.
    pub team_id: i64,
    /// The checker found the target failing `checker.fallback_after`
    /// probes in a row: the edge answers the link as gone (the fallback)
    /// until a probe finds it healthy. Only the checker sets it.
    pub broken: bool,
    /// The link's own choice about the checker (`shortlink_core::check_mode`);
    /// `None`: the site's `[checker]` settings decide.
    pub check: Option<CheckMode>,
    /// A takedown in force covers it (an admin's, the blocklist's, the
    /// allow/block lists'): it answers as gone whatever `disabled` says,
    /// and only the takedown's undo lifts it, never an edit.
    pub taken_down: bool,
    /// A human name for the link (the page's title, the campaign's name);
    /// searched by the list's `q`. `None`: none.
    pub title: Option<String>,
}

/// Variants as stored: a JSON array of `{"url", "weight"}`, `None` for
/// none. The one stored form for both stores.
pub fn variants_to_stored(variants: &[Variant]) -> Option<String> {
    if variants.is_empty() {
        return None;
    }
    serde_json::to_string(variants).ok()
}

/// Variants from their stored form; a value that does not parse (a row
/// edited by hand) reads as none, and entries past the limit or with a
/// zero weight are left out, so a read never fails on them.
pub fn variants_from_stored(text: Option<&str>) -> Vec<Variant> {
    let Some(Ok(mut v)) = text.map(serde_json::from_str::<Vec<Variant>>) else {
        return Vec::new();
    };
    v.retain(|x| x.weight > 0);
    v.truncate(MAX_VARIANTS);
    v
}

/// Country targets as stored: a JSON object of code to URL, `None` for
/// none. The one stored form for both stores.
pub fn country_targets_to_stored(targets: &CountryTargets) -> Option<String> {
    if targets.is_empty() {
        return None;
    }
    let map: serde_json::Map<String, serde_json::Value> = targets
        .iter()
        .map(|(c, url)| {
            (
                c.as_str().to_string(),
                serde_json::Value::String(url.clone()),
            )
        })
        .collect();
    Some(serde_json::Value::Object(map).to_string())
}

/// Country targets from their stored form; entries that do not make sense
/// (a code not assigned, a value not a string: a row edited by hand) are
/// left out, so a read never fails on them.
pub fn country_targets_from_stored(text: Option<&str>) -> CountryTargets {
    let Some(text) = text else {
        return Vec::new();
    };
    let Ok(serde_json::Value::Object(map)) = serde_json::from_str::<serde_json::Value>(text) else {
        return Vec::new();
    };
    let mut out: CountryTargets = map
        .into_iter()
        .filter_map(|(code, url)| match (Country::parse(&code), url) {
            (Ok(c), serde_json::Value::String(url)) => Some((c, url)),
            _ => None,
        })
        .collect();
    out.sort();
    out.dedup_by(|a, b| a.0 == b.0);
    out
}

/// Whether a link answers, and if not why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkState {
    /// Redirects.
    Active,
    /// Covered by a takedown in force (only its undo lifts it).
    TakenDown,
    /// Switched off by an operator.
    Disabled,
    /// Past its expiry.
    Expired,
    /// Reached its maximum number of visits.
    Exhausted,
}

impl LinkState {
    /// Stable name used in API replies.
    pub fn as_str(self) -> &'static str {
        match self {
            LinkState::Active => "active",
            LinkState::TakenDown => "taken_down",
            LinkState::Disabled => "disabled",
            LinkState::Expired => "expired",
            LinkState::Exhausted => "exhausted",
        }
    }
}

impl Link {
    /// State at `now` (Unix seconds).
    pub fn state(&self, now: i64) -> LinkState {
        if self.taken_down {
            LinkState::TakenDown
        } else if self.disabled {
            LinkState::Disabled
        } else if self.expires_at.is_some_and(|e| e <= now) {
            LinkState::Expired
        } else if self
            .max_visits
            .is_some_and(|m| self.clicks - self.bot_clicks >= m)
        {
            LinkState::Exhausted
        } else {
            LinkState::Active
        }
    }
}
