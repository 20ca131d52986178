//! Read transactions begun and ended with cached statements.
//!
//! Reads that must see one moment of the database (a page of links and the
//! clicks not folded yet, the edge's resume) run inside one read
//! transaction, and so does a burst of edge lookups, to take the read lock
//! once. `Connection::unchecked_transaction` parses `BEGIN` and `COMMIT`
//! afresh each time, which cost a burst of one edge miss more than reading
//! its link; a [`ReadSnapshot`] runs the connection's cached statements.

use rusqlite::Connection;

use crate::store::StoreResult;

/// A read transaction on a connection in autocommit mode; ended when
/// dropped.
#[must_use = "the snapshot ends when this is dropped"]
pub struct ReadSnapshot<'c> {
    conn: &'c Connection,
}

impl<'c> ReadSnapshot<'c> {
    /// Begins a read transaction: every read on `conn` until the snapshot
    /// is dropped sees the same database.
    pub fn begin(conn: &'c Connection) -> StoreResult<Self> {
        conn.prepare_cached("BEGIN")?.execute([])?;
        Ok(Self { conn })
    }
}

impl Drop for ReadSnapshot<'_> {
    fn drop(&mut self) {
        if self.conn.is_autocommit() {
            return;
        }
        // Nothing was written: COMMIT only lets go of the snapshot. Should
        // it fail, ROLLBACK does the same, so the connection never keeps a
        // snapshot that would hold back the WAL's checkpoints.
        let ended = self
            .conn
            .prepare_cached("COMMIT")
            .and_then(|mut s| s.execute([]));
        if let Err(e) = ended {
            tracing::warn!(error = %e, "cannot end a read transaction, rolling it back");
            if let Err(e) = self.conn.execute_batch("ROLLBACK") {
                tracing::error!(error = %e, "cannot roll back a read transaction");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sqlite::tests::logged_at;

    fn wal_pair() -> (tempfile::TempDir, Connection, Connection) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        let w = Connection::open(&path).unwrap();
        w.execute_batch("PRAGMA journal_mode=WAL; CREATE TABLE t(x); INSERT INTO t VALUES (1);")
            .unwrap();
        let r = Connection::open(&path).unwrap();
        (dir, w, r)
    }

    fn count(c: &Connection) -> i64 {
        c.query_row("SELECT count(*) FROM t", [], |row| row.get(0))
            .unwrap()
    }

    #[test]
    fn reads_inside_see_one_moment_and_the_next_snapshot_sees_the_write() {
        let (_dir, w, r) = wal_pair();
        {
            let _snapshot = ReadSnapshot::begin(&r).unwrap();
            assert!(!r.is_autocommit());
            assert_eq!(count(&r), 1);
            w.execute("INSERT INTO t VALUES (2)", []).unwrap();
            assert_eq!(count(&r), 1, "a write after the first read is not seen");
        }
        assert!(
            r.is_autocommit(),
            "dropping the snapshot ends the transaction"
        );
        let _snapshot = ReadSnapshot::begin(&r).unwrap();
        assert_eq!(count(&r), 2);
    }

    #[test]
    fn a_snapshot_ended_by_hand_is_not_ended_again() {
        let (_dir, _w, r) = wal_pair();
        let logged = logged_at(tracing::Level::WARN, || {
            let snapshot = ReadSnapshot::begin(&r).unwrap();
            r.execute_batch("ROLLBACK").unwrap();
            drop(snapshot);
        });
        assert_eq!(logged, "", "no COMMIT or ROLLBACK tried on no transaction");
        assert!(r.is_autocommit());
        let _again = ReadSnapshot::begin(&r).unwrap();
    }

    #[test]
    fn a_dropped_snapshot_ends_quietly() {
        let (_dir, _w, r) = wal_pair();
        let logged = logged_at(tracing::Level::WARN, || {
            let _snapshot = ReadSnapshot::begin(&r).unwrap();
            assert_eq!(count(&r), 1);
        });
        assert_eq!(logged, "");
        assert!(r.is_autocommit());
    }

    #[test]
    fn beginning_inside_a_transaction_is_an_error_and_leaves_it_open() {
        let (_dir, _w, r) = wal_pair();
        let outer = ReadSnapshot::begin(&r).unwrap();
        assert!(ReadSnapshot::begin(&r).is_err());
        assert!(!r.is_autocommit());
        drop(outer);
        assert!(r.is_autocommit());
    }
}
