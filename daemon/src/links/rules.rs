//! The rules a link must pass, judged before any write is handed to the
//! writer thread: target URLs, aliases, expiry, visit limits, redirect
//! statuses, device targets and tags, and the defaults a create fills in.

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};
use shortlink_core::country::{Country, CountryTargets, MAX_COUNTRY_TARGETS};
use shortlink_core::ipc::DeviceTargets;
use shortlink_core::variants::{self, Variant};
use shortlink_core::{
    validate_alias, AliasError, CheckedTarget, Codec, RedirectStatus, TargetPolicy,
};

use super::blocked::BlockedHosts;
pub(crate) use super::input::MAX_TTL;
use super::input::{
    max_visits_range, CreateLink, RenewInput, TargetsInput, TimeInput, VariantInput,
};
pub use super::input::{MAX_TAGS, MAX_TAG_LEN};
use super::loops::{AliasTarget, ServedBases};
use crate::config::Config;
use crate::store::links::invalid;
use crate::store::{Link, LinkError};

/// What validation needs from the configuration and the key, built once at
/// startup, so requests are judged without the daemon's whole state.
#[derive(Debug, Clone)]
pub struct LinkRules {
    /// Tells aliases from generated codes (an alias may not decode as one).
    pub codec: Codec,
    /// What target URLs are accepted, host lists compiled once at start
    /// (every target is matched on its host's normal form).
    pub targets: TargetPolicy,
    /// Aliases refused by name (built-in plus configured).
    pub reserved: Vec<String>,
    /// Redirect status of links created without one.
    pub default_redirect: Option<u16>,
    /// Lifetime in seconds of links created without an expiry.
    pub default_ttl: Option<u64>,
    /// The bases short URLs are served under: no target may be one.
    pub served: ServedBases,
    /// The blocklist file's hosts, refused when `blocklist_disable` is on
    /// (the watcher keeps the set in force; empty otherwise).
    pub blocked: BlockedHosts,
    /// The hosts of the host takedowns in force: a new target on one is
    /// refused, so a takedown is not undone by linking the host again
    /// (`crate::takedown::refresh_hosts` keeps the set).
    pub taken_down: BlockedHosts,
}

/// A create request that passed validation.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The link to insert (its id is filled in at insert time).
    pub link: Link,
    /// Hash of the normalized URL and options, for `dedupe`.
    pub dedupe_hash: [u8; 32],
    /// Return an existing live link with the same hash instead of a new one.
    pub dedupe: bool,
    /// Targets that are short URLs if their alias exists: the write checks.
    pub alias_targets: Vec<AliasTarget>,
}

impl LinkRules {
    /// The rules of `config`, with `codec` made from the deployment key.
    pub fn new(config: &Config, codec: Codec) -> Self {
        Self {
            codec,
            targets: config.targets.policy().clone(),
            reserved: config.reserved(),
            default_redirect: config.default_redirect,
            default_ttl: config.default_ttl,
            served: ServedBases::new(&config.base_url),
            blocked: BlockedHosts::default(),
            taken_down: BlockedHosts::default(),
        }
    }

    /// Validates a create request and fills in the defaults.
    pub fn prepare(
        &self,
        req: &CreateLink,
        created_by: Option<&str>,
        now: i64,
    ) -> Result<Prepared, LinkError> {
        let mut alias_targets = Vec::new();
        let url = self.check_target("url", &req.url, &mut alias_targets)?;
        if let Some(alias) = &req.alias {
            self.check_alias(alias)?;
        }
        let ttl = req.ttl.map(|t| check_ttl("ttl", t)).transpose()?;
        let mut expires_at = match (&req.expires_at, ttl) {
            (Some(_), Some(_)) => return Err(both_expiries()),
            (Some(t), None) => Some(check_expires_at(t, now)?),
            (None, Some(ttl)) => Some(now + ttl),
            (None, None) => self.default_ttl.map(|t| now + t as i64),
        };
        let renew_ttl = match &req.renew_on_access {
            None | Some(RenewInput::Flag(false)) => None,
            Some(RenewInput::Flag(true)) => match expires_at {
                Some(e) => Some(e - now),
                None => return Err(renew_needs_lifetime()),
            },
            Some(RenewInput::Seconds(s)) => {
                let s = check_ttl("renew_on_access", *s)?;
                expires_at.get_or_insert(now + s);
                Some(s)
            }
        };
        let max_visits = req.max_visits.map(check_max_visits).transpose()?;
        let redirect = check_redirect(req.redirect)?.or(self.default_redirect);
        let targets = match &req.targets {
            Some(t) => self.check_targets(t, &mut alias_targets)?,
            None => DeviceTargets::default(),
        };
        let tags = check_tags(req.tags.as_deref().unwrap_or_default())?;
        let country_targets = match &req.country_targets {
            Some(t) => self.check_country_targets(t, &mut alias_targets)?,
            None => Vec::new(),
        };
        if let Some(p) = &req.password {
            p.check()?;
        }
        let variants = match &req.variants {
            Some(v) => self.check_variants(v, &mut alias_targets)?,
            None => Vec::new(),
        };
        let disabled = req.disabled.unwrap_or(false);
        let title = super::title::check_title(req.title.as_deref())?;
        let link = Link {
            id: 0,
            alias: req.alias.clone(),
            url,
            created_at: now,
            updated_at: now,
            expires_at,
            renew_ttl,
            max_visits,
            redirect,
            targets,
            disabled,
            tags,
            created_by: created_by.map(str::to_string),
            clicks: 0,
            bot_clicks: 0,
            forward_query: req.forward_query,
            country_targets,
            // Hashed by the caller (in the argon2 pool, off this task).
            password_hash: None,
            variants,
            // Set to the creator's team with the id (`ops::new_link`).
            team_id: crate::store::teams::DEFAULT_TEAM,
            broken: false,
            check: req.check,
            taken_down: false,
            title,
        };
        Ok(Prepared {
            dedupe_hash: dedupe_hash(req, &link),
            link,
            // Another link with the same URL has another password (or none).
            dedupe: req.dedupe.unwrap_or(false) && req.password.is_none(),
            alias_targets,
        })
    }

    /// What keeps `alias` from being one, if anything.
    pub(crate) fn alias_problem(&self, alias: &str) -> Option<AliasError> {
        validate_alias(&self.codec, alias, &self.reserved).err()
    }

    /// An alias a client asked for.
    pub(crate) fn check_alias(&self, alias: &str) -> Result<(), LinkError> {
        validate_alias(&self.codec, alias, &self.reserved).map_err(|e| match e {
            AliasError::Reserved(_) => invalid("alias", "alias_reserved", e.to_string()),
            _ => invalid("alias", "invalid_alias", e.to_string()),
        })
    }

    /// A target URL, normalized.
    pub(crate) fn check_url(&self, field: &'static str, raw: &str) -> Result<String, LinkError> {
        self.checked_url(field, raw).map(CheckedTarget::into_string)
    }

    /// [`LinkRules::check_url`], the URL kept parsed.
    fn checked_url(&self, field: &'static str, raw: &str) -> Result<CheckedTarget, LinkError> {
        let url = self
            .targets
            .check(raw)
            .map_err(|e| invalid(field, "invalid_url", format!("{field}: {e}")))?;
        if self.blocked.lists(&url.host) {
            let message = format!(
                "{field}: url host \"{}\" is on the blocklist of unsafe hosts",
                url.host.name
            );
            return Err(invalid(field, "invalid_url", message));
        }
        if self.taken_down.lists(&url.host) {
            let message = format!(
                "{field}: url host \"{}\" is taken down; an admin's undo of the takedown lifts it",
                url.host.name
            );
            return Err(invalid(field, "host_taken_down", message));
        }
        Ok(url)
    }

    /// A target: a URL under the rules that is no short URL of this
    /// deployment (those that may be, by alias, go into `aliases`).
    pub(crate) fn check_target(
        &self,
        field: &'static str,
        raw: &str,
        aliases: &mut Vec<AliasTarget>,
    ) -> Result<String, LinkError> {
        let url = self.checked_url(field, raw)?;
        self.served
            .check_not_short(&self.codec, field, &url, aliases)?;
        Ok(url.into_string())
    }

    /// Device targets, each under the rules of `url`.
    pub(crate) fn check_targets(
        &self,
        t: &TargetsInput,
        aliases: &mut Vec<AliasTarget>,
    ) -> Result<DeviceTargets, LinkError> {
        let mut one = |field, v: &Option<String>| -> Result<Option<String>, LinkError> {
            v.as_deref()
                .map(|u| self.check_target(field, u, aliases))
                .transpose()
        };
        Ok(DeviceTargets {
            desktop: one("targets.desktop", &t.desktop)?,
            mobile: one("targets.mobile", &t.mobile)?,
            ios: one("targets.ios", &t.ios)?,
            android: one("targets.android", &t.android)?,
        })
    }
}

impl LinkRules {
    /// Country targets: at most [`MAX_COUNTRY_TARGETS`], each code an
    /// assigned ISO 3166-1 alpha-2 code (lower case taken as upper case,
    /// one target per country), each URL under the rules of `url`; errors
    /// name the code. In code order.
    pub(crate) fn check_country_targets(
        &self,
        t: &BTreeMap<String, String>,
        aliases: &mut Vec<AliasTarget>,
    ) -> Result<CountryTargets, LinkError> {
        const FIELD: &str = "country_targets";
        if t.len() > MAX_COUNTRY_TARGETS {
            return Err(invalid(
                FIELD,
                "too_many_country_targets",
                format!(
                    "country_targets has {} entries, more than the maximum of {MAX_COUNTRY_TARGETS}",
                    t.len()
                ),
            ));
        }
        let mut out: CountryTargets = Vec::with_capacity(t.len());
        for (code, url) in t {
            let country = Country::parse(code)
                .map_err(|e| invalid(FIELD, "invalid_country", format!("country_targets: {e}")))?;
            if out.iter().any(|(c, _)| *c == country) {
                return Err(invalid(
                    FIELD,
                    "invalid_country",
                    format!(
                        "country_targets: {country} is given twice (codes are case-insensitive)"
                    ),
                ));
            }
            let url = self
                .check_target(FIELD, url, aliases)
                .map_err(|e| naming(e, &format!("the target for {country}")))?;
            out.push((country, url));
        }
        out.sort();
        Ok(out)
    }

    /// A/B variants: at most [`variants::MAX_VARIANTS`], each weight 1 to
    /// `MAX_WEIGHT`, each URL under the rules of `url`; errors name the
    /// variant (`variants[i]`). In the order given.
    pub(crate) fn check_variants(
        &self,
        v: &[VariantInput],
        aliases: &mut Vec<AliasTarget>,
    ) -> Result<Vec<Variant>, LinkError> {
        const FIELD: &str = "variants";
        let weights: Vec<u64> = v.iter().map(|x| x.weight).collect();
        variants::check(&weights).map_err(|e| match e {
            variants::VariantError::TooMany(_) => {
                invalid(FIELD, "too_many_variants", e.to_string())
            }
            variants::VariantError::BadWeight { .. } => {
                invalid(FIELD, "invalid_weight", e.to_string())
            }
        })?;
        let mut out = Vec::with_capacity(v.len());
        for (i, x) in v.iter().enumerate() {
            let url = self
                .check_target(FIELD, &x.url, aliases)
                .map_err(|e| naming(e, &format!("variants[{i}].url")))?;
            // The weight is at most MAX_WEIGHT (checked above).
            out.push(Variant {
                url,
                weight: x.weight as u32,
            });
        }
        Ok(out)
    }
}

/// The hash `dedupe` compares: the normalized URL and every option of a
/// prepared create.
fn dedupe_hash(req: &CreateLink, link: &Link) -> [u8; 32] {
    let mut sorted_tags: Vec<&str> = link.tags.iter().map(String::as_str).collect();
    sorted_tags.sort_unstable();
    let expiry_key = match (&req.expires_at, req.ttl) {
        (Some(_), _) => serde_json::json!(link.expires_at),
        (None, Some(t)) => serde_json::json!(format!("ttl:{t}")),
        (None, None) => serde_json::Value::Null,
    };
    let t = &link.targets;
    // The same bytes as the `json!([...]).to_string()` this hash was first
    // defined with (compact JSON of an array), without building a `Value`
    // tree per link: stored hashes stay comparable.
    let fields = (
        &link.url,
        &req.alias,
        &expiry_key,
        link.renew_ttl,
        link.max_visits,
        link.redirect,
        [&t.desktop, &t.mobile, &t.ios, &t.android],
        &sorted_tags,
        link.disabled,
    );
    // A link that leaves `forward_query` to the location and has no
    // country targets hashes as before those fields existed; one that sets
    // them hashes their values too.
    let countries: Vec<(&str, &str)> = link
        .country_targets
        .iter()
        .map(|(c, u)| (c.as_str(), u.as_str()))
        .collect();
    // Variants likewise: a link without them hashes as before.
    let canonical = match (link.forward_query, countries.is_empty(), &link.variants[..]) {
        (None, true, []) => serde_json::to_vec(&fields),
        (Some(f), true, []) => serde_json::to_vec(&(fields, f)),
        (f, false, []) => serde_json::to_vec(&(fields, f, countries)),
        (f, _, variants) => serde_json::to_vec(&(fields, f, countries, variants)),
    }
    .expect("plain values serialize");
    // A link's own checker choice likewise, after the JSON (which cannot
    // run on past its closing bracket).
    let mut hasher = Sha256::new();
    hasher.update(&canonical);
    if let Some(m) = link.check {
        hasher.update(b"|check=");
        hasher.update(m.as_str().as_bytes());
    }
    hasher.finalize().into()
}

/// `expires_at` and `ttl` given together.
pub(crate) fn both_expiries() -> LinkError {
    invalid(
        "ttl",
        "invalid_expiry",
        "give either expires_at or ttl, not both",
    )
}

/// `renew_on_access: true` on a link without a lifetime.
pub(crate) fn renew_needs_lifetime() -> LinkError {
    invalid(
        "renew_on_access",
        "invalid_expiry",
        "renew_on_access needs a lifetime: give ttl or expires_at, or a number of seconds",
    )
}

/// Tags: at most [`MAX_TAGS`] of 1 to [`MAX_TAG_LEN`] characters, trimmed,
/// without separators, duplicates dropped.
pub(crate) fn check_tags(tags: &[String]) -> Result<Vec<String>, LinkError> {
    if tags.len() > MAX_TAGS {
        return Err(invalid(
            "tags",
            "invalid_tags",
            format!("at most {MAX_TAGS} tags per link; got {}", tags.len()),
        ));
    }
    let mut out: Vec<String> = Vec::with_capacity(tags.len());
    for tag in tags {
        let tag = tag.trim();
        if tag.is_empty() || tag.chars().count() > MAX_TAG_LEN {
            return Err(invalid(
                "tags",
                "invalid_tags",
                format!("tags must be 1 to {MAX_TAG_LEN} characters; got {tag:?}"),
            ));
        }
        if tag
            .chars()
            .any(|c| c.is_control() || matches!(c, ',' | ';' | '|'))
        {
            return Err(invalid(
                "tags",
                "invalid_tags",
                format!("tag {tag:?} contains a control character or one of , ; |"),
            ));
        }
        if !out.iter().any(|t| t == tag) {
            out.push(tag.to_string());
        }
    }
    Ok(out)
}

/// A redirect status: one of [`RedirectStatus`], or none.
pub(crate) fn check_redirect(status: Option<u16>) -> Result<Option<u16>, LinkError> {
    match status.map(RedirectStatus::try_from) {
        Some(Err(e)) => Err(invalid("redirect", "invalid_redirect", e.to_string())),
        _ => Ok(status),
    }
}

/// A lifetime in seconds: 1 to [`MAX_TTL`].
pub(crate) fn check_ttl(field: &'static str, ttl: u64) -> Result<i64, LinkError> {
    if ttl == 0 || ttl > MAX_TTL {
        return Err(invalid(
            field,
            "invalid_expiry",
            format!("{field} must be between 1 and {MAX_TTL} seconds; got {ttl}"),
        ));
    }
    Ok(ttl as i64)
}

/// An expiry: in the future, at most [`MAX_TTL`] away.
pub(crate) fn check_expires_at(input: &TimeInput, now: i64) -> Result<i64, LinkError> {
    let t = input
        .to_unix()
        .map_err(|m| invalid("expires_at", "invalid_expiry", m))?;
    if t <= now {
        return Err(invalid(
            "expires_at",
            "invalid_expiry",
            format!("expires_at {t} is not in the future (now is {now})"),
        ));
    }
    if t - now > MAX_TTL as i64 {
        return Err(invalid(
            "expires_at",
            "invalid_expiry",
            "expires_at is more than 100 years away",
        ));
    }
    Ok(t)
}

/// A visit limit: 1 to [`super::MAX_VISITS`].
pub(crate) fn check_max_visits(v: u64) -> Result<i64, LinkError> {
    match i64::try_from(v) {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(invalid(
            "max_visits",
            "invalid_max_visits",
            max_visits_range(v),
        )),
    }
}

/// A refused target's error, its message saying which one (`which`).
fn naming(e: LinkError, which: &str) -> LinkError {
    match e {
        LinkError::Invalid {
            field,
            code,
            message,
        } => LinkError::Invalid {
            field,
            code,
            message: format!("{message} ({which})"),
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use shortlink_core::DeploymentKey;

    use super::*;

    fn rules() -> LinkRules {
        let codec = Codec::new(&DeploymentKey::from_bytes([7; 32]));
        LinkRules::new(&Config::default(), codec)
    }

    /// The dedupe hash is written without a `serde_json::Value` tree now; it
    /// must stay byte-for-byte what links already stored were hashed with.
    #[test]
    fn dedupe_hash_is_unchanged() {
        let req = CreateLink {
            url: "https://example.com/a?b=\"c\"".into(),
            alias: Some("x-y".into()),
            ttl: Some(3600),
            renew_on_access: Some(RenewInput::Flag(true)),
            max_visits: Some(5),
            redirect: Some(301),
            targets: Some(TargetsInput {
                ios: Some("https://example.com/ios".into()),
                ..TargetsInput::default()
            }),
            tags: Some(vec!["zeta".into(), "alpha".into()]),
            ..CreateLink::default()
        };
        let p = rules().prepare(&req, None, 1_000).unwrap();
        let l = &p.link;
        let mut sorted = l.tags.clone();
        sorted.sort();
        let old = serde_json::json!([
            l.url,
            req.alias,
            serde_json::Value::String("ttl:3600".into()),
            l.renew_ttl,
            l.max_visits,
            l.redirect,
            [
                &l.targets.desktop,
                &l.targets.mobile,
                &l.targets.ios,
                &l.targets.android
            ],
            sorted,
            l.disabled
        ]);
        let want: [u8; 32] = Sha256::digest(old.to_string().as_bytes()).into();
        assert_eq!(p.dedupe_hash, want);
    }

    #[test]
    fn defaults_fill_in_and_fields_are_named() {
        let mut rules = rules();
        rules.default_ttl = Some(60);
        rules.default_redirect = Some(307);
        let req = CreateLink {
            url: "https://example.com/".into(),
            ..CreateLink::default()
        };
        let l = rules.prepare(&req, Some("cli"), 1_000).unwrap().link;
        assert_eq!(
            (l.expires_at, l.redirect, l.created_by.as_deref()),
            (Some(1_060), Some(307), Some("cli"))
        );
        let field = |req: CreateLink| match rules.prepare(&req, None, 1_000) {
            Err(LinkError::Invalid { field, code, .. }) => (field, code),
            other => panic!("{other:?}"),
        };
        let base = || CreateLink {
            url: "https://example.com/".into(),
            ..CreateLink::default()
        };
        assert_eq!(
            field(CreateLink {
                url: "ftp://x/".into(),
                ..base()
            }),
            ("url", "invalid_url")
        );
        assert_eq!(
            field(CreateLink {
                alias: Some("admin".into()),
                ..base()
            }),
            ("alias", "alias_reserved")
        );
        assert_eq!(
            field(CreateLink {
                ttl: Some(5),
                expires_at: Some(TimeInput::Unix(2_000)),
                ..base()
            }),
            ("ttl", "invalid_expiry")
        );
        assert_eq!(
            field(CreateLink {
                targets: Some(TargetsInput {
                    android: Some("javascript:x".into()),
                    ..TargetsInput::default()
                }),
                ..base()
            }),
            ("targets.android", "invalid_url")
        );
        assert_eq!(
            field(CreateLink {
                tags: Some(vec!["a,b".into()]),
                ..base()
            }),
            ("tags", "invalid_tags")
        );
    }
}
