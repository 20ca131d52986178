//! [`WebhookStore`] over PostgreSQL, as on SQLite
//! (`crate::store::sqlite::webhooks`). Several nodes send from one outbox: a claim
//! takes due rows with `FOR UPDATE SKIP LOCKED` and leases them
//! (`claimed_until`), so a row being claimed by one node is skipped by the
//! others, and a claimed row is not due again until its lease ends (a node
//! that died mid-send). A sweep locks its mark row first, so one node at
//! a time queues expiries and click summaries.

mod sweep;

use async_trait::async_trait;
use deadpool_postgres::GenericClient;
use tokio_postgres::Row;

use super::rows::{bigint, columns, failed, from_row};
use super::PgStore;
use crate::store::{
    events_from_stored, events_to_stored, link_payload, Attempt, Delivery, DeliveryStatus,
    DueDelivery, FairShare, Link, NewWebhook, StoreResult, Swept, Webhook, WebhookEvent,
    WebhookStore,
};
use sweep::sweep;

const WEBHOOK_COLUMNS: &str = "id, team_id, url, secret, events, active, created_at, created_by";

fn webhook_row(r: &Row) -> Webhook {
    Webhook {
        id: r.get(0),
        team_id: r.get(1),
        url: r.get(2),
        secret: r.get(3),
        events: events_from_stored(r.get(4)),
        active: r.get(5),
        created_at: r.get(6),
        created_by: r.get(7),
    }
}

const DELIVERY_COLUMNS: &str = "d.id, d.webhook_id, d.event, d.link_id, d.payload, d.status, \
     d.attempts, d.next_attempt_at, d.last_status, d.last_error, d.created_at, d.delivered_at, \
     d.redelivery_of";

fn delivery_row(r: &Row) -> Delivery {
    Delivery {
        id: r.get(0),
        webhook_id: r.get(1),
        event: r.get(2),
        link_id: r.get::<_, Option<i64>>(3).map(|id| id as u64),
        payload: r.get(4),
        status: DeliveryStatus::from_stored(r.get(5)),
        attempts: r.get::<_, i32>(6) as u32,
        next_attempt_at: r.get(7),
        last_status: r.get::<_, Option<i32>>(8).map(|s| s as u16),
        last_error: r.get(9),
        created_at: r.get(10),
        delivered_at: r.get(11),
        redelivery_of: r.get(12),
    }
}

pub(super) async fn enqueue(
    c: &impl GenericClient,
    webhook_id: i64,
    event: &str,
    link_id: Option<u64>,
    payload: &str,
    now: i64,
    redelivery_of: Option<i64>,
) -> StoreResult<i64> {
    let link_id = link_id.map(bigint).transpose()?;
    let st = c
        .prepare_cached(
            "INSERT INTO webhook_deliveries (webhook_id, event, link_id, payload, \
             next_attempt_at, created_at, redelivery_of) VALUES ($1, $2, $3, $4, $5, $5, $6) \
             RETURNING id",
        )
        .await
        .map_err(failed("preparing a webhook delivery"))?;
    Ok(c.query_one(
        &st,
        &[
            &webhook_id,
            &event,
            &link_id,
            &payload,
            &now,
            &redelivery_of,
        ],
    )
    .await
    .map_err(failed("queuing a webhook delivery"))?
    .get(0))
}

/// The active webhooks of `team` subscribed to `event`.
pub(super) async fn subscribed(
    c: &impl GenericClient,
    team: i64,
    event: WebhookEvent,
) -> StoreResult<Vec<i64>> {
    let st = c
        .prepare_cached(
            "SELECT id FROM webhooks WHERE team_id = $1 AND active \
             AND (',' || events || ',') LIKE $2 ORDER BY id",
        )
        .await
        .map_err(failed("preparing a webhook subscription read"))?;
    Ok(c.query(&st, &[&team, &event.pattern()])
        .await
        .map_err(failed("reading webhook subscriptions"))?
        .iter()
        .map(|r| r.get(0))
        .collect())
}

/// The teams with an active webhook subscribed to `event` (none, usually):
/// a bulk write queues deliveries for its links of these teams alone.
pub(super) async fn subscribed_teams(
    c: &impl GenericClient,
    event: WebhookEvent,
) -> StoreResult<Vec<i64>> {
    let st = c
        .prepare_cached(
            "SELECT DISTINCT team_id FROM webhooks WHERE active \
             AND (',' || events || ',') LIKE $1",
        )
        .await
        .map_err(failed("preparing a webhook team read"))?;
    Ok(c.query(&st, &[&event.pattern()])
        .await
        .map_err(failed("reading the teams of webhooks"))?
        .iter()
        .map(|r| r.get(0))
        .collect())
}

/// Queues `event` of `link` for every webhook of its team subscribed to
/// it, in the caller's transaction.
pub(super) async fn link_event(
    c: &impl GenericClient,
    event: WebhookEvent,
    link: &Link,
    now: i64,
) -> StoreResult<()> {
    let hooks = subscribed(c, link.team_id, event).await?;
    if hooks.is_empty() {
        return Ok(());
    }
    let payload = link_payload(link);
    for hook in hooks {
        enqueue(c, hook, event.as_str(), Some(link.id), &payload, now, None).await?;
    }
    Ok(())
}

/// [`link_event`] for the links `ids` as stored now: one read picks those
/// whose team subscribes (none, usually).
pub(super) async fn link_events(
    c: &impl GenericClient,
    event: WebhookEvent,
    ids: &[u64],
    now: i64,
) -> StoreResult<()> {
    if ids.is_empty() {
        return Ok(());
    }
    let ids: Vec<i64> = ids
        .iter()
        .map(|&id| bigint(id))
        .collect::<StoreResult<_>>()?;
    let st = c
        .prepare_cached(concat!(
            "SELECT ",
            columns!(),
            " FROM links WHERE id = ANY($1) AND team_id IN (SELECT team_id FROM webhooks \
             WHERE active AND (',' || events || ',') LIKE $2) ORDER BY id"
        ))
        .await
        .map_err(failed("preparing the links of webhook events"))?;
    let rows = c
        .query(&st, &[&ids, &event.pattern()])
        .await
        .map_err(failed("reading the links of webhook events"))?;
    for row in &rows {
        link_event(c, event, &from_row(row)?, now).await?;
    }
    Ok(())
}

async fn delivery(c: &impl GenericClient, id: i64) -> StoreResult<Option<Delivery>> {
    Ok(c.query_opt(
        &format!("SELECT {DELIVERY_COLUMNS} FROM webhook_deliveries d WHERE d.id = $1"),
        &[&id],
    )
    .await
    .map_err(failed("reading a webhook delivery"))?
    .as_ref()
    .map(delivery_row))
}

#[async_trait]
impl WebhookStore for PgStore {
    async fn add_webhook(&self, w: NewWebhook) -> StoreResult<Webhook> {
        let mut client = self.pg().get().await?;
        let tx = client
            .transaction()
            .await
            .map_err(failed("starting to add a webhook"))?;
        // The first webhook moves the sweep marks to its creation (no sweep
        // ran while there was none). Locked so two first webhooks agree.
        tx.execute("LOCK TABLE webhooks IN SHARE ROW EXCLUSIVE MODE", &[])
            .await
            .map_err(failed("locking the webhooks"))?;
        tx.execute(
            "UPDATE webhook_sweeps SET at = GREATEST(at, $1) \
             WHERE NOT EXISTS (SELECT 1 FROM webhooks WHERE active)",
            &[&w.created_at],
        )
        .await
        .map_err(failed("moving the webhook sweep marks"))?;
        let row = tx
            .query_one(
                &format!(
                    "INSERT INTO webhooks (team_id, url, secret, events, created_at, created_by) \
                     VALUES ($1, $2, $3, $4, $5, $6) RETURNING {WEBHOOK_COLUMNS}"
                ),
                &[
                    &w.team_id,
                    &w.url,
                    &w.secret,
                    &events_to_stored(&w.events),
                    &w.created_at,
                    &w.created_by,
                ],
            )
            .await
            .map_err(failed("adding a webhook"))?;
        if w.events.contains(&WebhookEvent::Clicks) {
            // As on SQLite: a new subscription reports clicks from now on.
            tx.execute(
                "INSERT INTO webhook_click_marks (link_id, clicks, bot_clicks) \
                 SELECT id, clicks, bot_clicks FROM links WHERE team_id = $1 \
                 ON CONFLICT (link_id) DO NOTHING",
                &[&w.team_id],
            )
            .await
            .map_err(failed("marking the team's clicks for a new webhook"))?;
        }
        tx.commit()
            .await
            .map_err(failed("committing a new webhook"))?;
        Ok(webhook_row(&row))
    }

    async fn webhooks(&self, team: Option<i64>) -> StoreResult<Vec<Webhook>> {
        let c = self.pg().get().await?;
        let rows = c
            .query(
                &format!(
                    "SELECT {WEBHOOK_COLUMNS} FROM webhooks \
                     WHERE $1::bigint IS NULL OR team_id = $1 ORDER BY id"
                ),
                &[&team],
            )
            .await
            .map_err(failed("listing webhooks"))?;
        Ok(rows.iter().map(webhook_row).collect())
    }

    async fn webhook(&self, id: i64) -> StoreResult<Option<Webhook>> {
        let c = self.pg().get().await?;
        let row = c
            .query_opt(
                &format!("SELECT {WEBHOOK_COLUMNS} FROM webhooks WHERE id = $1"),
                &[&id],
            )
            .await
            .map_err(failed("reading a webhook"))?;
        Ok(row.as_ref().map(webhook_row))
    }

    async fn delete_webhook(&self, id: i64) -> StoreResult<bool> {
        let c = self.pg().get().await?;
        // Its deliveries go with it (ON DELETE CASCADE).
        let n = c
            .execute("DELETE FROM webhooks WHERE id = $1", &[&id])
            .await
            .map_err(failed("deleting a webhook"))?;
        Ok(n > 0)
    }

    async fn deliveries(
        &self,
        webhook_id: i64,
        before: Option<i64>,
        limit: u32,
    ) -> StoreResult<Vec<Delivery>> {
        let c = self.pg().get().await?;
        let rows = c
            .query(
                &format!(
                    "SELECT {DELIVERY_COLUMNS} FROM webhook_deliveries d WHERE d.webhook_id = $1 \
                     AND ($2::bigint IS NULL OR d.id < $2) ORDER BY d.id DESC LIMIT $3"
                ),
                &[&webhook_id, &before, &i64::from(limit)],
            )
            .await
            .map_err(failed("listing webhook deliveries"))?;
        Ok(rows.iter().map(delivery_row).collect())
    }

    async fn redeliver(&self, webhook_id: i64, id: i64, now: i64) -> StoreResult<Option<Delivery>> {
        let c = self.pg().get().await?;
        let Some(old) = delivery(&c, id)
            .await?
            .filter(|d| d.webhook_id == webhook_id)
        else {
            return Ok(None);
        };
        let new = enqueue(
            &c,
            webhook_id,
            &old.event,
            old.link_id,
            &old.payload,
            now,
            Some(old.id),
        )
        .await?;
        delivery(&c, new).await
    }

    async fn claim_deliveries(
        &self,
        now: i64,
        until: i64,
        limit: u32,
        share: FairShare,
    ) -> StoreResult<Vec<DueDelivery>> {
        let c = self.pg().get().await?;
        let (teams, flying): (Vec<i64>, Vec<i64>) = share
            .in_flight
            .iter()
            .map(|&(t, n)| (t, i64::from(n)))
            .unzip();
        // Ranked by fair share (window functions cannot lock rows): the
        // update locks the rows it takes, and a row another node claimed
        // meanwhile fails the recheck of claimed_until under that lock.
        let rows = c
            .query(
                &format!(
                    "WITH due AS ( \
                         SELECT x.id, x.next_attempt_at, y.team_id, \
                             row_number() OVER (PARTITION BY y.team_id \
                                 ORDER BY x.next_attempt_at, x.id) AS rn \
                         FROM webhook_deliveries x JOIN webhooks y ON y.id = x.webhook_id \
                         WHERE x.status = 'pending' AND x.next_attempt_at <= $1 \
                         AND x.claimed_until <= $1 AND y.active), \
                     flying AS ( \
                         SELECT * FROM unnest($4::bigint[], $5::bigint[]) AS f(team, n)), \
                     ranked AS ( \
                         SELECT due.id, due.next_attempt_at, \
                             due.rn + coalesce(flying.n, 0) AS place \
                         FROM due LEFT JOIN flying ON flying.team = due.team_id), \
                     picked AS ( \
                         SELECT id FROM ranked WHERE place <= $6 \
                         ORDER BY place, next_attempt_at, id LIMIT $3) \
                     UPDATE webhook_deliveries d SET claimed_until = $2 FROM webhooks w \
                     WHERE w.id = d.webhook_id AND d.id IN (SELECT id FROM picked) \
                     AND d.claimed_until <= $1 AND d.status = 'pending' \
                     RETURNING {DELIVERY_COLUMNS}, w.url, w.secret, w.team_id"
                ),
                &[
                    &now,
                    &until,
                    &i64::from(limit),
                    &teams,
                    &flying,
                    &i64::from(share.cap),
                ],
            )
            .await
            .map_err(failed("claiming webhook deliveries"))?;
        let mut out: Vec<DueDelivery> = rows
            .iter()
            .map(|r| DueDelivery {
                delivery: delivery_row(r),
                url: r.get(13),
                secret: r.get(14),
                team_id: r.get(15),
            })
            .collect();
        out.sort_by_key(|d| d.delivery.id);
        Ok(out)
    }

    async fn record_attempt(&self, id: i64, at: i64, attempt: Attempt) -> StoreResult<()> {
        let c = self.pg().get().await?;
        match attempt {
            Attempt::Delivered { status } => c
                .execute(
                    "UPDATE webhook_deliveries SET status = 'delivered', \
                     attempts = attempts + 1, last_status = $2, \
                     delivered_at = $3, claimed_until = 0 WHERE id = $1",
                    &[&id, &i32::from(status), &at],
                )
                .await
                .map_err(failed("recording a webhook delivery"))?,
            Attempt::Failed {
                status,
                error,
                retry_at,
            } => c
                .execute(
                    "UPDATE webhook_deliveries SET attempts = attempts + 1, last_status = $2, \
                     last_error = $3, \
                     status = CASE WHEN $4::bigint IS NULL THEN 'failed' ELSE 'pending' END, \
                     next_attempt_at = coalesce($4, next_attempt_at), claimed_until = 0 \
                     WHERE id = $1",
                    &[&id, &status.map(i32::from), &error, &retry_at],
                )
                .await
                .map_err(failed("recording a failed webhook delivery"))?,
        };
        Ok(())
    }

    async fn sweep_webhook_events(&self, now: i64, summary_every: i64) -> StoreResult<Swept> {
        let mut client = self.pg().get().await?;
        let any: bool = client
            .query_one("SELECT EXISTS (SELECT 1 FROM webhooks WHERE active)", &[])
            .await
            .map_err(failed("looking for webhooks"))?
            .get(0);
        if !any {
            // Nothing to look for (the marks move when the first is added).
            return Ok(Swept::default());
        }
        let tx = client
            .transaction()
            .await
            .map_err(failed("starting a webhook sweep"))?;
        let swept = sweep(&tx, now, summary_every).await?;
        tx.commit()
            .await
            .map_err(failed("committing a webhook sweep"))?;
        Ok(swept)
    }
}
