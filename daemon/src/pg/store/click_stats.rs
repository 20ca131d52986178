//! Click stats on PostgreSQL, answering exactly as the SQLite store
//! (`store/clicks/range.rs`, `store/clicks/site.rs`): the same buckets,
//! device counts, referrers and top links, read from the `clicks` table
//! alone (every acknowledged batch is in it already).

use std::collections::HashMap;

use deadpool_postgres::GenericClient;
use shortlink_core::ipc::DeviceTargets;
use tokio_postgres::{IsolationLevel, Row};

use crate::pg::PgError;
use crate::store::clicks::{RangeStats, RangeTally, SiteStats, SiteTally};
use crate::store::links::Link;
use crate::store::{StoreError, StoreResult};

/// Stats of `link_id` for hours `from_hour..=to_hour`, in hour or day
/// buckets.
pub(super) async fn link_stats(
    c: &impl GenericClient,
    link_id: u64,
    from_hour: i64,
    to_hour: i64,
    daily: bool,
) -> StoreResult<RangeStats> {
    let Ok(id) = i64::try_from(link_id) else {
        return Ok(RangeStats::default()); // no link has such an id
    };
    let st = c
        .prepare_cached(
            "SELECT hour, device, bot, referrer, count FROM clicks \
             WHERE link_id = $1 AND hour BETWEEN $2 AND $3",
        )
        .await
        .map_err(PgError::query("preparing link stats"))?;
    let rows = c
        .query(&st, &[&id, &from_hour, &to_hour])
        .await
        .map_err(PgError::query("reading link stats"))?;
    let mut tally = RangeTally::new(daily);
    for r in &rows {
        let device: i16 = r.get(1);
        let referrer: &str = r.get(3);
        tally.add(r.get(0), device as u8, r.get(2), referrer, r.get(4));
    }
    Ok(tally.finish())
}

/// Stats of every link for hours `from_hour..=to_hour`, in hour or day
/// buckets, with the `top` most clicked links (deleted ones left out), all
/// read in one snapshot.
pub(super) async fn site_stats(
    c: &mut deadpool_postgres::Client,
    from_hour: i64,
    to_hour: i64,
    daily: bool,
    top: usize,
) -> StoreResult<(SiteStats, Vec<(Link, i64)>)> {
    let tx = c
        .build_transaction()
        .isolation_level(IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .await
        .map_err(PgError::query("starting a stats read"))?;
    let st = tx
        .prepare_cached(
            "SELECT link_id, hour, bot, sum(count)::bigint FROM clicks \
             WHERE hour BETWEEN $1 AND $2 GROUP BY link_id, hour, bot",
        )
        .await
        .map_err(PgError::query("preparing site stats"))?;
    let rows = tx
        .query(&st, &[&from_hour, &to_hour])
        .await
        .map_err(PgError::query("reading site stats"))?;
    let mut tally = SiteTally::new(daily);
    for r in &rows {
        let (link, hour, bot, n): (i64, i64, bool, i64) = (r.get(0), r.get(1), r.get(2), r.get(3));
        tally.add(link as u64, hour, bot, n);
    }
    let out = tally.finish(top);
    let top = top_links(&tx, &out.top).await?;
    tx.commit()
        .await
        .map_err(PgError::query("ending a stats read"))?;
    Ok((out, top))
}

const LINK_COLUMNS: &str = "id, alias, url, created_at, updated_at, expires_at, renew_ttl, \
     max_visits, redirect, target_desktop, target_mobile, target_ios, target_android, \
     disabled, tags, created_by, clicks, bot_clicks";

/// The links of `ranked`, in its order, with their clicks; ids with no
/// link (deleted) left out, as on SQLite.
async fn top_links(c: &impl GenericClient, ranked: &[(u64, i64)]) -> StoreResult<Vec<(Link, i64)>> {
    let ids: Vec<i64> = ranked.iter().map(|&(id, _)| id as i64).collect();
    let rows = c
        .query(
            &format!("SELECT {LINK_COLUMNS} FROM links WHERE id = ANY($1)"),
            &[&ids],
        )
        .await
        .map_err(PgError::query("reading the top links"))?;
    let mut found: HashMap<u64, Link> = HashMap::with_capacity(rows.len());
    for r in &rows {
        let link = link_row(r)?;
        found.insert(link.id, link);
    }
    Ok(ranked
        .iter()
        .filter_map(|&(id, n)| found.remove(&id).map(|l| (l, n)))
        .collect())
}

/// A `links` row as a [`Link`], decoded as SQLite decodes its own.
fn link_row(r: &Row) -> StoreResult<Link> {
    let id: i64 = r.get(0);
    let redirect = r
        .get::<_, Option<i32>>(8)
        .map(|code| {
            u16::try_from(code)
                .map_err(|_| StoreError::Corrupt(format!("link {id} has redirect status {code}")))
        })
        .transpose()?;
    let tags: String = r.get(14);
    Ok(Link {
        id: id as u64,
        alias: r.get(1),
        url: r.get(2),
        created_at: r.get(3),
        updated_at: r.get(4),
        expires_at: r.get(5),
        renew_ttl: r.get(6),
        max_visits: r.get(7),
        redirect,
        targets: DeviceTargets {
            desktop: r.get(9),
            mobile: r.get(10),
            ios: r.get(11),
            android: r.get(12),
        },
        disabled: r.get(13),
        tags: if tags == "[]" {
            Vec::new()
        } else {
            serde_json::from_str(&tags).unwrap_or_default()
        },
        created_by: r.get(15),
        clicks: r.get(16),
        bot_clicks: r.get(17),
    })
}
