//! Webhooks: a team's subscriptions to link events, delivered as signed
//! JSON `POST`s from a durable outbox. The link writes queue deliveries in
//! their own transaction (`crate::store::WebhookStore`); [`dispatch`] claims
//! the due ones, sends them (`send`, signed by `signature`) with bounded
//! concurrency, and retries failures with exponential backoff for
//! `webhooks.give_up_after`. Nothing on the API or edge path waits for a
//! receiver. The API, the admin UI and the CLI all manage webhooks through
//! the functions here: admins add, delete and redeliver; whoever may read
//! a team's links may read its webhooks and their delivery log.

pub mod dispatch;
pub mod send;
pub mod signature;
pub mod wire;

use crate::access::Scope;
use crate::app::App;
use crate::auth::{AuthError, Principal};
use crate::checker::probe::is_private;
use crate::store::{Delivery, NewWebhook, StoreError, UnknownEvent, Webhook, WebhookEvent};
use crate::teams::{self, TeamError};
use crate::timestamp::unix_now;

/// Longest receiver URL, in bytes.
pub const MAX_URL: usize = 2048;
/// The seal context of webhook secrets (`app_secret::SecretSeal`).
const SEAL_CONTEXT: &str = "webhook";

/// Why a webhook operation was refused.
#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    /// The receiver URL is not an absolute http(s) URL with a host.
    #[error("url: {0}")]
    InvalidUrl(String),
    /// An event name is not one this daemon sends.
    #[error("events: {0}")]
    UnknownEvent(#[from] UnknownEvent),
    /// No event was named.
    #[error("events: at least one event is needed")]
    NoEvents,
    /// No webhook of this id (or not one the caller sees).
    #[error("no webhook {0}")]
    NotFound(i64),
    /// No delivery of this id for that webhook.
    #[error("no delivery {1} of webhook {0}")]
    NoDelivery(i64, i64),
    /// The team named is unknown.
    #[error(transparent)]
    Team(#[from] TeamError),
    /// The caller may not do this.
    #[error(transparent)]
    Denied(#[from] AuthError),
    /// The system gave no randomness for a secret.
    #[error("no randomness for a webhook secret: {0}")]
    NoRandom(String),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A webhook to add, as asked.
#[derive(Debug, Clone, Default)]
pub struct AddWebhook {
    pub url: String,
    /// Event names; `link.*` for every event.
    pub events: Vec<String>,
    /// The team's name; none: the caller's team.
    pub team: Option<String>,
}

/// Checks a receiver URL.
fn check_url(url: &str) -> Result<String, WebhookError> {
    let url = url.trim();
    if url.len() > MAX_URL {
        return Err(WebhookError::InvalidUrl(format!(
            "longer than {MAX_URL} bytes"
        )));
    }
    let parsed = url::Url::parse(url).map_err(|e| WebhookError::InvalidUrl(e.to_string()))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(WebhookError::InvalidUrl(format!(
            "scheme \"{}\" is not http or https",
            parsed.scheme()
        )));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(WebhookError::InvalidUrl("no host".into()));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(WebhookError::InvalidUrl(
            "credentials in the URL are not allowed".into(),
        ));
    }
    Ok(parsed.to_string())
}

/// How long adding a webhook waits for its receiver's name to resolve.
const RESOLVE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);

/// Refuses a receiver on a private, loopback or link-local address (in any
/// form: `127.0.0.1`, `[::ffff:127.0.0.1]`, a name that resolves there)
/// unless `webhooks.private` allows them: every delivery would be refused,
/// so the webhook is refused now. A name that does not resolve yet is let
/// through; each delivery checks the address it connects to again.
async fn check_receiver(url: &str, allow_private: bool) -> Result<(), WebhookError> {
    if allow_private {
        return Ok(());
    }
    let parsed = url::Url::parse(url).map_err(|e| WebhookError::InvalidUrl(e.to_string()))?;
    let port = parsed.port_or_known_default().unwrap_or(443);
    let addresses: Vec<std::net::IpAddr> = match parsed.host() {
        Some(url::Host::Ipv4(a)) => vec![a.into()],
        Some(url::Host::Ipv6(a)) => vec![a.into()],
        Some(url::Host::Domain(name)) => {
            let lookup = tokio::net::lookup_host((name, port));
            match tokio::time::timeout(RESOLVE_TIMEOUT, lookup).await {
                Ok(Ok(found)) => found.map(|a| a.ip()).collect(),
                _ => Vec::new(),
            }
        }
        None => Vec::new(),
    };
    match addresses.into_iter().find(|ip| is_private(*ip)) {
        Some(ip) => Err(WebhookError::InvalidUrl(format!(
            "the receiver is at {}, a private, loopback or link-local address; \
             webhooks go to public receivers (webhooks.private allows others)",
            ip.to_canonical()
        ))),
        None => Ok(()),
    }
}

/// Parses event names (comma-separated items allowed, `link.*` for all).
pub fn parse_events(names: &[String]) -> Result<Vec<WebhookEvent>, WebhookError> {
    let mut out = Vec::new();
    for name in names.iter().flat_map(|n| n.split(',')) {
        let name = name.trim();
        if name.is_empty() {
            continue;
        }
        if name == "link.*" {
            out.extend(WebhookEvent::ALL);
            continue;
        }
        out.push(WebhookEvent::parse(name)?);
    }
    if out.is_empty() {
        return Err(WebhookError::NoEvents);
    }
    out.sort_by_key(|e| WebhookEvent::ALL.iter().position(|x| x == e));
    out.dedup();
    Ok(out)
}

/// A new signing secret: `whsec_` and 64 hex digits.
fn new_secret() -> Result<String, WebhookError> {
    let mut bytes = [0u8; 32];
    getrandom::getrandom(&mut bytes).map_err(|e| WebhookError::NoRandom(e.to_string()))?;
    Ok(format!("whsec_{}", hex::encode(bytes)))
}

/// Adds a webhook; it and its secret in clear (shown this once).
pub async fn add(
    app: &App,
    by: &Principal,
    req: &AddWebhook,
) -> Result<(Webhook, String), WebhookError> {
    by.require(Scope::Admin)?;
    let url = check_url(&req.url)?;
    check_receiver(&url, app.config.webhooks.private).await?;
    let events = parse_events(&req.events)?;
    let team_id = match req.team.as_deref().map(str::trim) {
        Some(name) if !name.is_empty() => teams::find(app, name).await?.id,
        _ => by.team_id,
    };
    let secret = new_secret()?;
    let hook = app
        .store
        .add_webhook(NewWebhook {
            team_id,
            url,
            secret: app.secret_seal.seal(SEAL_CONTEXT, &secret),
            events,
            created_at: unix_now(),
            created_by: by.who.clone(),
        })
        .await?;
    tracing::info!(webhook = hook.id, team = team_id, url = %hook.url, by = %by.who, "webhook added");
    Ok((hook, secret))
}

/// The webhooks `by` sees: every team's for an admin, else their team's.
pub async fn list(app: &App, by: &Principal) -> Result<Vec<Webhook>, WebhookError> {
    by.require(Scope::LinksRead)?;
    Ok(app.store.webhooks(by.team_filter()).await?)
}

/// Webhook `id`, if `by` sees it.
pub async fn get(app: &App, by: &Principal, id: i64) -> Result<Webhook, WebhookError> {
    by.require(Scope::LinksRead)?;
    app.store
        .webhook(id)
        .await?
        .filter(|w| by.sees_team(w.team_id))
        .ok_or(WebhookError::NotFound(id))
}

/// Deletes webhook `id` and its delivery log.
pub async fn delete(app: &App, by: &Principal, id: i64) -> Result<(), WebhookError> {
    by.require(Scope::Admin)?;
    let hook = get(app, by, id).await?;
    if !app.store.delete_webhook(hook.id).await? {
        return Err(WebhookError::NotFound(id));
    }
    tracing::info!(webhook = id, by = %by.who, "webhook deleted");
    Ok(())
}

/// The delivery log of webhook `id`, newest first.
pub async fn deliveries(
    app: &App,
    by: &Principal,
    id: i64,
    before: Option<i64>,
    limit: u32,
) -> Result<Vec<Delivery>, WebhookError> {
    let hook = get(app, by, id).await?;
    Ok(app.store.deliveries(hook.id, before, limit).await?)
}

/// Sends delivery `delivery` of webhook `id` again (a new delivery, due
/// now).
pub async fn redeliver(
    app: &App,
    by: &Principal,
    id: i64,
    delivery: i64,
) -> Result<Delivery, WebhookError> {
    by.require(Scope::Admin)?;
    let hook = get(app, by, id).await?;
    let again = app
        .store
        .redeliver(hook.id, delivery, unix_now())
        .await?
        .ok_or(WebhookError::NoDelivery(id, delivery))?;
    tracing::info!(webhook = id, delivery, again = again.id, by = %by.who, "webhook delivery queued again");
    Ok(again)
}

/// The secret of a stored webhook, in clear (for signing).
pub fn open_secret(app: &App, sealed: &str) -> Result<String, String> {
    app.secret_seal
        .open(SEAL_CONTEXT, sealed)
        .map_err(|e| format!("cannot open the webhook's secret: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_events_are_checked() {
        assert_eq!(
            check_url(" https://hooks.example.com/in ").unwrap(),
            "https://hooks.example.com/in"
        );
        for (bad, why) in [
            ("ftp://x.example/", "scheme"),
            ("not a url", "relative URL"),
            ("https://u:p@x.example/", "credentials"),
        ] {
            let e = check_url(bad).unwrap_err().to_string();
            assert!(e.starts_with("url: ") && e.contains(why), "{bad}: {e}");
        }
        assert_eq!(
            parse_events(&["link.clicks, link.created".into()]).unwrap(),
            [WebhookEvent::Created, WebhookEvent::Clicks]
        );
        assert_eq!(parse_events(&["link.*".into()]).unwrap().len(), 7);
        assert!(matches!(parse_events(&[]), Err(WebhookError::NoEvents)));
        assert!(parse_events(&["link.moved".into()])
            .unwrap_err()
            .to_string()
            .contains("\"link.moved\""));
    }
}
