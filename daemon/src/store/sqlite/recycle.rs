//! The `id_ranges` and `link_tombstones` tables: every id range leased and
//! when, deleted links' deletion times, and the SQL of recycling
//! (`crate::store::RecycleStore` states the rules).

use std::ops::Range;

use rusqlite::{params, Connection, OptionalExtension};

use super::changes;
use crate::store::{IdRange, IdRanges, Purged, RangeState, StoreResult};

/// Records a fresh lease in the caller's transaction.
pub fn record_lease(conn: &Connection, range: &Range<u64>, now: i64) -> StoreResult<()> {
    conn.prepare_cached("INSERT INTO id_ranges (start, stop, leased_at) VALUES (?1, ?2, ?3)")?
        .execute(params![range.start as i64, range.end as i64, now])?;
    Ok(())
}

/// Records that link `id` was deleted at `now` (its row is gone).
pub fn tombstone(conn: &Connection, id: u64, now: i64) -> StoreResult<()> {
    conn.prepare_cached(
        "INSERT INTO link_tombstones (link_id, deleted_at) VALUES (?1, ?2) \
         ON CONFLICT (link_id) DO UPDATE SET deleted_at = excluded.deleted_at",
    )?
    .execute(params![id as i64, now])?;
    Ok(())
}

/// Whether any link row has an id in `range`.
fn holds_links(conn: &Connection, range: &Range<u64>) -> StoreResult<bool> {
    Ok(conn
        .prepare_cached("SELECT 1 FROM links WHERE id >= ?1 AND id < ?2 LIMIT 1")?
        .query_row([range.start as i64, range.end as i64], |_| Ok(()))
        .optional()?
        .is_some())
}

/// Takes the lowest available range at or above `floor` (see
/// `RecycleStore::claim_recycled_ids`).
pub fn claim(conn: &Connection, floor: u64, now: i64) -> StoreResult<Option<Range<u64>>> {
    loop {
        let found: Option<(i64, i64)> = conn
            .prepare_cached(
                "SELECT start, stop FROM id_ranges WHERE state = 'available' AND start >= ?1 \
                 ORDER BY start LIMIT 1",
            )?
            .query_row([floor as i64], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?;
        let Some((start, stop)) = found else {
            return Ok(None);
        };
        let range = start as u64..stop as u64;
        let taken = !holds_links(conn, &range)?;
        conn.prepare_cached(
            "UPDATE id_ranges SET state = 'leased', leased_at = ?2, reuses = reuses + ?3 \
             WHERE start = ?1",
        )?
        .execute(params![start, now, taken as i64])?;
        if taken {
            return Ok(Some(range));
        }
        tracing::warn!(
            start,
            stop,
            "a recycled id range holds links again (an import kept ids in it); \
             it waits another grace period"
        );
    }
}

/// The SQL condition "every id of range `r` is past `:cutoff`".
const RECYCLABLE: &str = "r.state = 'leased' AND r.leased_at <= ?1 \
     AND NOT EXISTS (SELECT 1 FROM links l WHERE l.id >= r.start AND l.id < r.stop \
                     AND (l.expires_at IS NULL OR l.expires_at > ?1)) \
     AND NOT EXISTS (SELECT 1 FROM link_tombstones t WHERE t.link_id >= r.start \
                     AND t.link_id < r.stop AND t.deleted_at > ?1)";

/// Purges up to `limit` recyclable ranges (see
/// `RecycleStore::purge_recyclable_ids`), in the caller's transaction.
pub fn purge(conn: &Connection, cutoff: i64, limit: u32, now: i64) -> StoreResult<Vec<Purged>> {
    let ranges: Vec<Range<u64>> = conn
        .prepare_cached(&format!(
            "SELECT start, stop FROM id_ranges r WHERE {RECYCLABLE} ORDER BY start LIMIT ?2"
        ))?
        .query_map(params![cutoff, limit], |r| {
            Ok(r.get::<_, i64>(0)? as u64..r.get::<_, i64>(1)? as u64)
        })?
        .collect::<Result<_, _>>()?;
    let mut purged = Vec::with_capacity(ranges.len());
    for range in ranges {
        let bounds = [range.start as i64, range.end as i64];
        let links: Vec<(i64, Option<String>)> = conn
            .prepare_cached("SELECT id, alias FROM links WHERE id >= ?1 AND id < ?2")?
            .query_map(bounds, |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?;
        for table in ["link_checks", "takedown_links", "link_tombstones"] {
            conn.prepare_cached(&format!(
                "DELETE FROM {table} WHERE link_id >= ?1 AND link_id < ?2"
            ))?
            .execute(bounds)?;
        }
        // Clicks go with their links (ON DELETE CASCADE).
        conn.prepare_cached("DELETE FROM links WHERE id >= ?1 AND id < ?2")?
            .execute(bounds)?;
        let aliases: Vec<(u64, String)> = links
            .iter()
            .filter_map(|(id, alias)| alias.clone().map(|a| (*id as u64, a)))
            .collect();
        for id in range.clone() {
            let alias = aliases
                .iter()
                .find(|(a, _)| *a == id)
                .map(|(_, alias)| alias.as_str());
            changes::record(conn, id, alias, None)?;
        }
        conn.prepare_cached(
            "UPDATE id_ranges SET state = 'purged', recycled_at = ?2 WHERE start = ?1",
        )?
        .execute(params![range.start as i64, now])?;
        purged.push(Purged {
            range,
            aliases,
            links: links.len() as u64,
        });
    }
    Ok(purged)
}

/// Makes the ranges purged at or before `purged_before` available;
/// returns them.
pub fn release_purged(conn: &Connection, purged_before: i64) -> StoreResult<Vec<Range<u64>>> {
    let released = conn
        .prepare_cached(
            "UPDATE id_ranges SET state = 'available' \
             WHERE state = 'purged' AND recycled_at <= ?1 RETURNING start, stop",
        )?
        .query_map([purged_before], |r| {
            Ok(r.get::<_, i64>(0)? as u64..r.get::<_, i64>(1)? as u64)
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(released)
}

/// Counts of the recorded ranges and the `limit` newest.
pub fn overview(conn: &Connection, limit: u32) -> StoreResult<IdRanges> {
    let mut out = IdRanges::default();
    let mut st = conn.prepare_cached(
        "SELECT state, count(*), sum(stop - start), sum(reuses) FROM id_ranges GROUP BY state",
    )?;
    let rows = st.query_map([], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, i64>(1)?,
            r.get::<_, i64>(2)?,
            r.get::<_, i64>(3)?,
        ))
    })?;
    for row in rows {
        let (state, count, ids, reuses) = row?;
        out.reused += reuses as u64;
        match RangeState::parse(&state) {
            RangeState::Leased => out.leased += count as u64,
            RangeState::Purged => out.purged += count as u64,
            RangeState::Available => {
                out.available += count as u64;
                out.available_ids += ids as u64;
            }
        }
    }
    out.ranges = conn
        .prepare_cached(
            "SELECT start, stop, leased_at, state, recycled_at, reuses FROM id_ranges \
             ORDER BY start DESC LIMIT ?1",
        )?
        .query_map([limit], |r| {
            Ok(IdRange {
                start: r.get::<_, i64>(0)? as u64,
                stop: r.get::<_, i64>(1)? as u64,
                leased_at: r.get(2)?,
                state: RangeState::parse(&r.get::<_, String>(3)?),
                recycled_at: r.get(4)?,
                reuses: r.get::<_, i64>(5)? as u32,
            })
        })?
        .collect::<Result<_, _>>()?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sqlite::tests::temp_store;

    const DAY: i64 = 86_400;

    fn link(c: &Connection, id: u64, expires_at: Option<i64>) {
        c.execute(
            "INSERT INTO links (id, url, created_at, updated_at, expires_at) \
             VALUES (?1, 'https://e.com/', 1, 1, ?2)",
            params![id as i64, expires_at],
        )
        .unwrap();
    }

    #[tokio::test]
    async fn only_ranges_wholly_past_the_grace_period_are_purged_then_claimed_lowest_first() {
        let (_dir, store) = temp_store();
        let now = 1_000 * DAY;
        let cutoff = now - 90 * DAY;
        store
            .write(move |c| {
                for (start, leased_at) in [(100, cutoff - 1), (110, cutoff - 1), (120, cutoff - 1)]
                {
                    record_lease(c, &(start..start + 10), leased_at)?;
                }
                // A young lease: not yet, whatever its links.
                record_lease(c, &(130..140), cutoff + 1)?;
                link(c, 100, Some(cutoff - 5)); // expired long ago
                tombstone(c, 101, cutoff - 5)?; // deleted long ago
                link(c, 110, Some(cutoff - 5));
                link(c, 111, None); // live: keeps its range
                tombstone(c, 120, cutoff + 5)?; // deleted recently
                c.execute(
                    "INSERT INTO clicks (link_id, hour, device, bot, referrer, count) \
                     VALUES (100, 1, 0, 0, '', 7)",
                    [],
                )?;
                Ok(())
            })
            .await
            .unwrap();
        let purged = store
            .write(move |c| purge(c, cutoff, 10, now))
            .await
            .unwrap();
        assert_eq!(purged.len(), 1, "{purged:?}");
        assert_eq!((purged[0].range.clone(), purged[0].links), (100..110, 1));
        let (links, clicks, changes) = store
            .read(|c| {
                let n = |sql: &str| c.query_row(sql, [], |r| r.get::<_, i64>(0));
                Ok((
                    n("SELECT count(*) FROM links WHERE id < 110")?,
                    n("SELECT count(*) FROM clicks")?,
                    n("SELECT count(*) FROM edge_changes WHERE link_id >= 100 AND link_id < 110")?,
                ))
            })
            .await
            .unwrap();
        assert_eq!((links, clicks, changes), (0, 0, 10));
        // Purged is not available yet.
        assert_eq!(store.write(move |c| claim(c, 0, now)).await.unwrap(), None);
        let early = store
            .write(move |c| release_purged(c, now - 1))
            .await
            .unwrap();
        assert_eq!(early, vec![], "purged after the time asked");
        let released = store.write(move |c| release_purged(c, now)).await.unwrap();
        assert_eq!(released, vec![100..110]);
        // Below the floor: not handed out.
        assert_eq!(
            store.write(move |c| claim(c, 101, now)).await.unwrap(),
            None
        );
        assert_eq!(
            store.write(move |c| claim(c, 100, now)).await.unwrap(),
            Some(100..110)
        );
        assert_eq!(
            store.write(move |c| claim(c, 100, now)).await.unwrap(),
            None
        );
        let view = store.read(|c| overview(c, 10)).await.unwrap();
        assert_eq!((view.leased, view.available, view.reused), (4, 0, 1));
        assert_eq!(view.ranges[3].leased_at, now);
    }

    #[tokio::test]
    async fn an_available_range_that_holds_links_again_is_not_handed_out() {
        let (_dir, store) = temp_store();
        store
            .write(|c| {
                record_lease(c, &(100..110), 0)?;
                record_lease(c, &(110..120), 0)?;
                c.execute("UPDATE id_ranges SET state = 'available'", [])?;
                link(c, 105, None); // an import kept this id
                Ok(())
            })
            .await
            .unwrap();
        let got = store.write(|c| claim(c, 0, 50)).await.unwrap();
        assert_eq!(got, Some(110..120));
        let view = store.read(|c| overview(c, 10)).await.unwrap();
        assert_eq!((view.leased, view.available), (2, 0));
    }
}
