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
}
