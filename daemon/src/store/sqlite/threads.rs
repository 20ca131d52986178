//! The database threads: one writer that groups concurrent write jobs
//! into one transaction (a savepoint per job), a checkpointer that copies
//! the WAL back into the database off the writer's path, and readers that
//! run read jobs in parallel. [`super::SqliteStore`] only sends them closures. The
//! writer's loop is in `threads/writer.rs`.

use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::app_secret::SecretSeal;
use rusqlite::Connection;
use tokio::sync::oneshot;

use super::keys::register_secret_functions;
use super::watch::FileWatch;
use crate::store::{StoreError, StoreResult};

mod checkpoint;
mod repeated;
mod writer;
use crate::store::StoreStats;
use checkpoint::{checkpoint_loop, Restarts, WalLength, RESTART_FRAMES};
use writer::{writer_loop, Writer};

/// How long a connection waits for a lock another holds.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Delivers a write job's result once its transaction is over (`Some`: the
/// commit failed).
pub(super) type Deliver = Box<dyn FnOnce(Option<StoreError>) + Send>;
/// A write job: runs on the connection (or gets the error that kept the
/// transaction from starting), says how it went and hands back its
/// delivery.
pub(super) type WriteJob =
    Box<dyn FnOnce(Result<&Connection, StoreError>) -> (JobOutcome, Deliver) + Send>;

/// How a write job went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum JobOutcome {
    /// Its changes stay in the transaction.
    Done,
    /// The caller's mistake (a name taken, a row that does not exist):
    /// rolled back to its savepoint, not a failure of the store.
    Refused,
    /// It failed for a reason of its own that is the daemon's (a corrupt
    /// value, a panic): rolled back to its savepoint.
    Failed,
    /// It failed because the database cannot be written (disk full, I/O
    /// error): rolled back, and the store is degraded.
    Storage(String),
}
/// A read job: runs on a reader connection and delivers its own result.
pub(super) type ReadJob = Box<dyn FnOnce(&Connection) + Send>;

/// What the writer thread is sent.
pub(super) enum WriteMsg {
    /// A job grouped with the others queued into one transaction.
    Job(WriteJob),
    /// A job in a transaction of its own, with no savepoint (which would
    /// copy every page the job first changes to the sub-journal): a big
    /// job (an import chunk) on the bulk connection, or a fold on the
    /// writer's.
    Alone(WriteJob, Lane),
    /// Finish the queued jobs, checkpoint and stop; answered when done.
    Close(std::sync::mpsc::Sender<()>),
}

/// The connection a job alone in its transaction runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Lane {
    /// The writer's (small page cache, the click log attached).
    Writer,
    /// The bulk connection (a page cache sized for import chunks).
    Bulk,
}

/// What a reader thread is sent.
pub(super) enum ReadMsg {
    /// A read job.
    Job(ReadJob),
    /// Stop (one per reader).
    Close,
}

/// The running threads and the channels to them.
pub(super) struct Threads {
    /// To the writer.
    pub(super) writer: std::sync::mpsc::Sender<WriteMsg>,
    /// To the readers.
    pub(super) readers: crossbeam_channel::Sender<ReadMsg>,
    /// How many readers run (so as many `Close`s stop them).
    pub(super) reader_count: usize,
    /// Every thread, to join at close.
    pub(super) handles: Vec<JoinHandle<()>>,
}

/// Bytes of the database file SQLite may map into memory for reading.
/// Reads of pages not in the page cache then cost a memory access instead
/// of a `pread` system call; writes still go through the WAL (SQLite maps
/// the file read-only), so durability is unchanged.
const MMAP_SIZE: i64 = 1 << 30;
/// Page cache of the writer connection, in KiB (negative `cache_size`):
/// SQLite's default. A bigger one costs more than it saves for small
/// transactions: SQLite walks the cache's whole hash table when it drops
/// pages, which it does at many commits, and pages come from the mmap.
const WRITER_CACHE_KIB: i64 = 2 * 1024;
/// Page cache of the bulk connection (import chunks of tens of thousands
/// of rows): large enough that every page a chunk dirties stays in memory
/// until the commit instead of spilling to the WAL and being written again.
const BULK_CACHE_KIB: i64 = 64 * 1024;
/// Page cache of each reader connection, in KiB.
const READER_CACHE_KIB: i64 = 8 * 1024;

fn configure(conn: &Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "mmap_size", MMAP_SIZE)?;
    Ok(())
}

/// Opens the writer connection (WAL mode) with the click log attached
/// (`clicks::logdb`); the caller migrates the schema on it before
/// [`start`] hands it to the writer thread.
pub(super) fn open_writer(path: &Path, seal: &Option<SecretSeal>) -> StoreResult<Connection> {
    let conn = Connection::open(path)?;
    register_secret_functions(&conn, seal.clone())?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    configure(&conn)?;
    // synchronous=NORMAL in WAL mode survives a process crash (the
    // WAL is written before commit returns); FULL also survives power
    // loss, which is what an acknowledged click batch promises.
    conn.pragma_update(None, "synchronous", "FULL")?;
    conn.pragma_update(None, "cache_size", -WRITER_CACHE_KIB)?;
    // Checkpoints run on their own thread (see `checkpoint_loop`), not
    // inside the commit that crossed the threshold: a writer thread that
    // copies tens of MiB back into the database holds every queued
    // write (creates, click acks) for that long.
    conn.pragma_update(None, "wal_autocheckpoint", 0)?;
    super::clicks::logdb::attach(&conn, path, true)?;
    Ok(conn)
}

/// Opens a read-only connection, as the reader threads' and the inline
/// readers' (`super::inline`).
pub(super) fn open_reader(path: &Path, seal: &Option<SecretSeal>) -> StoreResult<Connection> {
    let conn = Connection::open(path)?;
    register_secret_functions(&conn, seal.clone())?;
    configure(&conn)?;
    conn.pragma_update(None, "query_only", "ON")?;
    conn.pragma_update(None, "cache_size", -READER_CACHE_KIB)?;
    Ok(conn)
}

/// Opens the other connections and starts the writer (on `writer_conn`),
/// the checkpointer and `readers` reader threads.
pub(super) fn start(
    path: &Path,
    writer_conn: Connection,
    readers: usize,
    stats: Arc<StoreStats>,
    seal: &Option<SecretSeal>,
) -> StoreResult<Threads> {
    let bulk_conn = Connection::open(path)?;
    register_secret_functions(&bulk_conn, seal.clone())?;
    configure(&bulk_conn)?;
    bulk_conn.pragma_update(None, "synchronous", "FULL")?;
    bulk_conn.pragma_update(None, "cache_size", -BULK_CACHE_KIB)?;
    bulk_conn.pragma_update(None, "wal_autocheckpoint", 0)?;
    let checkpoint_conn = Connection::open(path)?;
    configure(&checkpoint_conn)?;
    checkpoint_conn.pragma_update(None, "synchronous", "FULL")?;
    // Its unnamed `wal_checkpoint` then covers the click log's WAL too.
    super::clicks::logdb::attach(&checkpoint_conn, path, false)?;
    let mut reader_conns = Vec::new();
    for _ in 0..readers.max(1) {
        reader_conns.push(open_reader(path, seal)?);
    }
    let (ctx, crx) = std::sync::mpsc::sync_channel::<()>(1);
    let (wtx, wrx) = std::sync::mpsc::channel::<WriteMsg>();
    let (rtx, rrx) = crossbeam_channel::unbounded::<ReadMsg>();
    let reader_count = reader_conns.len();
    let spawn = |name: String, f: Box<dyn FnOnce() + Send>| {
        std::thread::Builder::new()
            .name(name)
            .spawn(f)
            .map_err(|e| StoreError::Panic(e.to_string()))
    };
    let watch = FileWatch::new(path);
    let wal_length = Arc::new(WalLength::new(RESTART_FRAMES));
    let writer = Writer {
        conn: writer_conn,
        bulk_conn,
        stats,
        watch,
        restarts: Restarts::new(Arc::clone(&wal_length)),
    };
    let mut handles = vec![
        spawn(
            "sqlite-writer".into(),
            Box::new(move || writer_loop(writer, wrx, ctx)),
        )?,
        spawn(
            "sqlite-checkpoint".into(),
            Box::new(move || checkpoint_loop(checkpoint_conn, crx, wal_length)),
        )?,
    ];
    for (i, conn) in reader_conns.into_iter().enumerate() {
        let rrx = rrx.clone();
        handles.push(spawn(
            format!("sqlite-reader-{i}"),
            Box::new(move || reader_loop(conn, rrx)),
        )?);
    }
    Ok(Threads {
        writer: wtx,
        readers: rtx,
        reader_count,
        handles,
    })
}

/// Wraps `f` as a write job: a panic in it is that job's error, and `after`
/// runs on the writer thread with the job's final result (after the commit,
/// or with the error), before the next transaction begins.
pub(super) fn write_job<T, F, H>(f: F, after: H) -> (WriteJob, oneshot::Receiver<StoreResult<T>>)
where
    F: FnOnce(&Connection) -> StoreResult<T> + Send + 'static,
    T: Send + 'static,
    H: FnOnce(StoreResult<T>) -> StoreResult<T> + Send + 'static,
{
    let (tx, rx) = oneshot::channel();
    let job: WriteJob = Box::new(move |conn| {
        let result = match conn {
            Ok(conn) => std::panic::catch_unwind(AssertUnwindSafe(|| f(conn)))
                .unwrap_or_else(|p| Err(StoreError::Panic(panic_message(&p)))),
            Err(e) => Err(e),
        };
        let outcome = match &result {
            Ok(_) => JobOutcome::Done,
            Err(StoreError::Conflict(_) | StoreError::NotFound(_)) => JobOutcome::Refused,
            Err(e) => storage_failure(e).map_or(JobOutcome::Failed, JobOutcome::Storage),
        };
        let deliver: Deliver = Box::new(move |commit_error| {
            let result = match commit_error {
                Some(e) => Err(e),
                None => result,
            };
            let _ = tx.send(after(result));
        });
        (outcome, deliver)
    });
    (job, rx)
}

/// The error, when it says the database cannot be written at all (as
/// opposed to this job's own failure).
fn storage_failure(e: &StoreError) -> Option<String> {
    use rusqlite::ErrorCode as C;
    let StoreError::Database(inner) = e else {
        return None;
    };
    match inner.downcast_ref::<rusqlite::Error>() {
        Some(rusqlite::Error::SqliteFailure(f, _))
            if matches!(
                f.code,
                C::DiskFull | C::SystemIoFailure | C::CannotOpen | C::ReadOnly
            ) =>
        {
            Some(e.to_string())
        }
        _ => None,
    }
}

/// Wraps `f` as a read job; a panic in it is that job's error.
pub(super) fn read_job<T, F>(f: F) -> (ReadJob, oneshot::Receiver<StoreResult<T>>)
where
    F: FnOnce(&Connection) -> StoreResult<T> + Send + 'static,
    T: Send + 'static,
{
    let (tx, rx) = oneshot::channel();
    let job: ReadJob = Box::new(move |conn| {
        let result = std::panic::catch_unwind(AssertUnwindSafe(|| f(conn)))
            .unwrap_or_else(|p| Err(StoreError::Panic(panic_message(&p))));
        let _ = tx.send(result);
    });
    (job, rx)
}

pub(super) fn panic_message(p: &Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic".into())
}

fn reader_loop(conn: Connection, rx: crossbeam_channel::Receiver<ReadMsg>) {
    while let Ok(msg) = rx.recv() {
        match msg {
            ReadMsg::Job(job) => job(&conn),
            ReadMsg::Close => break,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sqlite(code: std::os::raw::c_int) -> StoreError {
        rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(code), None).into()
    }

    /// A full disk stops writes (health reports it); a job's own error
    /// (a taken alias, a constraint) does not.
    #[test]
    fn only_storage_errors_stop_writes() {
        let full = storage_failure(&sqlite(rusqlite::ffi::SQLITE_FULL));
        assert!(full.is_some_and(|m| m.starts_with("database error:")));
        assert_eq!(
            storage_failure(&sqlite(rusqlite::ffi::SQLITE_CONSTRAINT)),
            None
        );
        assert_eq!(
            storage_failure(&StoreError::Conflict("alias \"a\"".into())),
            None
        );
    }
}
