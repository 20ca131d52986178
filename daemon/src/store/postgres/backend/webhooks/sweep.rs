//! The sweep of the time-driven webhook events on PostgreSQL, as on
//! SQLite (`crate::store::sqlite::webhooks::sweep`), in the caller's transaction.
//! Each mark row is locked (`FOR UPDATE`) before it is read, so the nodes
//! sweep one after another and each expiry and interval is queued once.

use deadpool_postgres::GenericClient;

use super::super::rows::{columns, failed, from_row};
use super::{enqueue, link_event, subscribed};
use crate::store::webhooks::KEEP_LOG;
use crate::store::{clicks_payload, ClickCount, StoreResult, Swept, WebhookEvent};

async fn sweep_mark(c: &impl GenericClient, name: &str) -> StoreResult<i64> {
    // Locked until the sweep commits: the other nodes' sweeps wait, then
    // read the mark this one moved.
    Ok(c.query_opt(
        "SELECT at FROM webhook_sweeps WHERE name = $1 FOR UPDATE",
        &[&name],
    )
    .await
    .map_err(failed("locking a webhook sweep"))?
    .map_or(0, |r| r.get(0)))
}

async fn set_sweep_mark(c: &impl GenericClient, name: &str, at: i64) -> StoreResult<()> {
    c.execute(
        "INSERT INTO webhook_sweeps (name, at) VALUES ($1, $2) \
         ON CONFLICT (name) DO UPDATE SET at = excluded.at",
        &[&name, &at],
    )
    .await
    .map_err(failed("moving a webhook sweep's mark"))?;
    Ok(())
}

pub(super) async fn sweep(
    c: &impl GenericClient,
    now: i64,
    summary_every: i64,
) -> StoreResult<Swept> {
    let mut swept = Swept::default();
    let since = sweep_mark(c, "expired").await?;
    if now > since {
        let rows = c
            .query(
                concat!(
                    "SELECT ",
                    columns!(),
                    " FROM links WHERE expires_at > $1 AND expires_at <= $2 \
                     AND team_id IN (SELECT team_id FROM webhooks WHERE active \
                         AND (',' || events || ',') LIKE $3) ORDER BY id"
                ),
                &[&since, &now, &WebhookEvent::Expired.pattern()],
            )
            .await
            .map_err(failed("reading expired links for webhooks"))?;
        for row in &rows {
            let link = from_row(row)?;
            swept.expired += subscribed(c, link.team_id, WebhookEvent::Expired)
                .await?
                .len() as u64;
            link_event(c, WebhookEvent::Expired, &link, now).await?;
        }
        set_sweep_mark(c, "expired", now).await?;
    }
    let last = sweep_mark(c, "clicks").await?;
    if now - last < summary_every {
        return Ok(swept);
    }
    let rows = c
        .query(
            "SELECT l.id, l.team_id, l.alias, l.url, l.clicks, l.bot_clicks, \
             coalesce(m.clicks, 0), coalesce(m.bot_clicks, 0) \
             FROM links l LEFT JOIN webhook_click_marks m ON m.link_id = l.id \
             WHERE l.clicks > coalesce(m.clicks, 0) \
             AND l.team_id IN (SELECT team_id FROM webhooks WHERE active \
                 AND (',' || events || ',') LIKE $1) ORDER BY l.id",
            &[&WebhookEvent::Clicks.pattern()],
        )
        .await
        .map_err(failed("reading clicked links for webhooks"))?;
    for r in &rows {
        let count = ClickCount {
            link_id: r.get::<_, i64>(0) as u64,
            team_id: r.get(1),
            alias: r.get(2),
            url: r.get(3),
            clicks: r.get(4),
            bot_clicks: r.get(5),
            clicks_before: r.get(6),
            bot_clicks_before: r.get(7),
        };
        let payload = clicks_payload(&count, last, now);
        for hook in subscribed(c, count.team_id, WebhookEvent::Clicks).await? {
            let event = WebhookEvent::Clicks.as_str();
            enqueue(c, hook, event, Some(count.link_id), &payload, now, None).await?;
            swept.summaries += 1;
        }
        c.execute(
            "INSERT INTO webhook_click_marks (link_id, clicks, bot_clicks) VALUES ($1, $2, $3) \
             ON CONFLICT (link_id) DO UPDATE SET clicks = excluded.clicks, \
             bot_clicks = excluded.bot_clicks",
            &[&(count.link_id as i64), &count.clicks, &count.bot_clicks],
        )
        .await
        .map_err(failed("marking a link's summarised clicks"))?;
    }
    set_sweep_mark(c, "clicks", now).await?;
    // As on SQLite: marks of deleted links, and deliveries done longer ago
    // than the log keeps them.
    c.execute(
        "DELETE FROM webhook_click_marks m WHERE NOT EXISTS \
         (SELECT 1 FROM links l WHERE l.id = m.link_id)",
        &[],
    )
    .await
    .map_err(failed("pruning webhook click marks"))?;
    c.execute(
        "DELETE FROM webhook_deliveries WHERE status <> 'pending' AND created_at < $1",
        &[&(now - KEEP_LOG)],
    )
    .await
    .map_err(failed("pruning the webhook delivery log"))?;
    Ok(swept)
}
