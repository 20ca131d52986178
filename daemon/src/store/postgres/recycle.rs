//! The SQL of id recycling on PostgreSQL (`crate::store::RecycleStore` states
//! the rules; SQLite's twin is `store::sqlite::recycle`). Several nodes sweep and
//! claim at once: each locks the `id_ranges` rows it works on with
//! `FOR UPDATE SKIP LOCKED`, so two nodes never purge or take the same
//! range, and none waits on another.

use std::ops::Range;

use deadpool_postgres::GenericClient;

use super::PgError;
use crate::store::{IdRange, IdRanges, Purged, RangeState};

/// Records that link `id` was deleted at `now`, in the caller's transaction.
pub async fn tombstone(tx: &impl GenericClient, id: i64, now: i64) -> Result<(), PgError> {
    let st = tx
        .prepare_cached(
            "INSERT INTO link_tombstones (link_id, deleted_at) VALUES ($1, $2) \
             ON CONFLICT (link_id) DO UPDATE SET deleted_at = excluded.deleted_at",
        )
        .await
        .map_err(PgError::query("preparing a link tombstone"))?;
    tx.execute(&st, &[&id, &now])
        .await
        .map_err(PgError::query("recording a deleted link's id"))?;
    Ok(())
}

fn range(start: i64, stop: i64) -> Range<u64> {
    start as u64..stop as u64
}

/// Takes the lowest available range at or above `floor` for `holder`, in
/// the caller's transaction (see `RecycleStore::claim_recycled_ids`); the
/// range is recorded as the holder's live lease too, as a fresh one is
/// (`postgres::ids`), so an import does not keep ids in it.
pub async fn claim(
    tx: &impl GenericClient,
    name: &str,
    floor: i64,
    holder: i64,
    now: i64,
) -> Result<Option<Range<u64>>, PgError> {
    let pick = tx
        .prepare_cached(
            "SELECT r.start, r.stop, EXISTS (SELECT 1 FROM links l \
                 WHERE l.id >= r.start AND l.id < r.stop) \
             FROM id_ranges r WHERE r.state = 'available' AND r.start >= $1 \
             ORDER BY r.start LIMIT 1 FOR UPDATE OF r SKIP LOCKED",
        )
        .await
        .map_err(PgError::query("preparing a recycled range claim"))?;
    let take = tx
        .prepare_cached(
            "UPDATE id_ranges SET state = 'leased', leased_at = $2, reuses = reuses + $3 \
             WHERE start = $1",
        )
        .await
        .map_err(PgError::query("preparing a recycled range claim"))?;
    loop {
        let Some(row) = tx
            .query_opt(&pick, &[&floor])
            .await
            .map_err(PgError::query("claiming a recycled id range"))?
        else {
            return Ok(None);
        };
        let (start, stop, holds_links): (i64, i64, bool) = (row.get(0), row.get(1), row.get(2));
        tx.execute(&take, &[&start, &now, &i32::from(!holds_links)])
            .await
            .map_err(PgError::query("claiming a recycled id range"))?;
        if !holds_links {
            tx.execute(
                "INSERT INTO id_leases (name, holder, start, stop) VALUES ($1, $2, $3, $4) \
                 ON CONFLICT DO NOTHING",
                &[&name, &holder, &start, &stop],
            )
            .await
            .map_err(PgError::query("recording a recycled id lease"))?;
            return Ok(Some(range(start, stop)));
        }
        tracing::warn!(
            start,
            stop,
            "a recycled id range holds links again (an import kept ids in it); \
             it waits another grace period"
        );
    }
}

/// Purges up to `limit` recyclable ranges in the caller's transaction
/// (see `RecycleStore::purge_recyclable_ids`).
pub async fn purge(
    tx: &impl GenericClient,
    cutoff: i64,
    limit: i64,
    now: i64,
) -> Result<Vec<Purged>, PgError> {
    let rows = tx
        .query(
            "SELECT r.start, r.stop FROM id_ranges r \
             WHERE r.state = 'leased' AND r.leased_at <= $1 \
               AND NOT EXISTS (SELECT 1 FROM links l WHERE l.id >= r.start AND l.id < r.stop \
                               AND (l.expires_at IS NULL OR l.expires_at > $1)) \
               AND NOT EXISTS (SELECT 1 FROM link_tombstones t WHERE t.link_id >= r.start \
                               AND t.link_id < r.stop AND t.deleted_at > $1) \
             ORDER BY r.start LIMIT $2 FOR UPDATE OF r SKIP LOCKED",
            &[&cutoff, &limit],
        )
        .await
        .map_err(PgError::query("finding recyclable id ranges"))?;
    let mut purged = Vec::with_capacity(rows.len());
    for row in rows {
        let (start, stop): (i64, i64) = (row.get(0), row.get(1));
        // The links are locked and read again: one renewed since the
        // search keeps its range.
        let links = tx
            .query(
                "SELECT id, alias, expires_at FROM links WHERE id >= $1 AND id < $2 FOR UPDATE",
                &[&start, &stop],
            )
            .await
            .map_err(PgError::query("locking the links of an id range"))?;
        let live = links.iter().any(|l| {
            l.get::<_, Option<i64>>(2)
                .is_none_or(|expires_at| expires_at > cutoff)
        });
        if live {
            continue;
        }
        for table in ["link_checks", "takedown_links", "link_tombstones"] {
            tx.execute(
                &format!("DELETE FROM {table} WHERE link_id >= $1 AND link_id < $2"),
                &[&start, &stop],
            )
            .await
            .map_err(PgError::query("purging the per-link rows of an id range"))?;
        }
        // Clicks go with their links (ON DELETE CASCADE).
        tx.execute(
            "DELETE FROM links WHERE id >= $1 AND id < $2",
            &[&start, &stop],
        )
        .await
        .map_err(PgError::query("purging the links of an id range"))?;
        let aliases: Vec<(u64, String)> = links
            .iter()
            .filter_map(|l| {
                l.get::<_, Option<String>>(1)
                    .map(|a| (l.get::<_, i64>(0) as u64, a))
            })
            .collect();
        let every: Vec<(i64, Option<String>)> = (start..stop)
            .map(|id| {
                let alias = aliases.iter().find(|(a, _)| *a == id as u64);
                (id, alias.map(|(_, alias)| alias.clone()))
            })
            .collect();
        append_gone(tx, &every).await?;
        tx.execute(
            "UPDATE id_ranges SET state = 'purged', recycled_at = $2 WHERE start = $1",
            &[&start, &now],
        )
        .await
        .map_err(PgError::query("marking an id range purged"))?;
        purged.push(Purged {
            range: range(start, stop),
            aliases,
            links: links.len() as u64,
        });
    }
    Ok(purged)
}

/// Logs "gone" (no alias after) for every id, in one statement.
async fn append_gone(
    tx: &impl GenericClient,
    ids: &[(i64, Option<String>)],
) -> Result<(), PgError> {
    let (ids, aliases): (Vec<i64>, Vec<Option<String>>) = ids.iter().cloned().unzip();
    tx.execute(
        "INSERT INTO edge_changes (link_id, old_alias, new_alias) \
         SELECT id, alias, NULL FROM unnest($1::bigint[], $2::text[]) AS u(id, alias)",
        &[&ids, &aliases],
    )
    .await
    .map_err(PgError::query("appending to the change log"))?;
    Ok(())
}

/// Makes the ranges purged at or before `purged_before` available;
/// returns them.
pub async fn release_purged(
    client: &impl GenericClient,
    purged_before: i64,
) -> Result<Vec<Range<u64>>, PgError> {
    let rows = client
        .query(
            "UPDATE id_ranges SET state = 'available' \
             WHERE state = 'purged' AND recycled_at <= $1 RETURNING start, stop",
            &[&purged_before],
        )
        .await
        .map_err(PgError::query("releasing purged id ranges"))?;
    Ok(rows.iter().map(|r| range(r.get(0), r.get(1))).collect())
}

/// Counts of the recorded ranges and the `limit` newest.
pub async fn overview(client: &impl GenericClient, limit: i64) -> Result<IdRanges, PgError> {
    let mut out = IdRanges::default();
    let rows = client
        .query(
            "SELECT state, count(*), sum(stop - start)::bigint, sum(reuses)::bigint \
             FROM id_ranges GROUP BY state",
            &[],
        )
        .await
        .map_err(PgError::query("counting the id ranges"))?;
    for row in rows {
        let (count, ids, reuses): (i64, i64, i64) = (row.get(1), row.get(2), row.get(3));
        out.reused += reuses as u64;
        match RangeState::parse(row.get(0)) {
            RangeState::Leased => out.leased += count as u64,
            RangeState::Purged => out.purged += count as u64,
            RangeState::Available => {
                out.available += count as u64;
                out.available_ids += ids as u64;
            }
        }
    }
    let rows = client
        .query(
            "SELECT start, stop, leased_at, state, recycled_at, reuses FROM id_ranges \
             ORDER BY start DESC LIMIT $1",
            &[&limit],
        )
        .await
        .map_err(PgError::query("reading the id ranges"))?;
    out.ranges = rows
        .iter()
        .map(|r| IdRange {
            start: r.get::<_, i64>(0) as u64,
            stop: r.get::<_, i64>(1) as u64,
            leased_at: r.get(2),
            state: RangeState::parse(r.get(3)),
            recycled_at: r.get(4),
            reuses: r.get::<_, i32>(5) as u32,
        })
        .collect();
    Ok(out)
}
