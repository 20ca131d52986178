//! The `clicks` and `click_batches` tables, and the per-link totals.

use std::collections::BTreeMap;

use rusqlite::{params, Connection, OptionalExtension};
use shortlink_core::ipc::{ClickBatch, ClickCount};

use super::StoreResult;

/// Longest referrer host kept (a DNS name is at most 253 bytes).
const MAX_REFERRER: usize = 253;

/// What applying one click batch did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BatchOutcome {
    /// The batch id was seen before: nothing was counted.
    pub duplicate: bool,
    /// Clicks added (items for unknown or deleted links are skipped).
    pub counted: u64,
    /// Links whose edge view changed (reached max visits, expiry renewed):
    /// id and alias, so the edge can be told to refetch.
    pub changed: Vec<(u64, Option<String>)>,
}

#[derive(Default)]
struct LinkDelta {
    clicks: i64,
    bots: i64,
    humans: i64,
}

/// Counts a batch once: a batch id already in `click_batches` is skipped.
pub fn apply_batch(conn: &Connection, batch: &ClickBatch, now: i64) -> StoreResult<BatchOutcome> {
    let inserted = conn
        .prepare_cached("INSERT OR IGNORE INTO click_batches (batch_id, seen_at) VALUES (?1, ?2)")?
        .execute(params![&batch.batch_id.0[..], now])?;
    if inserted == 0 {
        return Ok(BatchOutcome {
            duplicate: true,
            ..BatchOutcome::default()
        });
    }
    // Clicks grouped by link, in id order (neighbouring rows, neighbouring
    // pages). Per link: one UPDATE of the totals that also returns what the
    // edge depends on (and tells whether the link exists), then one upsert
    // per hour/device/referrer row.
    let mut per_link: BTreeMap<u64, (LinkDelta, Vec<&ClickCount>)> = BTreeMap::new();
    for click in &batch.clicks {
        if click.count == 0 || click.link_id > i64::MAX as u64 {
            continue;
        }
        let (d, rows) = per_link.entry(click.link_id).or_default();
        d.clicks += click.count as i64;
        if click.bot {
            d.bots += click.count as i64;
        } else {
            d.humans += click.count as i64;
        }
        rows.push(click);
    }
    let mut totals = conn.prepare_cached(
        "UPDATE links SET clicks = clicks + ?2, bot_clicks = bot_clicks + ?3 WHERE id = ?1 \
         RETURNING max_visits, clicks - bot_clicks, renew_ttl, expires_at, alias, disabled",
    )?;
    let mut upsert = conn.prepare_cached(
        "INSERT INTO clicks (link_id, hour, device, bot, referrer, count) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6) \
         ON CONFLICT (link_id, hour, device, bot, referrer) \
         DO UPDATE SET count = count + excluded.count",
    )?;
    let mut outcome = BatchOutcome::default();
    for (id, (d, rows)) in per_link {
        type Row = (
            Option<i64>,
            i64,
            Option<i64>,
            Option<i64>,
            Option<String>,
            bool,
        );
        let row: Option<Row> = totals
            .query_row(params![id as i64, d.clicks, d.bots], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                ))
            })
            .optional()?;
        let Some((max_visits, humans_after, renew_ttl, expires_at, alias, disabled)) = row else {
            continue; // unknown or deleted link
        };
        for click in rows {
            let referrer = click
                .referrer
                .as_deref()
                .map(|r| {
                    let mut r = r.to_ascii_lowercase();
                    r.truncate(MAX_REFERRER);
                    r
                })
                .unwrap_or_default();
            upsert.execute(params![
                click.link_id as i64,
                click.hour as i64,
                click.device as u8 as i64,
                click.bot,
                referrer,
                click.count as i64
            ])?;
        }
        outcome.counted += d.clicks as u64;
        let humans_before = humans_after - d.humans;
        let mut changed = false;
        if let Some(max) = max_visits {
            if humans_before < max && humans_before + d.humans >= max {
                changed = true;
            }
        }
        if let (Some(ttl), Some(exp)) = (renew_ttl, expires_at) {
            // Only a live link is renewed, and only when the move is worth
            // an edge refetch.
            let renewed = now + ttl;
            if !disabled && exp > now && renewed >= exp + (ttl / 10).max(1) {
                super::links::set_expiry(conn, id, renewed)?;
                changed = true;
            }
        }
        if changed {
            outcome.changed.push((id, alias));
        }
    }
    Ok(outcome)
}

/// Forgets batch ids older than `cutoff` (Unix seconds).
pub fn prune_batches(conn: &Connection, cutoff: i64) -> StoreResult<usize> {
    Ok(conn.execute("DELETE FROM click_batches WHERE seen_at < ?1", [cutoff])?)
}

/// Batch ids remembered.
pub fn batch_count(conn: &Connection) -> StoreResult<u64> {
    Ok(
        conn.query_row("SELECT count(*) FROM click_batches", [], |r| {
            r.get::<_, i64>(0)
        })? as u64,
    )
}

/// Click numbers of one link over a range of hours.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RangeStats {
    /// Clicks in the range, bots included.
    pub total: i64,
    /// Bot clicks in the range.
    pub bots: i64,
    /// `(bucket start in Unix seconds, clicks)` for every bucket with clicks.
    pub series: Vec<(i64, i64)>,
    /// Clicks per device class (its `u8` value).
    pub devices: Vec<(u8, i64)>,
    /// Top referrer hosts.
    pub referrers: Vec<(String, i64)>,
}

/// Stats of `link_id` for hours `from_hour..=to_hour`, in hour or day buckets.
pub fn range_stats(
    conn: &Connection,
    link_id: u64,
    from_hour: i64,
    to_hour: i64,
    daily: bool,
) -> StoreResult<RangeStats> {
    let id = link_id as i64;
    let bucket_hours: i64 = if daily { 24 } else { 1 };
    let mut out = RangeStats::default();
    let (total, bots): (Option<i64>, Option<i64>) = conn
        .prepare_cached(
            "SELECT sum(count), sum(CASE WHEN bot THEN count ELSE 0 END) FROM clicks \
             WHERE link_id = ?1 AND hour BETWEEN ?2 AND ?3",
        )?
        .query_row(params![id, from_hour, to_hour], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?;
    out.total = total.unwrap_or(0);
    out.bots = bots.unwrap_or(0);
    let mut st = conn.prepare_cached(
        "SELECT hour / ?4, sum(count) FROM clicks WHERE link_id = ?1 AND hour BETWEEN ?2 AND ?3 \
         GROUP BY 1 ORDER BY 1",
    )?;
    out.series = st
        .query_map(params![id, from_hour, to_hour, bucket_hours], |r| {
            Ok((r.get::<_, i64>(0)? * bucket_hours * 3600, r.get(1)?))
        })?
        .collect::<Result<_, _>>()?;
    let mut st = conn.prepare_cached(
        "SELECT device, sum(count) FROM clicks WHERE link_id = ?1 AND hour BETWEEN ?2 AND ?3 \
         GROUP BY device ORDER BY device",
    )?;
    out.devices = st
        .query_map(params![id, from_hour, to_hour], |r| {
            Ok((r.get::<_, i64>(0)? as u8, r.get(1)?))
        })?
        .collect::<Result<_, _>>()?;
    let mut st = conn.prepare_cached(
        "SELECT referrer, sum(count) FROM clicks WHERE link_id = ?1 AND hour BETWEEN ?2 AND ?3 \
         AND referrer != '' GROUP BY referrer ORDER BY 2 DESC, 1 LIMIT 50",
    )?;
    out.referrers = st
        .query_map(params![id, from_hour, to_hour], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?
        .collect::<Result<_, _>>()?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::links::{self, Link};
    use crate::store::tests::temp_store;
    use shortlink_core::device::DeviceClass;
    use shortlink_core::ipc::{BatchId, ClickCount};

    fn click(link_id: u64, hour: u32, bot: bool, referrer: Option<&str>, count: u32) -> ClickCount {
        ClickCount {
            link_id,
            hour,
            device: DeviceClass::Desktop,
            bot,
            referrer: referrer.map(str::to_string),
            count,
        }
    }

    #[tokio::test]
    async fn batches_count_once_and_report_exhaustion() {
        let (_dir, store) = temp_store();
        store
            .write(|c| {
                links::insert(
                    c,
                    &Link {
                        id: 5,
                        url: "https://e.com/".into(),
                        max_visits: Some(3),
                        ..Link::default()
                    },
                    None,
                )
            })
            .await
            .unwrap();
        let batch = ClickBatch {
            batch_id: BatchId([1; 16]),
            clicks: vec![
                click(5, 100, false, Some("News.Example.com"), 2),
                click(5, 101, true, None, 4),
                click(99, 100, false, None, 7),
            ],
        };
        let b = batch.clone();
        let first = store
            .write(move |c| apply_batch(c, &b, 1000))
            .await
            .unwrap();
        assert_eq!(first.counted, 6);
        assert!(first.changed.is_empty());
        let b = batch.clone();
        let again = store
            .write(move |c| apply_batch(c, &b, 1000))
            .await
            .unwrap();
        assert!(again.duplicate);
        let more = ClickBatch {
            batch_id: BatchId([2; 16]),
            clicks: vec![click(5, 101, false, None, 1)],
        };
        let third = store
            .write(move |c| apply_batch(c, &more, 1000))
            .await
            .unwrap();
        assert_eq!(third.changed, vec![(5, None)]);
        let link = store.read(|c| links::by_id(c, 5)).await.unwrap().unwrap();
        assert_eq!((link.clicks, link.bot_clicks), (7, 4));
        let stats = store
            .read(|c| range_stats(c, 5, 0, 200, false))
            .await
            .unwrap();
        assert_eq!(stats.total, 7);
        assert_eq!(stats.bots, 4);
        assert_eq!(stats.series, vec![(100 * 3600, 2), (101 * 3600, 5)]);
        assert_eq!(stats.referrers, vec![("news.example.com".to_string(), 2)]);
        let daily = store
            .read(|c| range_stats(c, 5, 0, 200, true))
            .await
            .unwrap();
        assert_eq!(daily.series, vec![(4 * 86400, 7)]);
    }
}
