//! The click log's own database file (`<database>-clicks`), attached to
//! the writer connection as `clicklog`: `click_log` and `click_batches`.
//!
//! Why a file of its own: in WAL mode every commit to a database file makes
//! each reader connection of that file drop its page cache and unmap its
//! whole memory map at its next read (SQLite's `pagerBeginReadTransaction`
//! on a changed WAL index). Click batches commit several times a second
//! under load, so with the log in `shortlink.db` the lookup readers faulted
//! their pages in again after every batch (`bench/NOTES.md`, issue 14).
//! Readers never attach this file; a batch's commit changes only it.
//!
//! Crash safety across the two files (SQLite commits attached WAL
//! databases one by one, not atomically): a batch (its id and its log row)
//! lives wholly in this file; `click_fold.folded_through` in the main file
//! decides which log rows are in the tables, and a fold deletes only the
//! rows an earlier, committed fold covered (`fold::fold_job`), so no order
//! of the two commits loses or doubles a click. The log's seqs start above
//! every seq the main file has recorded ([`attach`]), so a log file lost or
//! removed never makes new rows look folded.
//!
//! The main file keeps its own (empty) `click_log` and `click_batches`
//! from before: a backup carries the unfolded rows in them
//! (`store::sqlite::backup`), and [`adopt`] moves any rows found there into this
//! file at open.

use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

use rusqlite::{params, Connection};

use crate::store::sqlite::files::click_log;
use crate::store::{StoreError, StoreResult};

const TABLES: &str = "
CREATE TABLE IF NOT EXISTS clicklog.click_log (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    received_at  INTEGER NOT NULL,
    batch        BLOB NOT NULL,
    format       INTEGER NOT NULL DEFAULT 1
);
CREATE TABLE IF NOT EXISTS clicklog.click_batches (
    batch_id  BLOB PRIMARY KEY,
    seen_at   INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS clicklog.click_batches_seen ON click_batches(seen_at);
";

/// Attaches the log file of database `db` to `conn` as `clicklog`, making
/// it (with the database file's mode) when there is none. `tables`: also
/// creates its tables and sets it up for writing (WAL, `synchronous=FULL`),
/// which the writer does; the checkpointer attaches it only to checkpoint.
pub fn attach(conn: &Connection, db: &Path, tables: bool) -> StoreResult<()> {
    let file = click_log(db);
    if !file.exists() {
        // SQLite would make it with the umask's mode; it holds what the
        // database does (batch ids, visitor countries and referrers).
        let mode = std::fs::metadata(db).map_or(0o600, |m| m.mode() & 0o640);
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&file)
        {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => {
                return Err(StoreError::Unavailable(format!(
                    "cannot make the click log {}: {e}",
                    file.display()
                )))
            }
        }
    }
    let name = file
        .to_str()
        .ok_or_else(|| StoreError::Unavailable(format!("{} is not UTF-8", file.display())))?;
    conn.execute("ATTACH DATABASE ?1 AS clicklog", [name])?;
    if tables {
        conn.query_row("PRAGMA clicklog.journal_mode = WAL", [], |_| Ok(()))?;
        conn.execute_batch("PRAGMA clicklog.synchronous = FULL;")?;
        conn.execute_batch(TABLES)?;
    }
    Ok(())
}

/// At open, on the writer connection with the log attached and the main
/// schema migrated: moves the rows of the main file's `click_log` and
/// `click_batches` (a database from before the log had a file, or a
/// restored backup) into the log file, then makes the log's next seq
/// exceed every seq the main file knows. Two transactions, log file first:
/// a crash between them leaves rows in both, and the next open copies
/// them again as the same rows (same seq, same batch id).
pub fn adopt(conn: &Connection) -> StoreResult<u64> {
    let moved = conn.execute(
        "INSERT OR IGNORE INTO clicklog.click_log (seq, received_at, batch, format) \
         SELECT seq, received_at, batch, format FROM main.click_log",
        [],
    )?;
    conn.execute(
        "INSERT OR IGNORE INTO clicklog.click_batches (batch_id, seen_at) \
         SELECT batch_id, seen_at FROM main.click_batches",
        [],
    )?;
    conn.execute_batch("DELETE FROM main.click_log; DELETE FROM main.click_batches;")?;
    let floor: i64 = conn.query_row(
        "SELECT max(coalesce((SELECT seq FROM main.sqlite_sequence WHERE name = 'click_log'), 0), \
                    (SELECT folded_through FROM main.click_fold WHERE id = 1), \
                    coalesce((SELECT max(through) FROM main.click_fold_links), 0))",
        [],
        |r| r.get(0),
    )?;
    conn.execute(
        "INSERT INTO clicklog.sqlite_sequence (name, seq) SELECT 'click_log', ?1 \
         WHERE NOT EXISTS (SELECT 1 FROM clicklog.sqlite_sequence WHERE name = 'click_log')",
        params![floor],
    )?;
    conn.execute(
        "UPDATE clicklog.sqlite_sequence SET seq = ?1 WHERE name = 'click_log' AND seq < ?1",
        params![floor],
    )?;
    Ok(moved as u64)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use shortlink_core::ipc::{BatchId, ClickBatch};

    use super::*;
    use crate::store::sqlite::clicks::tests::{add_link, click, counted};
    use crate::store::sqlite::SqliteStore;

    fn batch(n: u8, link: u64, count: u32) -> ClickBatch {
        ClickBatch {
            batch_id: BatchId([n; 16]),
            clicks: vec![click(link, 100, false, None, count)],
        }
    }

    async fn data_version(store: &SqliteStore) -> i64 {
        store
            .read(|c| Ok(c.query_row("PRAGMA main.data_version", [], |r| r.get(0))?))
            .await
            .unwrap()
    }

    /// The point of the file: a reader sees no change of the database (so
    /// keeps its page cache and memory map) when click batches commit,
    /// and does see a write to a link.
    #[tokio::test]
    async fn click_batches_leave_the_readers_database_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("t.db"), 1, 10).unwrap();
        add_link(&store, 5, None).await;
        let before = data_version(&store).await;
        for n in 1..=3 {
            store
                .append_clicks(vec![batch(n, 5, 1)], 1000)
                .await
                .unwrap();
            assert_eq!(data_version(&store).await, before, "after batch {n}");
        }
        assert_eq!(counted(&store, 5).await.0, 3);
        add_link(&store, 6, None).await;
        assert_ne!(data_version(&store).await, before);
    }

    /// A lost log file costs its unfolded batches only: new batches get
    /// seqs past what the database folded, so they are not taken for
    /// folded ones after a crash.
    #[tokio::test]
    async fn a_new_log_file_continues_past_the_folded_seqs() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("t.db");
        {
            let store = SqliteStore::open(&db, 1, 10).unwrap();
            add_link(&store, 5, None).await;
            for n in 1..=3 {
                store
                    .append_clicks(vec![batch(n, 5, 1)], 1000)
                    .await
                    .unwrap();
                store.fold_clicks().await.unwrap();
            }
            store.close();
        }
        for file in &crate::store::sqlite::files::file_set(&db)[crate::store::sqlite::files::LOG..]
        {
            let _ = std::fs::remove_file(file);
        }
        {
            let store = SqliteStore::open(&db, 1, 10).unwrap();
            assert_eq!(counted(&store, 5).await.0, 3);
            store
                .append_clicks(vec![batch(9, 5, 4)], 1000)
                .await
                .unwrap();
            // Closed without a fold: like a crash after the ack.
            store.close();
        }
        let store = SqliteStore::open(&db, 1, 10).unwrap();
        assert_eq!(counted(&store, 5).await.0, 7);
        store.fold_clicks().await.unwrap();
        assert_eq!(counted(&store, 5).await.0, 7);
    }

    /// The log file is made with the database file's mode, whatever the
    /// umask: it is no more readable than the database.
    #[test]
    fn the_log_file_takes_the_database_files_mode() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("t.db");
        std::fs::write(&db, b"").unwrap();
        std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o600)).unwrap();
        let conn = Connection::open(&db).unwrap();
        attach(&conn, &db, true).unwrap();
        let mode = std::fs::metadata(click_log(&db))
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600);
    }
}
