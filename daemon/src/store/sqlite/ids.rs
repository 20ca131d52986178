//! The `id_alloc` table: leases of id ranges.

use std::ops::Range;

use rusqlite::{params, Connection};

use crate::store::StoreResult;

/// Leases `size` ids starting at or above `floor`: `next = next + size` in
/// the caller's transaction, so no two leases ever overlap, across restarts,
/// crashes and processes sharing the database.
pub fn lease(conn: &Connection, floor: u64, size: u64) -> StoreResult<Range<u64>> {
    conn.prepare_cached("INSERT OR IGNORE INTO id_alloc (name, next) VALUES ('links', ?1)")?
        .execute([floor as i64])?;
    let next: i64 = conn
        .prepare_cached("SELECT next FROM id_alloc WHERE name = 'links'")?
        .query_row([], |r| r.get(0))?;
    let start = (next as u64).max(floor);
    let end = start + size;
    conn.prepare_cached("UPDATE id_alloc SET next = ?1 WHERE name = 'links'")?
        .execute(params![end as i64])?;
    super::recycle::record_lease(conn, &(start..end), crate::timestamp::unix_now())?;
    Ok(start..end)
}

/// Moves the next lease past `last` (ids an import kept), never back.
pub fn advance_past(conn: &Connection, last: u64) -> StoreResult<()> {
    let next = last.saturating_add(1) as i64;
    conn.prepare_cached("INSERT OR IGNORE INTO id_alloc (name, next) VALUES ('links', ?1)")?
        .execute([next])?;
    conn.prepare_cached("UPDATE id_alloc SET next = max(next, ?1) WHERE name = 'links'")?
        .execute([next])?;
    Ok(())
}

/// The ids in `range` a link has.
pub fn used_in(conn: &Connection, range: &Range<u64>) -> StoreResult<Vec<u64>> {
    let (start, end) = (clamp(range.start), clamp(range.end));
    let mut st = conn.prepare_cached("SELECT id FROM links WHERE id >= ?1 AND id < ?2")?;
    let ids = st
        .query_map(params![start, end], |r| r.get::<_, i64>(0))?
        .map(|id| id.map(|id| id as u64))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ids)
}

/// An id as SQLite's integer (ids past it are never stored).
fn clamp(id: u64) -> i64 {
    i64::try_from(id).unwrap_or(i64::MAX)
}

/// Takes back the unused tails of this process's leases at a clean
/// shutdown: a range that ends where the next lease would start moves
/// `next` back to its start (and its `id_ranges` record is cut there), so
/// the ids are leased again; a range some later lease passed stays lost.
/// How many ids came back.
pub fn give_back(conn: &Connection, unused: &[Range<u64>]) -> StoreResult<u64> {
    let mut ranges: Vec<&Range<u64>> = unused.iter().filter(|r| r.start < r.end).collect();
    ranges.sort_by_key(|r| std::cmp::Reverse(r.end));
    let mut taken = 0;
    for r in ranges {
        let moved = conn
            .prepare_cached("UPDATE id_alloc SET next = ?1 WHERE name = 'links' AND next = ?2")?
            .execute(params![r.start as i64, r.end as i64])?;
        if moved == 0 {
            break;
        }
        conn.prepare_cached("DELETE FROM id_ranges WHERE stop = ?2 AND start >= ?1")?
            .execute(params![r.start as i64, r.end as i64])?;
        conn.prepare_cached("UPDATE id_ranges SET stop = ?1 WHERE stop = ?2 AND start < ?1")?
            .execute(params![r.start as i64, r.end as i64])?;
        taken += r.end - r.start;
    }
    Ok(taken)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sqlite::tests::temp_store;

    #[tokio::test]
    async fn leases_never_overlap_and_respect_the_floor() {
        let (_dir, store) = temp_store();
        let a = store.write(|c| lease(c, 100, 10)).await.unwrap();
        let b = store.write(|c| lease(c, 100, 10)).await.unwrap();
        assert_eq!((a, b.clone()), (100..110, 110..120));
        // A larger minimum code length moves the floor up, never back.
        let c = store.write(|c| lease(c, 1000, 5)).await.unwrap();
        assert_eq!(c, 1000..1005);
        let d = store.write(|c| lease(c, 100, 5)).await.unwrap();
        assert_eq!(d, 1005..1010);
        // Ids an import kept: leases continue after them, and never go back.
        store.write(|c| advance_past(c, 5000)).await.unwrap();
        store.write(|c| advance_past(c, 2000)).await.unwrap();
        let e = store.write(|c| lease(c, 100, 5)).await.unwrap();
        assert_eq!(e, 5001..5006);
    }

    #[tokio::test]
    async fn unused_tails_come_back_only_while_nothing_leased_past_them() {
        let (_dir, store) = temp_store();
        let a = store.write(|c| lease(c, 100, 10)).await.unwrap();
        let b = store.write(|c| lease(c, 100, 10)).await.unwrap();
        assert_eq!((a, b), (100..110, 110..120));
        // 100..104 were handed out: the rest of both leases comes back.
        let back = store
            .write(|c| give_back(c, &[104..110, 110..120]))
            .await
            .unwrap();
        assert_eq!(back, 16);
        assert_eq!(store.write(|c| lease(c, 100, 10)).await.unwrap(), 104..114);
        // A lease taken past a range keeps it from coming back.
        let later = store.write(|c| lease(c, 100, 10)).await.unwrap();
        assert_eq!(later, 114..124);
        let passed = std::iter::once(110..114).collect::<Vec<_>>();
        let back = store.write(move |c| give_back(c, &passed)).await.unwrap();
        assert_eq!(back, 0);
        assert_eq!(store.write(|c| lease(c, 100, 1)).await.unwrap(), 124..125);
        // The recycling records cover only what stays leased.
        let ranges: Vec<(i64, i64)> = store
            .read(|c| {
                let mut st = c.prepare("SELECT start, stop FROM id_ranges ORDER BY start")?;
                let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
                Ok(rows.collect::<Result<Vec<_>, _>>()?)
            })
            .await
            .unwrap();
        assert_eq!(ranges, vec![(100, 104), (104, 114), (114, 124), (124, 125)]);
    }
}
