//! The sweep of the time-driven webhook events on SQLite, in one writer
//! job: `link.expired` for the links whose expiry passed since the last
//! sweep, `link.clicks` once per interval for each link clicked since, and
//! the pruning of what the log no longer keeps.

use rusqlite::{params, Connection, OptionalExtension};

use super::{enqueue, link_event, subscribed};
use crate::store::sqlite::links;
use crate::store::webhooks::KEEP_LOG;
use crate::store::{clicks_payload, ClickCount, StoreResult, Swept, WebhookEvent};

/// Reads sweep `name`'s mark.
fn sweep_mark(conn: &Connection, name: &str) -> StoreResult<i64> {
    Ok(conn
        .prepare_cached("SELECT at FROM webhook_sweeps WHERE name = ?1")?
        .query_row([name], |r| r.get(0))
        .optional()?
        .unwrap_or(0))
}

fn set_sweep_mark(conn: &Connection, name: &str, at: i64) -> StoreResult<()> {
    conn.prepare_cached(
        "INSERT INTO webhook_sweeps (name, at) VALUES (?1, ?2) \
         ON CONFLICT (name) DO UPDATE SET at = excluded.at",
    )?
    .execute(params![name, at])?;
    Ok(())
}

/// The sweep of the time-driven events, in the writer's transaction.
pub fn sweep(conn: &Connection, now: i64, summary_every: i64) -> StoreResult<Swept> {
    let mut swept = Swept::default();
    let since = sweep_mark(conn, "expired")?;
    if now > since {
        let ids: Vec<i64> = conn
            .prepare_cached(
                "SELECT l.id FROM links l WHERE l.expires_at > ?1 AND l.expires_at <= ?2 \
                 AND l.team_id IN (SELECT team_id FROM webhooks WHERE active \
                     AND (',' || events || ',') LIKE ?3) ORDER BY l.id",
            )?
            .query_map(params![since, now, WebhookEvent::Expired.pattern()], |r| {
                r.get(0)
            })?
            .collect::<rusqlite::Result<_>>()?;
        for id in ids {
            if let Some(link) = links::by_id(conn, id as u64)? {
                swept.expired +=
                    subscribed(conn, link.team_id, WebhookEvent::Expired)?.len() as u64;
                link_event(conn, WebhookEvent::Expired, &link, now)?;
            }
        }
        set_sweep_mark(conn, "expired", now)?;
    }
    let last = sweep_mark(conn, "clicks")?;
    if now - last < summary_every {
        return Ok(swept);
    }
    let counts: Vec<ClickCount> = conn
        .prepare_cached(
            "SELECT l.id, l.team_id, l.alias, l.url, l.clicks, l.bot_clicks, \
             coalesce(m.clicks, 0), coalesce(m.bot_clicks, 0) \
             FROM links l LEFT JOIN webhook_click_marks m ON m.link_id = l.id \
             WHERE l.clicks > coalesce(m.clicks, 0) \
             AND l.team_id IN (SELECT team_id FROM webhooks WHERE active \
                 AND (',' || events || ',') LIKE ?1) ORDER BY l.id",
        )?
        .query_map([WebhookEvent::Clicks.pattern()], |r| {
            Ok(ClickCount {
                link_id: r.get::<_, i64>(0)? as u64,
                team_id: r.get(1)?,
                alias: r.get(2)?,
                url: r.get(3)?,
                clicks: r.get(4)?,
                bot_clicks: r.get(5)?,
                clicks_before: r.get(6)?,
                bot_clicks_before: r.get(7)?,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    let mut mark = conn.prepare_cached(
        "INSERT INTO webhook_click_marks (link_id, clicks, bot_clicks) VALUES (?1, ?2, ?3) \
         ON CONFLICT (link_id) DO UPDATE SET clicks = excluded.clicks, \
         bot_clicks = excluded.bot_clicks",
    )?;
    for c in &counts {
        let payload = clicks_payload(c, last, now);
        for hook in subscribed(conn, c.team_id, WebhookEvent::Clicks)? {
            enqueue(
                conn,
                hook,
                WebhookEvent::Clicks.as_str(),
                Some(c.link_id),
                &payload,
                now,
                None,
            )?;
            swept.summaries += 1;
        }
        mark.execute(params![c.link_id as i64, c.clicks, c.bot_clicks])?;
    }
    set_sweep_mark(conn, "clicks", now)?;
    // What is no longer needed: marks of deleted links, and deliveries
    // done (delivered or given up) longer ago than the log keeps them.
    conn.prepare_cached(
        "DELETE FROM webhook_click_marks WHERE link_id NOT IN (SELECT id FROM links)",
    )?
    .execute([])?;
    conn.prepare_cached(
        "DELETE FROM webhook_deliveries WHERE status <> 'pending' AND created_at < ?1",
    )?
    .execute([now - KEEP_LOG])?;
    Ok(swept)
}
