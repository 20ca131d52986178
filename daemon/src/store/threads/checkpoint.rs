//! Keeping the WAL short: the checkpointer thread copies it back into the
//! database off the writer's path, and the writer starts it over when
//! writes that never pause keep the checkpointer from catching up.
//!
//! SQLite writes a WAL from its start again only when a commit finds every
//! frame in it copied back and no reader on it. Under a steady stream of
//! writes (16 connections creating links) every passive checkpoint ends
//! behind the commits made while it ran, so that never happens and the
//! WAL grows for as long as the stream lasts: 1.2 GB in 12 s of creates
//! for a 32 MB database, measured. Each new WAL page then also costs the
//! file system a fresh block, zeroed (a tenth of the server's CPU in that
//! run). Past [`RESTART_FRAMES`], the writer itself runs a `RESTART`
//! checkpoint between two groups: it copies what the last passive one
//! left, waits a moment for readers to leave the WAL, and the next commit
//! starts it over on pages the file already has.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rusqlite::Connection;

use super::BUSY_TIMEOUT;

/// Least time between two checkpoints: what commits in this time is
/// copied back in one go (one sync of the database file for all of it).
const CHECKPOINT_EVERY: Duration = Duration::from_millis(200);

/// WAL frames (pages) past which the writer starts the WAL over: 64 MiB
/// of 4 KiB pages.
pub(super) const RESTART_FRAMES: u64 = 16_384;

/// Longest the writer waits for readers to leave the WAL (it holds every
/// write meanwhile); a reader still on it then makes it try again later.
const RESTART_WAIT: Duration = Duration::from_millis(20);

/// Least time after a try at starting the WAL over that failed (a reader
/// on it) before the next.
const RESTART_EVERY: Duration = Duration::from_secs(1);

/// How long the WAL is, as the last checkpoint found it: written by the
/// checkpointer, read by the writer.
#[derive(Debug, Default)]
pub(super) struct WalLength {
    frames: AtomicU64,
}

/// Copies the WALs (the database's and the click log's) back into their
/// files after commits, at most every [`CHECKPOINT_EVERY`], on its own
/// connection and thread: PASSIVE, so it never blocks the writer or the
/// readers, and with `synchronous=FULL`, so the database file is synced
/// before SQLite reuses the WAL. Durability is the WAL's (synced at every
/// commit by the writer); this only bounds the WAL's size, which SQLite's
/// autocheckpoint did inside the commit.
pub(super) fn checkpoint_loop(
    conn: Connection,
    rx: std::sync::mpsc::Receiver<()>,
    length: Arc<WalLength>,
) {
    while rx.recv().is_ok() {
        let mut longest = 0;
        for schema in ["main", "clicklog"] {
            let sql = format!("PRAGMA {schema}.wal_checkpoint(PASSIVE)");
            match conn.query_row(&sql, [], |r| r.get::<_, i64>(1)) {
                Ok(frames) => longest = longest.max(frames.max(0) as u64),
                Err(e) => tracing::warn!(error = %e, schema, "WAL checkpoint failed"),
            }
        }
        length.frames.store(longest, Relaxed);
        std::thread::sleep(CHECKPOINT_EVERY);
    }
}

/// The writer's side: when it last tried to start the WAL over.
#[derive(Debug)]
pub(super) struct Restarts {
    length: Arc<WalLength>,
    limit: u64,
    tried: Option<Instant>,
}

impl Restarts {
    pub(super) fn new(length: Arc<WalLength>, limit: u64) -> Self {
        Self {
            length,
            limit,
            tried: None,
        }
    }

    /// Between two groups: starts the WAL over when it is past the limit
    /// (unless the last try failed a moment ago). The writer connection holds the
    /// write lock meanwhile, so no commit can slip in behind the copy.
    pub(super) fn restart_if_long(&mut self, conn: &Connection) {
        if self.length.frames.load(Relaxed) < self.limit
            || self.tried.is_some_and(|t| t.elapsed() < RESTART_EVERY)
        {
            return;
        }
        let _ = conn.busy_timeout(RESTART_WAIT);
        let outcome = conn.query_row("PRAGMA wal_checkpoint(RESTART)", [], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?))
        });
        let _ = conn.busy_timeout(BUSY_TIMEOUT);
        match outcome {
            // The checkpointer's next pass says how long it is again.
            Ok((0, _)) => {
                self.length.frames.store(0, Relaxed);
                self.tried = None;
            }
            Ok((_, frames)) => {
                self.tried = Some(Instant::now());
                tracing::debug!(
                    frames,
                    "the WAL is long and a reader is still on it: starting it over later"
                );
            }
            Err(e) => {
                self.tried = Some(Instant::now());
                tracing::warn!(error = %e, "cannot start the WAL over");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Commits that never pause, each waiting for its sync as the writer's
    /// do, with the checkpointer running beside them: the WAL stays near
    /// the limit instead of holding every commit.
    #[test]
    fn writes_that_never_pause_keep_the_wal_short() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.db");
        let open = || {
            let c = Connection::open(&path).unwrap();
            c.busy_timeout(BUSY_TIMEOUT).unwrap();
            c.execute(
                "ATTACH DATABASE ?1 AS clicklog",
                [dir.path().join("log.db").to_str().unwrap()],
            )
            .unwrap();
            c
        };
        let writer = open();
        writer
            .execute_batch(
                "PRAGMA journal_mode = WAL; PRAGMA clicklog.journal_mode = WAL; \
                 PRAGMA synchronous = FULL; PRAGMA wal_autocheckpoint = 0; \
                 CREATE TABLE t (id INTEGER PRIMARY KEY, n INTEGER, pad BLOB); \
                 WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 2000) \
                 INSERT INTO t SELECT i, 0, zeroblob(200) FROM s;",
            )
            .unwrap();
        let length = Arc::new(WalLength::default());
        let (nudge, nudged) = std::sync::mpsc::sync_channel(1);
        let checkpointer = {
            let (conn, length) = (open(), Arc::clone(&length));
            std::thread::spawn(move || checkpoint_loop(conn, nudged, length))
        };
        let limit = 256;
        let mut restarts = Restarts::new(length, limit);
        let commits: u64 = 6_000;
        for i in 0..commits {
            // Rows far apart: each commit writes a page of its own.
            let id = ((i * 37) % 2000 + 1) as i64;
            writer
                .execute("UPDATE t SET n = n + 1 WHERE id = ?1", [id])
                .unwrap();
            let _ = nudge.try_send(());
            restarts.restart_if_long(&writer);
        }
        drop(nudge);
        checkpointer.join().unwrap();
        let frame = 4096 + 24;
        let frames = std::fs::metadata(dir.path().join("w.db-wal"))
            .unwrap()
            .len()
            / frame;
        // The limit, and what commits while the checkpointer sleeps and
        // copies before it reports the length.
        assert!(
            frames < commits / 3,
            "{frames} frames in the WAL after {commits} commits (limit {limit})"
        );
    }
}
