//! The edge change log (`edge_changes`): every write that changes what the
//! nginx workers may hold for a link appends a row in its own transaction
//! ([`record`]), so a change is logged exactly when it is stored. The daemon
//! pushes the rows to subscribed workers in order (`crate::edge`), each
//! batch followed by its position, and replays the rows after a returning
//! worker's position ([`since`]); only when that position is not in the
//! log (another database, or pruned) does the worker drop its cache.

use rusqlite::{params, Connection, OptionalExtension};
use shortlink_core::ipc::ChangePosition;

use crate::store::changes::KEEP;
use crate::store::{Change, StoreResult};

/// Appends one change in the caller's transaction and prunes rows past
/// [`KEEP`].
pub fn record(
    conn: &Connection,
    link_id: u64,
    old_alias: Option<&str>,
    new_alias: Option<&str>,
) -> StoreResult<()> {
    let seq: i64 = conn
        .prepare_cached(
            "INSERT INTO edge_changes (link_id, old_alias, new_alias) VALUES (?1, ?2, ?3) \
             RETURNING seq",
        )?
        .query_row(params![link_id as i64, old_alias, new_alias], |r| r.get(0))?;
    if seq as u64 > KEEP && (seq as u64).is_multiple_of(1024) {
        conn.prepare_cached("DELETE FROM edge_changes WHERE seq <= ?1")?
            .execute([seq - KEEP as i64])?;
    }
    Ok(())
}

/// Which database this is, and its newest change (0: none yet).
pub fn head(conn: &Connection) -> StoreResult<ChangePosition> {
    let store: i64 = conn.query_row("SELECT store_id FROM store_meta WHERE id = 1", [], |r| {
        r.get(0)
    })?;
    let seq: Option<i64> = conn
        .query_row(
            "SELECT seq FROM sqlite_sequence WHERE name = 'edge_changes'",
            [],
            |r| r.get(0),
        )
        .optional()?;
    Ok(ChangePosition {
        store: store as u64,
        seq: seq.unwrap_or(0) as u64,
    })
}

/// The changes after `from` up to and including `to`, oldest first; `None`
/// when the log cannot say (rows after `from` were pruned).
pub fn between(conn: &Connection, from: u64, to: u64) -> StoreResult<Option<Vec<Change>>> {
    if from >= to {
        return Ok(Some(Vec::new()));
    }
    let oldest: Option<i64> =
        conn.query_row("SELECT min(seq) FROM edge_changes", [], |r| r.get(0))?;
    match oldest {
        Some(oldest) if oldest as u64 <= from + 1 => {}
        _ => return Ok(None),
    }
    let mut st = conn.prepare_cached(
        "SELECT seq, link_id, old_alias, new_alias FROM edge_changes \
         WHERE seq > ?1 AND seq <= ?2 ORDER BY seq",
    )?;
    let rows = st.query_map([from as i64, to as i64], |r| {
        Ok(Change {
            seq: r.get::<_, i64>(0)? as u64,
            link_id: r.get::<_, i64>(1)? as u64,
            old_alias: r.get(2)?,
            new_alias: r.get(3)?,
        })
    })?;
    Ok(Some(rows.collect::<Result<_, _>>()?))
}

/// What a worker returning at `since` is sent: the changes after it (up to
/// `head`), or `None` when it must drop its cache.
pub fn since(
    conn: &Connection,
    since: Option<ChangePosition>,
    head: ChangePosition,
) -> StoreResult<Option<Vec<Change>>> {
    match since {
        Some(p) if p.store == head.store && p.seq <= head.seq => between(conn, p.seq, head.seq),
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sqlite::tests::temp_store;

    fn pos(store: u64, seq: u64) -> Option<ChangePosition> {
        Some(ChangePosition { store, seq })
    }

    #[tokio::test]
    async fn changes_replay_from_a_position_of_this_database_only() {
        let (_dir, store) = temp_store();
        let head0 = store.read(head).await.unwrap();
        assert_eq!(head0.seq, 0);
        store
            .write(|c| {
                record(c, 1, None, Some("a"))?;
                record(c, 2, None, None)?;
                record(c, 1, Some("a"), Some("b"))
            })
            .await
            .unwrap();
        let h = store.read(head).await.unwrap();
        assert_eq!((h.store, h.seq), (head0.store, 3));
        let all = store.read(move |c| since(c, pos(h.store, 0), h)).await;
        let all = all.unwrap().unwrap();
        assert_eq!(all.iter().map(|c| c.seq).collect::<Vec<_>>(), [1, 2, 3]);
        assert_eq!(all[2].old_alias.as_deref(), Some("a"));
        assert_eq!(all[2].new_alias.as_deref(), Some("b"));
        let tail = store.read(move |c| since(c, pos(h.store, 2), h)).await;
        assert_eq!(tail.unwrap().unwrap().len(), 1);
        let none = store.read(move |c| since(c, pos(h.store, 3), h)).await;
        assert_eq!(none.unwrap().unwrap(), vec![]);
        // Another database, a position ahead of the log, or none: reset.
        for p in [pos(h.store ^ 1, 1), pos(h.store, 4), None] {
            let r = store.read(move |c| since(c, p, h)).await.unwrap();
            assert_eq!(r, None, "{p:?}");
        }
    }

    #[tokio::test]
    async fn a_rolled_back_write_logs_nothing_and_pruned_rows_force_a_reset() {
        let (_dir, store) = temp_store();
        let failed = store
            .write(|c| {
                record(c, 9, None, Some("x"))?;
                Err::<(), _>(crate::store::StoreError::Conflict("test".into()))
            })
            .await;
        assert!(failed.is_err());
        assert_eq!(store.read(head).await.unwrap().seq, 0);
        store
            .write(|c| {
                for id in 0..3 {
                    record(c, id, None, None)?;
                }
                c.execute("DELETE FROM edge_changes WHERE seq <= 2", [])?;
                Ok(())
            })
            .await
            .unwrap();
        let h = store.read(head).await.unwrap();
        let p = h.store;
        let gone = store.read(move |c| since(c, pos(p, 0), h)).await.unwrap();
        assert_eq!(gone, None, "rows 1 and 2 were pruned");
        let kept = store.read(move |c| since(c, pos(p, 2), h)).await.unwrap();
        assert_eq!(kept.unwrap().len(), 1);
    }
}
