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
//!
//! Writes wait while the restart copies and syncs, which with a million
//! links in the database took 35 ms at every restart (about one every
//! 0.6 s under 16 connections creating links: create_c16's p99 went from
//! 6 to 35 ms). Two things keep it short:
//!
//! * Past the limit, the checkpointer syncs the database file after each
//!   pass ([`DatabaseFile::sync_copied`]). SQLite syncs it only after a
//!   pass that copied the whole WAL, which under such writes only the
//!   restart does, so it used to flush everything every pass had copied
//!   since the last restart.
//! * Past the limit its passes also follow one another, each copying what
//!   came in during the last, and the writer restarts after a short one,
//!   so little is left for it to copy. A WAL that never gets such a pass
//!   (a disk too slow for the writes) is started over anyway at
//!   [`FORCE_FACTOR`] times the limit.
//!
//! Measured with `bench/restarts.py` (BENCHMARKS.md): the restart now
//! holds writes 1.5 ms (median), and create_c16's p99 is 5–7 ms.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rusqlite::Connection;

use super::repeated::Repeated;
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

/// A passive pass this short leaves little for the restart to copy: the
/// commits of a few milliseconds.
const SHORT_PASS: Duration = Duration::from_millis(8);

/// The writer starts the WAL over at this many times the limit even when
/// no pass was short.
const FORCE_FACTOR: u64 = 4;

/// How long the WAL is, as the last checkpoint found it: written by the
/// checkpointer, read by the writer.
#[derive(Debug)]
pub(super) struct WalLength {
    /// Frames past which the WAL is started over.
    limit: u64,
    frames: AtomicU64,
    /// The WAL is past the limit and the last pass was short: the moment
    /// to start it over.
    settled: AtomicBool,
}

impl WalLength {
    pub(super) fn new(limit: u64) -> Self {
        Self {
            limit,
            frames: AtomicU64::new(0),
            settled: AtomicBool::new(false),
        }
    }

    /// After a pass that found `frames` and took `took`: true when the
    /// next should follow at once (the WAL is past the limit and no
    /// restart is due yet). Once one is due (after a short pass, or at the
    /// forced length) the checkpointer pauses as usual, out of the
    /// writer's way: a checkpoint running makes its restart fail, and the
    /// writer then waits [`RESTART_EVERY`] before it tries again.
    fn passed(&self, frames: u64, took: Duration) -> bool {
        let long = frames >= self.limit;
        self.frames.store(frames, Relaxed);
        self.settled.store(long && took < SHORT_PASS, Relaxed);
        long && !self.restart_due()
    }

    /// The writer's question: start the WAL over now?
    fn restart_due(&self) -> bool {
        let frames = self.frames.load(Relaxed);
        frames >= self.limit && (self.settled.load(Relaxed) || frames >= self.limit * FORCE_FACTOR)
    }

    /// The writer started it over.
    fn restarted(&self) {
        self.settled.store(false, Relaxed);
        self.frames.store(0, Relaxed);
    }
}

/// Copies the WALs (the database's and the click log's) back into their
/// files after commits, at most every [`CHECKPOINT_EVERY`], on its own
/// connection and thread: PASSIVE, so it never blocks the writer or the
/// readers, and with `synchronous=FULL`, so the database file is synced
/// before SQLite reuses the WAL. Durability is the WAL's (synced at every
/// commit by the writer); this only bounds the WAL's size, which SQLite's
/// autocheckpoint did inside the commit. Past the limit, passes follow
/// one another (each after the writer's next commit) until one is short.
pub(super) fn checkpoint_loop(
    conn: Connection,
    rx: std::sync::mpsc::Receiver<()>,
    length: Arc<WalLength>,
) {
    let mut checkpointer = Checkpointer::new(&conn, length);
    while rx.recv().is_ok() {
        if !checkpointer.pass(&conn) {
            std::thread::sleep(CHECKPOINT_EVERY);
        }
    }
}

/// The checkpointer's state between passes: both database files and the
/// length it reports to the writer.
struct Checkpointer {
    files: Vec<DatabaseFile>,
    length: Arc<WalLength>,
}

impl Checkpointer {
    fn new(conn: &Connection, length: Arc<WalLength>) -> Self {
        let files = ["main", "clicklog"]
            .into_iter()
            .map(|schema| DatabaseFile::open(conn, schema))
            .collect();
        Self { files, length }
    }

    /// One passive pass over both files, its length told to the writer:
    /// true when the next pass should follow at once.
    fn pass(&mut self, conn: &Connection) -> bool {
        let started = Instant::now();
        let mut longest = 0;
        for file in &mut self.files {
            if let Some((frames, copied)) = file.pass(conn) {
                if frames >= self.length.limit {
                    file.sync_copied(copied);
                }
                longest = longest.max(frames);
            }
        }
        self.length.passed(longest, started.elapsed())
    }
}

/// One database's side of the checkpointer.
struct DatabaseFile {
    schema: &'static str,
    /// Its passive checkpoint.
    pass: String,
    /// The database file, for syncing what passes copy into it.
    file: Option<std::fs::File>,
    /// WAL frames copied back as of the last sync of `file`.
    synced: u64,
    /// Passes that failed, and syncs that failed, as told in the log.
    pass_failing: Repeated,
    sync_failing: Repeated,
}

impl DatabaseFile {
    fn open(conn: &Connection, schema: &'static str) -> Self {
        let file = schema_path(conn, schema).and_then(|path| std::fs::File::open(path).ok());
        if file.is_none() {
            tracing::warn!(schema, "cannot open the database file to sync checkpoints");
        }
        Self {
            schema,
            pass: format!("PRAGMA {schema}.wal_checkpoint(PASSIVE)"),
            file,
            synced: 0,
            pass_failing: Repeated::default(),
            sync_failing: Repeated::default(),
        }
    }

    /// A passive checkpoint: the WAL's length and how much of it has been
    /// copied back, in frames, if it ran.
    fn pass(&mut self, conn: &Connection) -> Option<(u64, u64)> {
        let counts = conn.query_row(&self.pass, [], |r| {
            Ok((r.get::<_, i64>(1)?, r.get::<_, i64>(2)?))
        });
        match counts {
            Ok((frames, copied)) => {
                if let Some(failures) = self.pass_failing.worked() {
                    tracing::info!(schema = self.schema, failures, "WAL checkpoints work again");
                }
                Some((frames.max(0) as u64, copied.max(0) as u64))
            }
            Err(e) => {
                if let Some(not_logged) = self.pass_failing.failed(Instant::now()) {
                    tracing::warn!(error = %e, schema = self.schema, not_logged,
                        "WAL checkpoint failed (while it fails, logged at most every minute)");
                }
                None
            }
        }
    }

    /// Syncs the database file if passes copied anything since the last
    /// sync (`copied`: the last pass's count).
    ///
    /// SQLite syncs the database file only after a pass that copied the
    /// whole WAL, as it stands when the pass ends. Under writes that never
    /// pause no pass does (commits come in while it copies; the counts it
    /// returns are as of its start, so they cannot tell), and what passes
    /// copy stays dirty in the page cache until the next complete one: the
    /// writer's restart, which then waited for all of it to reach the disk
    /// (35 ms with a million links, the copies scattered over the file).
    /// Passes past the limit sync here instead, off the writer's path. Not
    /// every pass: a page copied again and again would be written to the
    /// disk at each, for 20 µs more server CPU per create, measured.
    fn sync_copied(&mut self, copied: u64) {
        if copied < self.synced {
            // The WAL was started over since.
            self.synced = 0;
        }
        let Some(file) = &self.file else {
            return;
        };
        if copied == self.synced {
            return;
        }
        match file.sync_data() {
            Ok(()) => {
                self.synced = copied;
                if let Some(failures) = self.sync_failing.worked() {
                    tracing::info!(
                        schema = self.schema,
                        failures,
                        "the database file syncs again"
                    );
                }
            }
            Err(e) => {
                if let Some(not_logged) = self.sync_failing.failed(Instant::now()) {
                    tracing::warn!(error = %e, schema = self.schema, not_logged,
                        "cannot sync the database file (while it fails, logged at most every minute)");
                }
            }
        }
    }
}

/// The file behind `schema` of `conn` (none for a database in memory).
fn schema_path(conn: &Connection, schema: &str) -> Option<String> {
    let mut path = None;
    let listed = conn.pragma_query(None, "database_list", |row| {
        let (name, file): (String, String) = (row.get(1)?, row.get(2)?);
        if name == schema && !file.is_empty() {
            path = Some(file);
        }
        Ok(())
    });
    listed.ok().and(path)
}

/// The writer's side: when it last tried to start the WAL over.
#[derive(Debug)]
pub(super) struct Restarts {
    length: Arc<WalLength>,
    tried: Option<Instant>,
}

impl Restarts {
    pub(super) fn new(length: Arc<WalLength>) -> Self {
        Self {
            length,
            tried: None,
        }
    }

    /// Between two groups: starts the WAL over when it is past the limit
    /// and a short pass just ran (unless the last try failed a moment
    /// ago). The writer connection holds the write lock meanwhile, so no
    /// commit can slip in behind the copy.
    pub(super) fn restart_if_long(&mut self, conn: &Connection) {
        if !self.length.restart_due() || self.tried.is_some_and(|t| t.elapsed() < RESTART_EVERY) {
            return;
        }
        let _ = conn.busy_timeout(RESTART_WAIT);
        let started = Instant::now();
        let outcome = conn.query_row("PRAGMA wal_checkpoint(RESTART)", [], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?))
        });
        let _ = conn.busy_timeout(BUSY_TIMEOUT);
        match outcome {
            // The checkpointer's next pass says how long it is again.
            Ok((0, frames)) => {
                tracing::debug!(
                    frames,
                    held_ms = started.elapsed().as_secs_f64() * 1e3,
                    "started the WAL over"
                );
                self.length.restarted();
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
    use crate::store::sqlite::tests::logged_at;

    /// Past the limit the writer waits for a short pass, unless the WAL
    /// reached the forced length; the checkpointer goes on at once only
    /// after long passes past the limit, while no restart is due.
    #[test]
    fn a_restart_waits_for_a_short_pass_up_to_the_forced_length() {
        let long_pass = SHORT_PASS * 4;
        let length = WalLength::new(100);
        assert!(!length.passed(99, long_pass), "under the limit: pause");
        assert!(!length.restart_due());
        assert!(
            length.passed(150, long_pass),
            "long pass past the limit: go on"
        );
        assert!(!length.restart_due(), "not after a long pass");
        assert!(
            !length.passed(160, Duration::from_millis(1)),
            "short pass: pause"
        );
        assert!(length.restart_due());
        length.restarted();
        assert!(!length.restart_due());
        assert!(length.passed(100 * FORCE_FACTOR - 1, long_pass));
        assert!(!length.restart_due());
        assert!(
            !length.passed(100 * FORCE_FACTOR, long_pass),
            "a restart is due: pause, out of the writer's way"
        );
        assert!(length.restart_due(), "forced at {FORCE_FACTOR}x the limit");
        assert!(!length.passed(20, Duration::from_millis(1)));
        assert!(
            !length.restart_due(),
            "a short pass under the limit is no reason"
        );
    }

    /// A disk that fails every checkpoint and every sync is told once (with
    /// the error), not at every pass, and its recovery once.
    #[test]
    fn failing_passes_and_syncs_are_logged_once_per_run() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        let conn = Connection::open(&path).unwrap();
        conn.pragma_update(None, "journal_mode", "WAL").unwrap();
        // `fsync` of a pipe fails (EINVAL), as a failing disk's would.
        let (_reader, writer) = std::io::pipe().unwrap();
        let mut file = DatabaseFile {
            schema: "main",
            pass: "PRAGMA nosuch.wal_checkpoint(PASSIVE)".into(),
            file: Some(std::fs::File::from(std::os::fd::OwnedFd::from(writer))),
            synced: 0,
            pass_failing: Repeated::default(),
            sync_failing: Repeated::default(),
        };
        let logged = logged_at(tracing::Level::INFO, || {
            for copied in 1..=50 {
                assert_eq!(file.pass(&conn), None);
                file.sync_copied(copied);
            }
        });
        assert_eq!(
            logged.matches("WAL checkpoint failed").count(),
            1,
            "{logged}"
        );
        assert!(logged.contains("nosuch"), "the error is in it: {logged}");
        assert_eq!(
            logged.matches("cannot sync the database file").count(),
            1,
            "{logged}"
        );
        assert_eq!(file.synced, 0, "no sync counted");
        file.pass = "PRAGMA main.wal_checkpoint(PASSIVE)".into();
        file.file = Some(std::fs::File::open(&path).unwrap());
        let logged = logged_at(tracing::Level::INFO, || {
            assert!(file.pass(&conn).is_some());
            file.sync_copied(51);
            assert!(file.pass(&conn).is_some());
            file.sync_copied(52);
        });
        assert_eq!(
            logged.matches("WAL checkpoints work again").count(),
            1,
            "{logged}"
        );
        assert_eq!(
            logged.matches("the database file syncs again").count(),
            1,
            "{logged}"
        );
        assert!(logged.contains("failures=50"), "{logged}");
        assert_eq!(file.synced, 52);
    }

    /// Commits that never pause, with the checkpointer's passive passes
    /// always behind them, as under a steady stream of writes: the WAL
    /// stays within the forced length instead of holding every commit.
    ///
    /// Driven step by step, not by two threads racing: a reader holds a
    /// snapshot while the commits of a step land, so the pass after them
    /// cannot copy those (just as commits made while a pass runs are left
    /// for the next), and SQLite never finds the WAL wholly copied at a
    /// commit. Only the writer's restart starts it over, whatever the
    /// disk's speed.
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
        let limit = 64;
        let length = Arc::new(WalLength::new(limit));
        let conn = open();
        let mut checkpointer = Checkpointer::new(&conn, Arc::clone(&length));
        let reader = open();
        let mut restarts = Restarts::new(length);
        let (steps, per_step) = (1_000_u64, 8_u64);
        for step in 0..steps {
            reader
                .execute_batch("BEGIN; SELECT count(*) FROM t;")
                .unwrap();
            for i in 0..per_step {
                // Rows far apart: each commit writes a page of its own.
                let id = (((step * per_step + i) * 37) % 2000 + 1) as i64;
                writer
                    .execute("UPDATE t SET n = n + 1 WHERE id = ?1", [id])
                    .unwrap();
            }
            checkpointer.pass(&conn);
            reader.execute_batch("COMMIT").unwrap();
            restarts.restart_if_long(&writer);
        }
        let commits = steps * per_step;
        let frames = std::fs::metadata(dir.path().join("w.db-wal"))
            .unwrap()
            .len()
            / (4096 + 24);
        assert!(frames > 0, "the WAL was written");
        // The forced length, and the step that lands before the pass that
        // reports it.
        assert!(
            frames <= limit * FORCE_FACTOR + 2 * per_step,
            "{frames} frames in the WAL after {commits} commits (limit {limit})"
        );
    }
}
