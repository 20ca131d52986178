//! Webhooks: subscriptions of a team to link events, and the outbox of
//! their deliveries. Link writes add deliveries in their own transaction
//! (only for a team subscribed to the event); the dispatcher
//! (`crate::webhooks`) claims due rows, sends them and records each
//! attempt.

use async_trait::async_trait;
use serde::Serialize;

use crate::store::{Link, StoreResult};

/// Seconds a delivered or given-up delivery stays in the log (30 days).
pub const KEEP_LOG: i64 = 30 * 86_400;

/// What a webhook can subscribe to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WebhookEvent {
    /// A link was created.
    Created,
    /// A link was edited (and not switched off by the edit).
    Updated,
    /// A link was deleted.
    Deleted,
    /// A link was switched off (an edit or a takedown).
    Disabled,
    /// A link's expiry passed.
    Expired,
    /// A link reached its maximum number of visits.
    Exhausted,
    /// A link's clicks over one summary interval.
    Clicks,
}

/// Why an event name was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown event \"{0}\" (known: link.created, link.updated, link.deleted, link.disabled, link.expired, link.exhausted, link.clicks)")]
pub struct UnknownEvent(pub String);

impl WebhookEvent {
    /// Every event, in the order lists show them.
    pub const ALL: [WebhookEvent; 7] = [
        WebhookEvent::Created,
        WebhookEvent::Updated,
        WebhookEvent::Deleted,
        WebhookEvent::Disabled,
        WebhookEvent::Expired,
        WebhookEvent::Exhausted,
        WebhookEvent::Clicks,
    ];

    /// Wire name, as in requests, payloads and the database.
    pub fn as_str(self) -> &'static str {
        match self {
            WebhookEvent::Created => "link.created",
            WebhookEvent::Updated => "link.updated",
            WebhookEvent::Deleted => "link.deleted",
            WebhookEvent::Disabled => "link.disabled",
            WebhookEvent::Expired => "link.expired",
            WebhookEvent::Exhausted => "link.exhausted",
            WebhookEvent::Clicks => "link.clicks",
        }
    }

    /// Parses a wire name (surrounding blanks ignored).
    pub fn parse(s: &str) -> Result<Self, UnknownEvent> {
        Self::ALL
            .into_iter()
            .find(|e| e.as_str() == s.trim())
            .ok_or_else(|| UnknownEvent(s.trim().to_string()))
    }

    /// A `LIKE` pattern matching a stored event list (`,` around it) that
    /// holds this event.
    pub fn pattern(self) -> String {
        format!("%,{},%", self.as_str())
    }

    /// The event an edit from `old` to `new` reports.
    pub fn of_edit(old: &Link, new: &Link) -> Self {
        if new.disabled && !old.disabled {
            WebhookEvent::Disabled
        } else {
            WebhookEvent::Updated
        }
    }
}

/// Events as stored: comma-separated, in [`WebhookEvent::ALL`] order.
pub fn events_to_stored(events: &[WebhookEvent]) -> String {
    WebhookEvent::ALL
        .into_iter()
        .filter(|e| events.contains(e))
        .map(WebhookEvent::as_str)
        .collect::<Vec<_>>()
        .join(",")
}

/// Events from their stored form; names this build does not know are left
/// out.
pub fn events_from_stored(s: &str) -> Vec<WebhookEvent> {
    s.split(',')
        .filter_map(|e| WebhookEvent::parse(e).ok())
        .collect()
}

/// A link as a delivery describes it (its code is added when it is sent:
/// the store does not hold the codec).
#[derive(Debug, Serialize)]
struct LinkPayload<'a> {
    id: u64,
    alias: Option<&'a str>,
    url: &'a str,
    team_id: i64,
    created_at: i64,
    updated_at: i64,
    expires_at: Option<i64>,
    max_visits: Option<i64>,
    disabled: bool,
    clicks: i64,
    bot_clicks: i64,
    tags: &'a [String],
    created_by: Option<&'a str>,
}

/// The stored payload of a link event: `{"link": {...}}`.
pub fn link_payload(link: &Link) -> String {
    let l = LinkPayload {
        id: link.id,
        alias: link.alias.as_deref(),
        url: &link.url,
        team_id: link.team_id,
        created_at: link.created_at,
        updated_at: link.updated_at,
        expires_at: link.expires_at,
        max_visits: link.max_visits,
        disabled: link.disabled,
        clicks: link.clicks,
        bot_clicks: link.bot_clicks,
        tags: &link.tags,
        created_by: link.created_by.as_deref(),
    };
    serde_json::json!({ "link": l }).to_string()
}

/// One link's clicks over a summary interval, as read by a sweep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClickCount {
    pub link_id: u64,
    pub team_id: i64,
    pub alias: Option<String>,
    pub url: String,
    /// Totals now.
    pub clicks: i64,
    pub bot_clicks: i64,
    /// Totals at the last summary (0 for none).
    pub clicks_before: i64,
    pub bot_clicks_before: i64,
}

/// The stored payload of a click summary over `[from, to)`.
pub fn clicks_payload(c: &ClickCount, from: i64, to: i64) -> String {
    serde_json::json!({
        "link": {
            "id": c.link_id,
            "alias": c.alias,
            "url": c.url,
            "team_id": c.team_id,
            "clicks": c.clicks,
            "bot_clicks": c.bot_clicks,
        },
        "from": from,
        "to": to,
        "clicks": c.clicks - c.clicks_before,
        "bot_clicks": c.bot_clicks - c.bot_clicks_before,
    })
    .to_string()
}

/// A webhook as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Webhook {
    pub id: i64,
    pub team_id: i64,
    /// Where deliveries are POSTed.
    pub url: String,
    /// The signing secret, sealed (never shown after creation).
    pub secret: String,
    pub events: Vec<WebhookEvent>,
    pub active: bool,
    pub created_at: i64,
    pub created_by: Option<String>,
}

/// A webhook to add.
#[derive(Debug, Clone)]
pub struct NewWebhook {
    pub team_id: i64,
    pub url: String,
    /// Sealed already.
    pub secret: String,
    pub events: Vec<WebhookEvent>,
    pub created_at: i64,
    pub created_by: String,
}

/// Where a delivery stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeliveryStatus {
    /// Not delivered yet: due at `next_attempt_at`.
    Pending,
    /// A 2xx answer came.
    Delivered,
    /// Given up (retried for `webhooks.give_up_after`).
    Failed,
}

impl DeliveryStatus {
    /// Stored and wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryStatus::Pending => "pending",
            DeliveryStatus::Delivered => "delivered",
            DeliveryStatus::Failed => "failed",
        }
    }

    /// From the stored name; anything else reads as pending.
    pub fn from_stored(s: &str) -> Self {
        match s {
            "delivered" => DeliveryStatus::Delivered,
            "failed" => DeliveryStatus::Failed,
            _ => DeliveryStatus::Pending,
        }
    }
}

/// One row of the outbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    pub id: i64,
    pub webhook_id: i64,
    /// The event's wire name.
    pub event: String,
    pub link_id: Option<u64>,
    /// JSON, as written with the change.
    pub payload: String,
    pub status: DeliveryStatus,
    pub attempts: u32,
    pub next_attempt_at: i64,
    /// The last answer's status, if one came.
    pub last_status: Option<u16>,
    /// Why the latest failed attempt failed (kept once delivered).
    pub last_error: Option<String>,
    /// When the event happened (Unix seconds).
    pub created_at: i64,
    pub delivered_at: Option<i64>,
    /// The delivery this one sends again.
    pub redelivery_of: Option<i64>,
}

/// A claimed delivery and where to send it.
#[derive(Debug, Clone)]
pub struct DueDelivery {
    pub delivery: Delivery,
    /// The webhook's team (what its fair share counts).
    pub team_id: i64,
    pub url: String,
    /// Sealed.
    pub secret: String,
}

/// How many deliveries one team may have in flight, and how many each
/// team has: one team's slow or hanging receivers hold at most `cap` of
/// the senders, so every other team's deliveries still go out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FairShare {
    pub cap: u32,
    /// `(team, deliveries in flight)` of the teams with any.
    pub in_flight: Vec<(i64, u32)>,
}

impl FairShare {
    /// No cap (tests and single claims).
    pub fn unlimited() -> Self {
        FairShare {
            cap: u32::MAX,
            in_flight: Vec::new(),
        }
    }
}

/// What one attempt found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attempt {
    /// A 2xx answer.
    Delivered { status: u16 },
    /// Anything else; retried at `retry_at`, or given up when `None`.
    Failed {
        status: Option<u16>,
        error: String,
        retry_at: Option<i64>,
    },
}

/// What a sweep of the time-driven events queued.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Swept {
    /// Deliveries of expired links.
    pub expired: u64,
    /// Deliveries of click summaries.
    pub summaries: u64,
}

/// Webhooks and their outbox.
#[async_trait]
pub trait WebhookStore: Send + Sync {
    /// Adds a webhook.
    async fn add_webhook(&self, w: NewWebhook) -> StoreResult<Webhook>;

    /// The webhooks of team `team` (every team for `None`), by id.
    async fn webhooks(&self, team: Option<i64>) -> StoreResult<Vec<Webhook>>;

    /// One webhook.
    async fn webhook(&self, id: i64) -> StoreResult<Option<Webhook>>;

    /// Deletes a webhook and its deliveries; whether it existed.
    async fn delete_webhook(&self, id: i64) -> StoreResult<bool>;

    /// Deliveries of webhook `webhook_id`, newest first, with ids below
    /// `before` (all for `None`), at most `limit`.
    async fn deliveries(
        &self,
        webhook_id: i64,
        before: Option<i64>,
        limit: u32,
    ) -> StoreResult<Vec<Delivery>>;

    /// Queues delivery `id` of webhook `webhook_id` again, as a new
    /// delivery due at `now`; the new one (`None`: no such delivery).
    async fn redeliver(&self, webhook_id: i64, id: i64, now: i64) -> StoreResult<Option<Delivery>>;

    /// Claims up to `limit` pending deliveries due at `now` (of active
    /// webhooks, not claimed by anyone) until `until`, by fair share: no
    /// team gets more than `share.cap` in flight (counting
    /// `share.in_flight`), and the team with the fewest in flight goes
    /// first, then the oldest. Rows another node has just claimed are
    /// skipped.
    async fn claim_deliveries(
        &self,
        now: i64,
        until: i64,
        limit: u32,
        share: FairShare,
    ) -> StoreResult<Vec<DueDelivery>>;

    /// Records an attempt of delivery `id` at `at` and ends its claim.
    async fn record_attempt(&self, id: i64, at: i64, attempt: Attempt) -> StoreResult<()>;

    /// In one transaction (one node at a time): queues `link.expired` for
    /// the links whose expiry passed since the last sweep, and, when
    /// `summary_every` seconds have passed since the last summary, one
    /// `link.clicks` per link clicked since.
    async fn sweep_webhook_events(&self, now: i64, summary_every: i64) -> StoreResult<Swept>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_parse_and_round_trip_through_their_stored_form() {
        assert_eq!(
            WebhookEvent::parse(" link.clicks "),
            Ok(WebhookEvent::Clicks)
        );
        assert!(WebhookEvent::parse("link.moved")
            .unwrap_err()
            .to_string()
            .contains("link.moved"));
        let some = [WebhookEvent::Clicks, WebhookEvent::Created];
        let stored = events_to_stored(&some);
        assert_eq!(stored, "link.created,link.clicks");
        assert_eq!(
            events_from_stored(&stored),
            [WebhookEvent::Created, WebhookEvent::Clicks]
        );
        assert_eq!(WebhookEvent::Created.pattern(), "%,link.created,%");
        let old = Link::default();
        let off = Link {
            disabled: true,
            ..Link::default()
        };
        assert_eq!(WebhookEvent::of_edit(&old, &off), WebhookEvent::Disabled);
        assert_eq!(WebhookEvent::of_edit(&off, &off), WebhookEvent::Updated);
    }
}
