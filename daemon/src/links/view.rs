//! A link as the API shows it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use shortlink_core::check_mode::CheckMode;
use shortlink_core::Codec;
use utoipa::ToSchema;

use super::input::{TargetsInput, VariantInput};
use crate::codes;
use crate::store::Link;
use crate::timestamp::{unix_now, Timestamp};

/// A link as the API shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct LinkView {
    /// The alias if set, else the generated code.
    pub code: String,
    /// Public short URL built from `X-Shortlink-Base` or the configured base.
    pub short_url: String,
    /// Target URL (normalized).
    pub url: String,
    /// Numeric id; the cursor of list pages.
    pub id: u64,
    /// The generated code; reaches the link even when it has an alias.
    pub generated_code: String,
    /// Custom alias, if any.
    pub alias: Option<String>,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it was last edited.
    pub updated_at: Timestamp,
    /// When the link is gone; absent: never.
    pub expires_at: Option<Timestamp>,
    /// Renew-on-access lifetime in seconds.
    pub renew_ttl: Option<i64>,
    /// Human visits after which the link is gone.
    pub max_visits: Option<i64>,
    /// Redirect status; absent: the edge's default.
    pub redirect: Option<u16>,
    /// Device-specific targets.
    pub targets: TargetsInput,
    /// Switched off by its owner (or an operator).
    pub disabled: bool,
    /// Covered by a takedown in force: gone whatever `disabled` says; only
    /// an admin's undo of the takedown lifts it.
    pub taken_down: bool,
    /// The link checker found the target failing `checker.fallback_after`
    /// probes in a row: the edge sends visitors to the fallback until it
    /// recovers.
    pub broken: bool,
    /// Free-form labels.
    pub tags: Vec<String>,
    /// `active`, `taken_down`, `disabled`, `expired` or `exhausted`.
    pub state: String,
    /// All clicks, bots included.
    pub clicks: i64,
    /// The bot share of `clicks`.
    pub bot_clicks: i64,
    /// Who created it (`key:3`, `app:name`, `user:alice`, `cli`).
    pub created_by: Option<String>,
    /// The team it belongs to (its creator's): only that team and admins
    /// see it.
    #[serde(default)]
    pub team_id: i64,
    /// The link's own choice to append the visit's query string to the
    /// target; absent: the location's `shortlink_forward_query` decides.
    #[serde(default)]
    pub forward_query: Option<bool>,
    /// Targets per visitor country (ISO 3166-1 alpha-2 code to URL),
    /// chosen at the edge before the device targets; `{}` for none.
    #[serde(default)]
    pub country_targets: BTreeMap<String, String>,
    /// Visitors must give a password before the redirect (the password
    /// itself is never shown).
    #[serde(default)]
    pub protected: bool,
    /// A/B variants (URL and weight), which replace `url` at the edge;
    /// `[]` for none.
    #[serde(default)]
    pub variants: Vec<VariantInput>,
    /// The link's own choice about the link checker (`off`, `report`,
    /// `fallback`); absent: the site's `[checker]` settings decide.
    #[serde(default)]
    #[schema(schema_with = super::input::check_schema)]
    pub check: Option<CheckMode>,
    /// The link's title; `null` for none.
    #[serde(default)]
    pub title: Option<String>,
}

impl LinkView {
    /// The public short URL of `code` under `base` (no trailing slash).
    pub fn short_url(base: &str, code: &str) -> String {
        format!("{base}/{code}")
    }

    /// The view of `link` with short URLs under `base` (no trailing slash).
    pub fn new(codec: &Codec, link: &Link, base: &str) -> Self {
        let code = codes::public(codec, link);
        Self {
            short_url: Self::short_url(base, &code),
            code,
            url: link.url.clone(),
            id: link.id,
            generated_code: codes::generated(codec, link),
            alias: link.alias.clone(),
            created_at: link.created_at.into(),
            updated_at: link.updated_at.into(),
            expires_at: link.expires_at.map(Timestamp),
            renew_ttl: link.renew_ttl,
            max_visits: link.max_visits,
            redirect: link.redirect,
            targets: TargetsInput {
                desktop: link.targets.desktop.clone(),
                mobile: link.targets.mobile.clone(),
                ios: link.targets.ios.clone(),
                android: link.targets.android.clone(),
            },
            disabled: link.disabled,
            taken_down: link.taken_down,
            broken: link.broken,
            tags: link.tags.clone(),
            state: link.state(unix_now()).as_str().into(),
            clicks: link.clicks,
            bot_clicks: link.bot_clicks,
            created_by: link.created_by.clone(),
            team_id: link.team_id,
            forward_query: link.forward_query,
            country_targets: link
                .country_targets
                .iter()
                .map(|(c, u)| (c.as_str().to_string(), u.clone()))
                .collect(),
            protected: link.password_hash.is_some(),
            variants: link
                .variants
                .iter()
                .map(|v| VariantInput {
                    url: v.url.clone(),
                    weight: u64::from(v.weight),
                })
                .collect(),
            check: link.check,
            title: link.title.clone(),
        }
    }
}
