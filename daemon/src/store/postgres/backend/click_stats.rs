//! Click stats on PostgreSQL, answering exactly as the SQLite store
//! (`store/sqlite/clicks/range.rs`, `store/sqlite/clicks/site.rs`): the same buckets,
//! device counts, countries, variants, referrers and top links, read from
//! the `clicks` and `variant_clicks` tables alone (every acknowledged batch
//! is in them already).

use std::collections::HashMap;

use deadpool_postgres::GenericClient;
use shortlink_core::country::Country;
use tokio_postgres::IsolationLevel;

use super::rows::{columns, from_row};
use crate::store::clicks::{RangeTally, SiteTally};
use crate::store::postgres::PgError;
use crate::store::{Link, RangeStats, SiteFilter, SiteStats, StoreResult};

/// Stats of `link_id` for hours `from_hour..=to_hour`, in hour or day
/// buckets, the clicks and their split by variant read in one snapshot.
pub(super) async fn link_stats(
    c: &mut deadpool_postgres::Client,
    link_id: u64,
    from_hour: i64,
    to_hour: i64,
    daily: bool,
) -> StoreResult<RangeStats> {
    let Ok(id) = i64::try_from(link_id) else {
        return Ok(RangeStats::default()); // no link has such an id
    };
    let c = c
        .build_transaction()
        .isolation_level(IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .await
        .map_err(PgError::query("starting a link stats read"))?;
    let st = c
        .prepare_cached(
            "SELECT hour, device, bot, referrer, count, country FROM clicks \
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
        let country = Country::from_stored(r.get(5));
        tally.add(
            r.get(0),
            device as u8,
            r.get(2),
            referrer,
            country,
            r.get(4),
        );
    }
    let st = c
        .prepare_cached(
            "SELECT variant, sum(count)::bigint FROM variant_clicks \
             WHERE link_id = $1 AND hour BETWEEN $2 AND $3 GROUP BY variant",
        )
        .await
        .map_err(PgError::query("preparing variant stats"))?;
    let rows = c
        .query(&st, &[&id, &from_hour, &to_hour])
        .await
        .map_err(PgError::query("reading variant stats"))?;
    for r in &rows {
        if let Ok(variant) = u8::try_from(r.get::<_, i16>(0)) {
            tally.add_variant(variant, r.get(1));
        }
    }
    c.commit()
        .await
        .map_err(PgError::query("ending a link stats read"))?;
    Ok(tally.finish())
}

/// Stats of every link `filter` keeps for hours `from_hour..=to_hour`, in
/// hour or day buckets, with the `top` most clicked links (deleted ones
/// left out), all read in one snapshot.
pub(super) async fn site_stats(
    c: &mut deadpool_postgres::Client,
    (from_hour, to_hour): (i64, i64),
    daily: bool,
    top: usize,
    filter: &SiteFilter,
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
            "SELECT link_id, hour, bot, country, sum(count)::bigint FROM clicks \
             WHERE hour BETWEEN $1 AND $2 \
             AND ($3::bigint IS NULL OR link_id IN (SELECT id FROM links WHERE team_id = $3)) \
             AND ($4::text IS NULL OR link_id IN \
                  (SELECT id FROM links WHERE jsonb_exists(tags::jsonb, $4))) \
             GROUP BY link_id, hour, bot, country",
        )
        .await
        .map_err(PgError::query("preparing site stats"))?;
    let rows = tx
        .query(&st, &[&from_hour, &to_hour, &filter.team, &filter.tag])
        .await
        .map_err(PgError::query("reading site stats"))?;
    let mut tally = SiteTally::new(daily);
    for r in &rows {
        let (link, hour, bot, n): (i64, i64, bool, i64) = (r.get(0), r.get(1), r.get(2), r.get(4));
        let country = Country::from_stored(r.get(3));
        tally.add(link as u64, hour, bot, country, n);
    }
    let out = tally.finish(top);
    let top = top_links(&tx, &out.top).await?;
    tx.commit()
        .await
        .map_err(PgError::query("ending a stats read"))?;
    Ok((out, top))
}

/// The links of `ranked`, in its order, with their clicks; ids with no
/// link (deleted) left out, as on SQLite.
async fn top_links(c: &impl GenericClient, ranked: &[(u64, i64)]) -> StoreResult<Vec<(Link, i64)>> {
    let ids: Vec<i64> = ranked.iter().map(|&(id, _)| id as i64).collect();
    let rows = c
        .query(
            concat!("SELECT ", columns!(), " FROM links WHERE id = ANY($1)"),
            &[&ids],
        )
        .await
        .map_err(PgError::query("reading the top links"))?;
    let mut found: HashMap<u64, Link> = HashMap::with_capacity(rows.len());
    for r in &rows {
        let link = from_row(r)?;
        found.insert(link.id, link);
    }
    Ok(ranked
        .iter()
        .filter_map(|&(id, n)| found.remove(&id).map(|l| (l, n)))
        .collect())
}
