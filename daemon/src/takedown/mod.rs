//! Takedown at scale: every link to a host (and its subdomains), or every
//! link made by one key, app or user, switched off in one call, with an
//! audit record (who, when, why) and an undo; and the links a changed
//! allow/block list refuses, switched off at start-up (`config.rs`).
//!
//! The store does the switch in one transaction and logs each link's
//! change, so it reaches this node's workers through [`crate::edge::Edge`]
//! before the call answers, and every other node's through the shared
//! change log (PostgreSQL).

pub mod blocklist;
mod config;

pub use config::apply_target_rules;

use std::sync::Arc;

use shortlink_core::{HostSet, NormalHost};

use crate::access::Scope;
use crate::app::App;
use crate::auth::{AuthError, Principal};
use crate::edge::LinkChange;
use crate::store::{ChangedLink, Matcher, NewTakedown, StoreError, Takedown, TakedownLink, Undone};
use crate::timestamp::unix_now;

/// Longest reason, in bytes.
pub const MAX_REASON: usize = 1000;
/// Most takedowns one list answers.
pub const MAX_LIST: u32 = 1000;

/// What to take down.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// Every link whose target is on this host or a subdomain of it.
    Host(String),
    /// Every link made by this principal: `key:<id>`, `app:<app id>`,
    /// `user:<name>` or `cli`.
    Creator(String),
}

/// Why a takedown or its undo was refused.
#[derive(Debug, thiserror::Error)]
pub enum TakedownError {
    /// The host is not a host name or address.
    #[error("host: {0}")]
    BadHost(String),
    /// The creator is not one a link can have.
    #[error("creator \"{0}\" is not key:<id>, app:<app id>, user:<name> or cli")]
    BadCreator(String),
    /// The reason is empty or too long.
    #[error("reason: give why, in 1 to {MAX_REASON} bytes")]
    BadReason,
    /// No takedown has that id.
    #[error("no takedown {0}")]
    NotFound(i64),
    /// The takedown was undone before.
    #[error("takedown {0} was undone already")]
    AlreadyUndone(i64),
    /// The caller is not an admin.
    #[error(transparent)]
    Denied(#[from] AuthError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The links `target` covers, and how the record names it.
fn matcher(target: &Target) -> Result<(&'static str, String, Matcher), TakedownError> {
    match target {
        Target::Host(text) => {
            let host =
                NormalHost::parse(text).map_err(|e| TakedownError::BadHost(e.to_string()))?;
            let name = host.name.clone();
            // A name is in the stored URL as it is (the URL parser wrote
            // both), an address may not be: `[::ffff:a00:1]` for 10.0.0.1.
            let contains = host.is_domain.then(|| name.clone());
            let mut set = HostSet::default();
            set.insert(host);
            let test = Arc::new(move |url: &str| set.matches_url(url));
            Ok(("host", name, Matcher::Urls { contains, test }))
        }
        Target::Creator(who) => {
            let valid = who == "cli"
                || ["key:", "app:", "user:"]
                    .iter()
                    .any(|p| who.strip_prefix(p).is_some_and(|rest| !rest.is_empty()))
                    && who.len() <= 200
                    && !who.chars().any(char::is_control);
            if !valid {
                return Err(TakedownError::BadCreator(who.clone()));
            }
            Ok(("creator", who.clone(), Matcher::Creator(who.clone())))
        }
    }
}

fn check_reason(reason: &str) -> Result<String, TakedownError> {
    let reason = reason.trim();
    if reason.is_empty() || reason.len() > MAX_REASON {
        return Err(TakedownError::BadReason);
    }
    Ok(reason.to_string())
}

/// Tells the edge (this node's workers, and its cache) that `links`
/// were switched on or off.
async fn tell_edge(app: &App, links: &[ChangedLink]) {
    app.edge()
        .links_changed(
            links
                .iter()
                .map(|(id, alias)| LinkChange::in_place(*id, alias.as_deref())),
        )
        .await;
}

/// How often the hosts taken down are read again: another node's
/// takedown refuses new links to its host here within this.
pub const REFRESH_HOSTS_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// Puts the hosts of the host takedowns in force into the link rules.
pub async fn refresh_hosts(app: &App) -> Result<(), StoreError> {
    let hosts = app.store.taken_down_hosts().await?;
    let set = HostSet::parse(&hosts).unwrap_or_else(|e| {
        tracing::warn!(error = %e, "a stored takedown host does not parse; it is left out");
        let mut set = HostSet::default();
        for h in hosts.iter().filter_map(|h| NormalHost::parse(h).ok()) {
            set.insert(h);
        }
        set
    });
    let set = (!set.is_empty()).then(|| Arc::new(set));
    app.rules.taken_down.set(set);
    Ok(())
}

/// Keeps the hosts taken down current until `token` is cancelled: read at
/// start and every [`REFRESH_HOSTS_EVERY`] (this node's own takedowns
/// refresh them at once).
pub async fn keep_hosts_current(
    app: crate::app::SharedApp,
    token: tokio_util::sync::CancellationToken,
) {
    let mut tick = tokio::time::interval(REFRESH_HOSTS_EVERY);
    let mut refreshing = crate::outage_log::OutageLog::new("read the hosts taken down");
    loop {
        tokio::select! {
            _ = token.cancelled() => return,
            _ = tick.tick() => {}
        }
        refreshing.record(refresh_hosts(&app).await);
    }
}

/// Switches off every link `target` covers, for `reason`; answers the
/// record once every worker of this node has dropped them.
pub async fn take_down(
    app: &App,
    p: &Principal,
    target: &Target,
    reason: &str,
) -> Result<Takedown, TakedownError> {
    p.require(Scope::Admin)?;
    let (kind, selector, matcher) = matcher(target)?;
    let reason = check_reason(reason)?;
    let done = app
        .store
        .take_down(NewTakedown {
            kind,
            selector,
            reason,
            by: p.who.clone(),
            at: unix_now(),
            matcher,
            switch_off: true,
            once: false,
            unless_first: false,
        })
        .await?
        .ok_or_else(|| StoreError::NotFound("the takedown just recorded".into()))?;
    tell_edge(app, &done.changed).await;
    if let Err(e) = refresh_hosts(app).await {
        tracing::warn!(error = %e, "cannot read the hosts taken down");
    }
    let t = &done.record;
    tracing::warn!(
        takedown = t.id, kind = %t.kind, selector = %t.selector, by = %t.created_by,
        reason = %t.reason, matched = t.matched, disabled = t.disabled,
        "takedown: links switched off"
    );
    Ok(done.record)
}

/// Undoes takedown `id`: switches back on the links it switched off that
/// no other takedown in force covers.
pub async fn undo(app: &App, p: &Principal, id: i64) -> Result<Takedown, TakedownError> {
    p.require(Scope::Admin)?;
    match app
        .store
        .undo_takedown(id, p.who.clone(), unix_now())
        .await?
    {
        Undone::NotFound => Err(TakedownError::NotFound(id)),
        Undone::Already(_) => Err(TakedownError::AlreadyUndone(id)),
        Undone::Done { record, changed } => {
            tell_edge(app, &changed).await;
            if let Err(e) = refresh_hosts(app).await {
                tracing::warn!(error = %e, "cannot read the hosts taken down");
            }
            tracing::warn!(
                takedown = record.id, by = %p.who, restored = changed.len(),
                "takedown undone: links switched back on"
            );
            Ok(record)
        }
    }
}

/// The newest takedowns first.
pub async fn list(app: &App, p: &Principal, limit: u32) -> Result<Vec<Takedown>, TakedownError> {
    p.require(Scope::Admin)?;
    Ok(app.store.takedowns(limit.clamp(1, MAX_LIST)).await?)
}

/// One takedown.
pub async fn get(app: &App, p: &Principal, id: i64) -> Result<Takedown, TakedownError> {
    p.require(Scope::Admin)?;
    app.store
        .takedown(id)
        .await?
        .ok_or(TakedownError::NotFound(id))
}

/// The links takedown `id` matched, by link id after `after`.
pub async fn links(
    app: &App,
    p: &Principal,
    id: i64,
    after: u64,
    limit: u32,
) -> Result<Vec<TakedownLink>, TakedownError> {
    get(app, p, id).await?;
    Ok(app
        .store
        .takedown_links(id, after, limit.clamp(1, MAX_LIST))
        .await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn test_of(target: &Target) -> Arc<dyn Fn(&str) -> bool + Send + Sync> {
        match matcher(target).unwrap().2 {
            Matcher::Urls { test, .. } => test,
            Matcher::Creator(_) => panic!("a host makes a URL matcher"),
        }
    }

    #[test]
    fn a_host_covers_its_subdomains_and_nothing_else() {
        let t = test_of(&Target::Host("Evil.COM.".into()));
        assert!(t("https://evil.com/x"));
        assert!(t("http://a.b.evil.com:8080/"));
        assert!(!t("https://notevil.com/"));
        assert!(!t("https://evil.com.example/"));
        assert!(!t("https://example.com/?u=evil.com"));
        let (_, selector, m) = matcher(&Target::Host("*.Evil.com".into())).unwrap();
        assert_eq!(selector, "evil.com");
        assert!(matches!(m, Matcher::Urls { contains: Some(c), .. } if c == "evil.com"));
    }

    /// An address is matched in every form the URL can carry it, with no
    /// text prefilter that its mapped form would slip past.
    #[test]
    fn an_address_covers_its_mapped_form() {
        let (_, selector, m) = matcher(&Target::Host("127.0.0.1".into())).unwrap();
        assert_eq!(selector, "127.0.0.1");
        assert!(matches!(&m, Matcher::Urls { contains: None, .. }), "{m:?}");
        let t = test_of(&Target::Host("127.0.0.1".into()));
        assert!(t("http://127.0.0.1/"));
        assert!(t("http://[::ffff:127.0.0.1]/"));
        assert!(t("http://[::ffff:7f00:1]:8080/x"));
        assert!(!t("http://127.0.0.2/"));
        for entry in ["::1", "[::1]", "0:0::1"] {
            let t = test_of(&Target::Host(entry.into()));
            assert!(t("http://[::1]/"), "{entry}");
            assert!(!t("http://[::2]/"), "{entry}");
        }
    }

    #[test]
    fn bad_hosts_creators_and_reasons_are_named() {
        let e = matcher(&Target::Host("evil.com/path".into())).unwrap_err();
        assert!(e.to_string().contains("evil.com/path"), "{e}");
        for bad in ["", "key:", "bob", "user:\n"] {
            let e = matcher(&Target::Creator(bad.into())).unwrap_err();
            assert!(matches!(e, TakedownError::BadCreator(_)), "{bad:?}");
        }
        for good in ["cli", "key:3", "user:alice", "app:app_x"] {
            assert!(matcher(&Target::Creator(good.into())).is_ok(), "{good}");
        }
        assert!(check_reason("  ").is_err());
        assert!(check_reason(&"x".repeat(MAX_REASON + 1)).is_err());
        assert_eq!(check_reason(" phishing ").unwrap(), "phishing");
    }
}
