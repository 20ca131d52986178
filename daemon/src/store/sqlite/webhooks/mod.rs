//! The `webhooks` tables on SQLite: subscriptions, the outbox of
//! deliveries (written in the transaction of the change it reports), and
//! the sweep of the time-driven events (expiry, click summaries) in
//! `sweep.rs`.

use std::collections::hash_map::Entry;
use std::collections::HashMap;

use rusqlite::{params, Connection, OptionalExtension, Row};

mod sweep;

pub use sweep::sweep;

use super::links;
use crate::store::{
    events_from_stored, events_to_stored, link_payload, Attempt, Delivery, DeliveryStatus,
    DueDelivery, FairShare, Link, NewWebhook, StoreResult, Webhook, WebhookEvent,
};

/// The columns [`webhook_row`] reads.
const WEBHOOK_COLUMNS: &str = "id, team_id, url, secret, events, active, created_at, created_by";

fn webhook_row(r: &Row<'_>) -> rusqlite::Result<Webhook> {
    Ok(Webhook {
        id: r.get(0)?,
        team_id: r.get(1)?,
        url: r.get(2)?,
        secret: r.get(3)?,
        events: events_from_stored(&r.get::<_, String>(4)?),
        active: r.get(5)?,
        created_at: r.get(6)?,
        created_by: r.get(7)?,
    })
}

/// The columns [`delivery_row`] reads, `d` being `webhook_deliveries`.
const DELIVERY_COLUMNS: &str = "d.id, d.webhook_id, d.event, d.link_id, d.payload, d.status, \
     d.attempts, d.next_attempt_at, d.last_status, d.last_error, d.created_at, d.delivered_at, \
     d.redelivery_of";

fn delivery_row(r: &Row<'_>) -> rusqlite::Result<Delivery> {
    Ok(Delivery {
        id: r.get(0)?,
        webhook_id: r.get(1)?,
        event: r.get(2)?,
        link_id: r.get::<_, Option<i64>>(3)?.map(|id| id as u64),
        payload: r.get(4)?,
        status: DeliveryStatus::from_stored(&r.get::<_, String>(5)?),
        attempts: r.get::<_, i64>(6)? as u32,
        next_attempt_at: r.get(7)?,
        last_status: r.get::<_, Option<i64>>(8)?.map(|s| s as u16),
        last_error: r.get(9)?,
        created_at: r.get(10)?,
        delivered_at: r.get(11)?,
        redelivery_of: r.get(12)?,
    })
}

/// Whether any webhook is active.
pub fn any_active(conn: &Connection) -> StoreResult<bool> {
    Ok(conn
        .prepare_cached("SELECT EXISTS (SELECT 1 FROM webhooks WHERE active)")?
        .query_row([], |r| r.get(0))?)
}

/// Whether a pending delivery is due at `now` and unclaimed.
pub fn any_due(conn: &Connection, now: i64) -> StoreResult<bool> {
    Ok(conn
        .prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM webhook_deliveries WHERE status = 'pending' \
             AND next_attempt_at <= ?1 AND claimed_until <= ?1)",
        )?
        .query_row([now], |r| r.get(0))?)
}

/// Adds a webhook. The first one moves the sweep marks to its creation:
/// no sweep ran while there was none, and what expired before is not
/// reported.
pub fn insert(conn: &Connection, w: &NewWebhook) -> StoreResult<Webhook> {
    if !any_active(conn)? {
        conn.prepare_cached("UPDATE webhook_sweeps SET at = max(at, ?1)")?
            .execute([w.created_at])?;
    }
    let id: i64 = conn
        .prepare_cached(
            "INSERT INTO webhooks (team_id, url, secret, events, created_at, created_by) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6) RETURNING id",
        )?
        .query_row(
            params![
                w.team_id,
                w.url,
                w.secret,
                events_to_stored(&w.events),
                w.created_at,
                w.created_by
            ],
            |r| r.get(0),
        )?;
    if w.events.contains(&WebhookEvent::Clicks) {
        seed_click_marks(conn, w.team_id)?;
    }
    Ok(by_id(conn, id)?.unwrap_or_else(|| unreachable!("inserted in this transaction")))
}

/// Marks the clicks the team's links have now as summarised already, so a
/// new `link.clicks` subscription reports clicks from now on (a link with
/// a mark keeps it: another webhook of the team reports from there).
fn seed_click_marks(conn: &Connection, team: i64) -> StoreResult<()> {
    conn.prepare_cached(
        "INSERT INTO webhook_click_marks (link_id, clicks, bot_clicks) \
         SELECT id, clicks, bot_clicks FROM links WHERE team_id = ?1 \
         ON CONFLICT (link_id) DO NOTHING",
    )?
    .execute([team])?;
    Ok(())
}

/// One webhook.
pub fn by_id(conn: &Connection, id: i64) -> StoreResult<Option<Webhook>> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {WEBHOOK_COLUMNS} FROM webhooks WHERE id = ?1"
        ))?
        .query_row([id], webhook_row)
        .optional()?)
}

/// The webhooks of `team` (all for `None`), by id.
pub fn list(conn: &Connection, team: Option<i64>) -> StoreResult<Vec<Webhook>> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {WEBHOOK_COLUMNS} FROM webhooks WHERE ?1 IS NULL OR team_id = ?1 ORDER BY id"
        ))?
        .query_map([team], webhook_row)?
        .collect::<rusqlite::Result<_>>()?)
}

/// Deletes a webhook and its deliveries; whether it existed.
pub fn delete(conn: &Connection, id: i64) -> StoreResult<bool> {
    conn.prepare_cached("DELETE FROM webhook_deliveries WHERE webhook_id = ?1")?
        .execute([id])?;
    Ok(conn
        .prepare_cached("DELETE FROM webhooks WHERE id = ?1")?
        .execute([id])?
        > 0)
}

/// Queues one delivery due at `now`; its id.
pub(super) fn enqueue(
    conn: &Connection,
    webhook_id: i64,
    event: &str,
    link_id: Option<u64>,
    payload: &str,
    now: i64,
    redelivery_of: Option<i64>,
) -> StoreResult<i64> {
    Ok(conn
        .prepare_cached(
            "INSERT INTO webhook_deliveries (webhook_id, event, link_id, payload, \
             next_attempt_at, created_at, redelivery_of) VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?6) \
             RETURNING id",
        )?
        .query_row(
            params![
                webhook_id,
                event,
                link_id.map(|id| id as i64),
                payload,
                now,
                redelivery_of
            ],
            |r| r.get(0),
        )?)
}

/// The webhooks of a team subscribed to an event (`?2`, its wire name).
/// `instr`, not `LIKE ?2`: SQLite compiles a statement with a bound `LIKE`
/// pattern again at every new binding (the pattern might allow an index),
/// which cost every create a parse and a query plan.
const SUBSCRIBED: &str = "SELECT id FROM webhooks WHERE team_id = ?1 AND active \
     AND instr(',' || events || ',', ',' || ?2 || ',') > 0 ORDER BY id";

/// Whether a webhook of link `?1`'s team is subscribed to event `?2` (see
/// [`SUBSCRIBED`]).
const ANY_SUBSCRIBED: &str = "SELECT EXISTS (SELECT 1 FROM links l \
     JOIN webhooks w ON w.team_id = l.team_id \
     WHERE l.id = ?1 AND w.active AND instr(',' || w.events || ',', ',' || ?2 || ',') > 0)";

/// The active webhooks of `team` subscribed to `event`: one indexed read,
/// all a write pays when nobody listens.
pub(super) fn subscribed(
    conn: &Connection,
    team: i64,
    event: WebhookEvent,
) -> StoreResult<Vec<i64>> {
    Ok(conn
        .prepare_cached(SUBSCRIBED)?
        .query_map(params![team, event.as_str()], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?)
}

/// Queues `event` of `link` for every webhook of its team subscribed to
/// it, in the caller's transaction.
pub fn link_event(
    conn: &Connection,
    event: WebhookEvent,
    link: &Link,
    now: i64,
) -> StoreResult<()> {
    let hooks = subscribed(conn, link.team_id, event)?;
    queue_link_event(conn, &hooks, event, link, now)
}

/// [`link_event`] for the many links of one job (a batch, an import
/// chunk): each team's subscriptions are read once, not once per link.
/// Only for one transaction on the writer, where no webhook can change
/// between two links.
#[derive(Default)]
pub struct Listeners(HashMap<(i64, WebhookEvent), Vec<i64>, foldhash::fast::RandomState>);

impl Listeners {
    pub fn link_event(
        &mut self,
        conn: &Connection,
        event: WebhookEvent,
        link: &Link,
        now: i64,
    ) -> StoreResult<()> {
        let hooks = match self.0.entry((link.team_id, event)) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => e.insert(subscribed(conn, link.team_id, event)?),
        };
        queue_link_event(conn, hooks, event, link, now)
    }
}

fn queue_link_event(
    conn: &Connection,
    hooks: &[i64],
    event: WebhookEvent,
    link: &Link,
    now: i64,
) -> StoreResult<()> {
    if hooks.is_empty() {
        return Ok(());
    }
    let payload = link_payload(link);
    for &hook in hooks {
        enqueue(
            conn,
            hook,
            event.as_str(),
            Some(link.id),
            &payload,
            now,
            None,
        )?;
    }
    Ok(())
}

/// [`link_event`] for link `id` as stored now (nothing for none).
pub fn link_event_by_id(
    conn: &Connection,
    event: WebhookEvent,
    id: u64,
    now: i64,
) -> StoreResult<()> {
    let any: bool = conn
        .prepare_cached(ANY_SUBSCRIBED)?
        .query_row(params![id as i64, event.as_str()], |r| r.get(0))?;
    if !any {
        return Ok(());
    }
    match links::by_id(conn, id)? {
        Some(link) => link_event(conn, event, &link, now),
        None => Ok(()),
    }
}

/// Deliveries of a webhook, newest first.
pub fn deliveries(
    conn: &Connection,
    webhook_id: i64,
    before: Option<i64>,
    limit: u32,
) -> StoreResult<Vec<Delivery>> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {DELIVERY_COLUMNS} FROM webhook_deliveries d \
             WHERE d.webhook_id = ?1 AND (?2 IS NULL OR d.id < ?2) ORDER BY d.id DESC LIMIT ?3"
        ))?
        .query_map(params![webhook_id, before, limit], delivery_row)?
        .collect::<rusqlite::Result<_>>()?)
}

fn delivery(conn: &Connection, id: i64) -> StoreResult<Option<Delivery>> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {DELIVERY_COLUMNS} FROM webhook_deliveries d WHERE d.id = ?1"
        ))?
        .query_row([id], delivery_row)
        .optional()?)
}

/// Queues delivery `id` of `webhook_id` again as a new delivery.
pub fn redeliver(
    conn: &Connection,
    webhook_id: i64,
    id: i64,
    now: i64,
) -> StoreResult<Option<Delivery>> {
    let Some(old) = delivery(conn, id)?.filter(|d| d.webhook_id == webhook_id) else {
        return Ok(None);
    };
    let new = enqueue(
        conn,
        webhook_id,
        &old.event,
        old.link_id,
        &old.payload,
        now,
        Some(old.id),
    )?;
    delivery(conn, new)
}

/// Claims due deliveries until `until`, by `share`
/// ([`crate::store::WebhookStore::claim_deliveries`]).
pub fn claim(
    conn: &Connection,
    now: i64,
    until: i64,
    limit: u32,
    share: &FairShare,
) -> StoreResult<Vec<DueDelivery>> {
    // `[[team, in flight], ...]` for json_each.
    let in_flight = serde_json::to_string(&share.in_flight)
        .map_err(|e| crate::store::StoreError::Corrupt(e.to_string()))?;
    let ids: Vec<i64> = conn
        .prepare_cached(
            "WITH due AS ( \
                 SELECT d.id, d.next_attempt_at, w.team_id, \
                     row_number() OVER (PARTITION BY w.team_id \
                         ORDER BY d.next_attempt_at, d.id) AS rn \
                 FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id \
                 WHERE d.status = 'pending' AND d.next_attempt_at <= ?1 \
                 AND d.claimed_until <= ?1 AND w.active), \
             flying AS ( \
                 SELECT json_extract(value, '$[0]') AS team, json_extract(value, '$[1]') AS n \
                 FROM json_each(?4)), \
             ranked AS ( \
                 SELECT due.id, due.next_attempt_at, \
                     due.rn + coalesce(flying.n, 0) AS place \
                 FROM due LEFT JOIN flying ON flying.team = due.team_id) \
             UPDATE webhook_deliveries SET claimed_until = ?2 WHERE id IN ( \
                 SELECT id FROM ranked WHERE place <= ?5 \
                 ORDER BY place, next_attempt_at, id LIMIT ?3) \
             RETURNING id",
        )?
        .query_map(
            params![now, until, limit, in_flight, i64::from(share.cap)],
            |r| r.get(0),
        )?
        .collect::<rusqlite::Result<_>>()?;
    let mut st = conn.prepare_cached(&format!(
        "SELECT {DELIVERY_COLUMNS}, w.url, w.secret, w.team_id FROM webhook_deliveries d \
         JOIN webhooks w ON w.id = d.webhook_id WHERE d.id = ?1"
    ))?;
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        out.push(st.query_row([id], |r| {
            Ok(DueDelivery {
                delivery: delivery_row(r)?,
                url: r.get(13)?,
                secret: r.get(14)?,
                team_id: r.get(15)?,
            })
        })?);
    }
    out.sort_by_key(|d| d.delivery.id);
    Ok(out)
}

/// Records one attempt and ends the claim.
pub fn record(conn: &Connection, id: i64, at: i64, attempt: &Attempt) -> StoreResult<()> {
    match attempt {
        Attempt::Delivered { status } => conn
            .prepare_cached(
                "UPDATE webhook_deliveries SET status = 'delivered', attempts = attempts + 1, \
                 last_status = ?2, delivered_at = ?3, claimed_until = 0 \
                 WHERE id = ?1",
            )?
            .execute(params![id, status, at])?,
        Attempt::Failed {
            status,
            error,
            retry_at,
        } => conn
            .prepare_cached(
                "UPDATE webhook_deliveries SET attempts = attempts + 1, last_status = ?2, \
                 last_error = ?3, status = CASE WHEN ?4 IS NULL THEN 'failed' ELSE 'pending' END, \
                 next_attempt_at = coalesce(?4, next_attempt_at), claimed_until = 0 \
                 WHERE id = ?1",
            )?
            .execute(params![id, status, error, retry_at])?,
    };
    Ok(())
}

#[cfg(test)]
mod tests;
