//! SQLite storage: one writer thread that groups concurrent writes into one
//! transaction, a few reader threads working in parallel (WAL mode), and a
//! cache of hot links in front of them.
//!
//! [`Store`] is a cheap cloneable handle. Work is sent to the threads as
//! closures over a `rusqlite::Connection`; no lock is ever held across an
//! `.await`.

pub mod cache;
pub mod clicks;
pub mod ids;
pub mod keys;
pub mod links;
pub mod users;

use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use rusqlite::Connection;
use rusqlite_migration::{Migrations, M};
use shortlink_core::ipc::ClickBatch;
use tokio::sync::{oneshot, Notify};

pub use cache::LinkCache;
use clicks::{ClickOverlay, FoldOutcome, PendingClicks};

/// Most jobs grouped into one write transaction.
const MAX_GROUP: usize = 512;

/// Why a storage operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite reported an error.
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// The schema could not be brought up to date.
    #[error("database migration failed: {0}")]
    Migration(#[from] rusqlite_migration::Error),
    /// The transaction a write was grouped into failed to commit.
    #[error("database commit failed: {0}")]
    Commit(String),
    /// A unique name (alias, user name) is already taken.
    #[error("{0} is already taken")]
    Conflict(String),
    /// The row does not exist.
    #[error("{0} not found")]
    NotFound(String),
    /// The store was closed (daemon shutting down).
    #[error("the database is closed")]
    Closed,
    /// A stored value could not be decoded.
    #[error("corrupt stored value: {0}")]
    Corrupt(String),
    /// A job panicked on a database thread.
    #[error("internal error on the database thread: {0}")]
    Panic(String),
}

/// Result alias for this layer.
pub type StoreResult<T> = Result<T, StoreError>;

type Deliver = Box<dyn FnOnce(Option<StoreError>) + Send>;
type WriteJob = Box<dyn FnOnce(Result<&Connection, StoreError>) -> (bool, Deliver) + Send>;
type ReadJob = Box<dyn FnOnce(&Connection) + Send>;

enum WriteMsg {
    Job(WriteJob),
    /// A big job (an import chunk): its own transaction on the bulk
    /// connection.
    Bulk(WriteJob),
    Close(std::sync::mpsc::Sender<()>),
}

enum ReadMsg {
    Job(ReadJob),
    Close,
}

/// Counters about the store, read by `/metrics`.
#[derive(Debug, Default)]
pub struct StoreStats {
    /// Write transactions committed.
    pub transactions: AtomicU64,
    /// Write jobs applied (several per transaction under load).
    pub writes: AtomicU64,
    /// Write jobs that failed and were rolled back to their savepoint.
    pub write_errors: AtomicU64,
}

struct Inner {
    writer: std::sync::mpsc::Sender<WriteMsg>,
    readers: crossbeam_channel::Sender<ReadMsg>,
    threads: std::sync::Mutex<Vec<JoinHandle<()>>>,
    reader_count: usize,
    /// Hot links, shared by the API and the IPC lookups.
    cache: LinkCache,
    stats: StoreStats,
    /// Acknowledged clicks not folded into the tables yet.
    pending: Arc<PendingClicks>,
    /// One fold at a time.
    fold_lock: tokio::sync::Mutex<()>,
    /// Woken when the pending clicks should be folded early.
    fold_wake: Notify,
}

/// Handle to the database threads; clone freely.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("readers", &self.inner.reader_count)
            .finish()
    }
}

fn migrations() -> Migrations<'static> {
    Migrations::new(vec![
        M::up(include_str!("schema_v1.sql")),
        M::up(include_str!("schema_v2.sql")),
    ])
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
    conn.busy_timeout(Duration::from_secs(10))?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "mmap_size", MMAP_SIZE)?;
    Ok(())
}

impl Store {
    /// Opens (creating if needed) the database at `path`, brings the schema
    /// up to date and starts the writer and `readers` reader threads.
    pub fn open(path: &Path, readers: usize, cache_size: usize) -> StoreResult<Self> {
        let mut writer_conn = Connection::open(path)?;
        writer_conn.pragma_update(None, "journal_mode", "WAL")?;
        configure(&writer_conn)?;
        // synchronous=NORMAL in WAL mode survives a process crash (the
        // WAL is written before commit returns); FULL also survives power
        // loss, which is what an acknowledged click batch promises.
        writer_conn.pragma_update(None, "synchronous", "FULL")?;
        writer_conn.pragma_update(None, "cache_size", -WRITER_CACHE_KIB)?;
        // Checkpoints run on their own thread (see `checkpoint_loop`), not
        // inside the commit that crossed the threshold: a writer thread that
        // copies tens of MiB back into the database holds every queued
        // write (creates, click acks) for that long.
        writer_conn.pragma_update(None, "wal_autocheckpoint", 0)?;
        migrations().to_latest(&mut writer_conn)?;
        // Clicks acknowledged before a crash and not folded yet.
        let pending = Arc::new(PendingClicks::default());
        let recovered = clicks::recover(&writer_conn, &pending)?;
        if recovered > 0 {
            tracing::info!(
                batches = recovered,
                "click batches acknowledged before the last stop are pending a fold"
            );
        }

        let bulk_conn = Connection::open(path)?;
        configure(&bulk_conn)?;
        bulk_conn.pragma_update(None, "synchronous", "FULL")?;
        bulk_conn.pragma_update(None, "cache_size", -BULK_CACHE_KIB)?;
        bulk_conn.pragma_update(None, "wal_autocheckpoint", 0)?;
        let checkpoint_conn = Connection::open(path)?;
        configure(&checkpoint_conn)?;
        checkpoint_conn.pragma_update(None, "synchronous", "FULL")?;
        let (ctx, crx) = std::sync::mpsc::sync_channel::<()>(1);
        let (wtx, wrx) = std::sync::mpsc::channel::<WriteMsg>();
        let (rtx, rrx) = crossbeam_channel::unbounded::<ReadMsg>();
        let mut threads = Vec::new();
        let stats_holder: Arc<Inner>;
        {
            let mut reader_conns = Vec::new();
            for _ in 0..readers.max(1) {
                let conn = Connection::open(path)?;
                configure(&conn)?;
                conn.pragma_update(None, "query_only", "ON")?;
                conn.pragma_update(None, "cache_size", -READER_CACHE_KIB)?;
                reader_conns.push(conn);
            }
            stats_holder = Arc::new(Inner {
                writer: wtx,
                readers: rtx,
                threads: std::sync::Mutex::new(Vec::new()),
                reader_count: reader_conns.len(),
                cache: LinkCache::new(cache_size),
                stats: StoreStats::default(),
                pending,
                fold_lock: tokio::sync::Mutex::new(()),
                fold_wake: Notify::new(),
            });
            let weak = Arc::downgrade(&stats_holder);
            threads.push(
                std::thread::Builder::new()
                    .name("sqlite-writer".into())
                    .spawn(move || writer_loop(writer_conn, bulk_conn, wrx, weak, ctx))
                    .map_err(|e| StoreError::Panic(e.to_string()))?,
            );
            threads.push(
                std::thread::Builder::new()
                    .name("sqlite-checkpoint".into())
                    .spawn(move || checkpoint_loop(checkpoint_conn, crx))
                    .map_err(|e| StoreError::Panic(e.to_string()))?,
            );
            for (i, conn) in reader_conns.into_iter().enumerate() {
                let rrx = rrx.clone();
                threads.push(
                    std::thread::Builder::new()
                        .name(format!("sqlite-reader-{i}"))
                        .spawn(move || reader_loop(conn, rrx))
                        .map_err(|e| StoreError::Panic(e.to_string()))?,
                );
            }
        }
        *stats_holder.threads.lock().expect("thread list") = threads;
        Ok(Self {
            inner: stats_holder,
        })
    }

    /// Runs `f` inside the next write transaction; resolves once that
    /// transaction has committed. An `Err` from `f` rolls back only `f`'s
    /// own changes (a savepoint), not the other jobs grouped with it.
    pub async fn write<T, F>(&self, f: F) -> StoreResult<T>
    where
        F: FnOnce(&Connection) -> StoreResult<T> + Send + 'static,
        T: Send + 'static,
    {
        self.send_write(f, false, |r| r).await
    }

    /// Like [`Store::write`] for one big job (thousands of rows): it gets a
    /// transaction of its own, on a connection with a page cache sized for
    /// it, still on the one writer thread (so never concurrently with other
    /// writes) and still resolved only after its commit.
    pub async fn write_bulk<T, F>(&self, f: F) -> StoreResult<T>
    where
        F: FnOnce(&Connection) -> StoreResult<T> + Send + 'static,
        T: Send + 'static,
    {
        self.send_write(f, true, |r| r).await
    }

    /// `after` runs on the writer thread with the job's final result (after
    /// the commit, or with the error), before the next transaction begins.
    async fn send_write<T, F, H>(&self, f: F, bulk: bool, after: H) -> StoreResult<T>
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
            let ok = result.is_ok();
            let deliver: Deliver = Box::new(move |commit_error| {
                let result = match commit_error {
                    Some(e) => Err(e),
                    None => result,
                };
                let _ = tx.send(after(result));
            });
            (ok, deliver)
        });
        let msg = if bulk {
            WriteMsg::Bulk(job)
        } else {
            WriteMsg::Job(job)
        };
        self.inner
            .writer
            .send(msg)
            .map_err(|_| StoreError::Closed)?;
        rx.await.map_err(|_| StoreError::Closed)?
    }

    /// Runs `f` on one of the reader connections.
    pub async fn read<T, F>(&self, f: F) -> StoreResult<T>
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
        self.inner
            .readers
            .send(ReadMsg::Job(job))
            .map_err(|_| StoreError::Closed)?;
        rx.await.map_err(|_| StoreError::Closed)?
    }

    /// Like [`Store::read`], with the acknowledged clicks not folded into
    /// the tables yet: what `f` reads plus the overlay is every click
    /// acknowledged before the read, each once.
    pub async fn read_counted<T, F>(&self, f: F) -> StoreResult<T>
    where
        F: FnOnce(&Connection, &ClickOverlay<'_>) -> StoreResult<T> + Send + 'static,
        T: Send + 'static,
    {
        let pending = Arc::clone(&self.inner.pending);
        self.read(move |c| clicks::with_overlay(c, &pending, f))
            .await
    }

    /// Makes click batches durable and counts them: each new batch id is
    /// recorded and the batch appended to `click_log` in one transaction
    /// (grouped with other writes); after the commit the batch is added to
    /// the pending clicks, which readers see at once. Resolves after that:
    /// the caller may acknowledge. `true` per batch counted, `false` per
    /// duplicate.
    pub async fn append_clicks(
        &self,
        batches: Vec<ClickBatch>,
        now: i64,
    ) -> StoreResult<Vec<bool>> {
        let pending = Arc::clone(&self.inner.pending);
        let (_, seqs) = self
            .send_write(
                move |c| clicks::append_batches(c, &batches, now).map(|seqs| (batches, seqs)),
                false,
                move |r| {
                    if let Ok((batches, seqs)) = &r {
                        let new: Vec<(i64, &ClickBatch)> = seqs
                            .iter()
                            .zip(batches)
                            .filter_map(|(s, b)| s.map(|s| (s, b)))
                            .collect();
                        pending.add_committed(&new, now);
                    }
                    r
                },
            )
            .await?;
        Ok(seqs.iter().map(Option::is_some).collect())
    }

    /// Writes the pending clicks to `clicks` and the link totals, and
    /// deletes the `click_log` rows they came from, in one transaction.
    pub async fn fold_clicks(&self) -> StoreResult<FoldOutcome> {
        let _one = self.inner.fold_lock.lock().await;
        if self.inner.pending.is_empty() {
            return Ok(FoldOutcome::default());
        }
        let pending = Arc::clone(&self.inner.pending);
        let after = Arc::clone(&pending);
        self.send_write(
            move |c| clicks::fold_job(c, &pending),
            false,
            move |r| {
                after.finish_fold(r.is_ok());
                r
            },
        )
        .await
    }

    /// The acknowledged clicks not folded yet.
    pub fn pending_clicks(&self) -> &Arc<PendingClicks> {
        &self.inner.pending
    }

    /// Notified when a fold should run before its time (see
    /// `stats::fold_loop`).
    pub fn fold_wake(&self) -> &Notify {
        &self.inner.fold_wake
    }

    /// The cache of hot links.
    pub fn cache(&self) -> &LinkCache {
        &self.inner.cache
    }

    /// Write counters.
    pub fn stats(&self) -> &StoreStats {
        &self.inner.stats
    }

    /// Finishes queued writes, checkpoints the WAL and stops the threads.
    /// Later calls on any clone fail with [`StoreError::Closed`].
    pub fn close(&self) {
        let (tx, rx) = std::sync::mpsc::channel();
        if self.inner.writer.send(WriteMsg::Close(tx)).is_ok() {
            let _ = rx.recv_timeout(Duration::from_secs(30));
        }
        for _ in 0..self.inner.reader_count {
            let _ = self.inner.readers.send(ReadMsg::Close);
        }
        let threads = std::mem::take(&mut *self.inner.threads.lock().expect("thread list"));
        for t in threads {
            let _ = t.join();
        }
    }
}

fn panic_message(p: &Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic".into())
}

/// Least time between two checkpoints: what commits in this time is
/// copied back in one go (one sync of the database file for all of it).
const CHECKPOINT_EVERY: Duration = Duration::from_millis(200);

fn writer_loop(
    conn: Connection,
    bulk_conn: Connection,
    rx: std::sync::mpsc::Receiver<WriteMsg>,
    inner: std::sync::Weak<Inner>,
    checkpoint: std::sync::mpsc::SyncSender<()>,
) {
    let mut closing: Option<std::sync::mpsc::Sender<()>> = None;
    while closing.is_none() {
        let mut jobs = Vec::new();
        let mut bulk = None;
        match rx.recv() {
            Ok(WriteMsg::Job(job)) => jobs.push(job),
            Ok(WriteMsg::Bulk(job)) => bulk = Some(job),
            Ok(WriteMsg::Close(done)) => {
                closing = Some(done);
                break;
            }
            Err(_) => break,
        }
        while bulk.is_none() && jobs.len() < MAX_GROUP {
            match rx.try_recv() {
                Ok(WriteMsg::Job(job)) => jobs.push(job),
                // Runs after the jobs that queued before it.
                Ok(WriteMsg::Bulk(job)) => bulk = Some(job),
                Ok(WriteMsg::Close(done)) => {
                    closing = Some(done);
                    break;
                }
                Err(_) => break,
            }
        }
        let inner = inner.upgrade();
        if !jobs.is_empty() {
            run_group(&conn, jobs, inner.as_deref());
        }
        if let Some(job) = bulk {
            run_group(&bulk_conn, vec![job], inner.as_deref());
        }
        // A full channel means a request is pending, which covers this one.
        let _ = checkpoint.try_send(());
    }
    drop(checkpoint);
    drop(bulk_conn);
    // Jobs that arrived after the close request are refused by dropping them
    // (their callers see `Closed`).
    drop(rx);
    let _ = conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);");
    drop(conn);
    if let Some(done) = closing {
        let _ = done.send(());
    }
}

fn run_group(conn: &Connection, jobs: Vec<WriteJob>, inner: Option<&Inner>) {
    if let Err(e) = conn.execute_batch("BEGIN IMMEDIATE") {
        let msg = e.to_string();
        for job in jobs {
            let (_, deliver) = job(Err(StoreError::Commit(msg.clone())));
            deliver(None);
        }
        tracing::error!(error = %msg, "cannot begin a write transaction");
        return;
    }
    let mut delivers = Vec::with_capacity(jobs.len());
    let mut failed = 0u64;
    let count = jobs.len() as u64;
    for job in jobs {
        let savepoint = run_cached(conn, "SAVEPOINT job");
        let (ok, deliver) = job(Ok(conn));
        if savepoint.is_ok() {
            if ok {
                let _ = run_cached(conn, "RELEASE job");
            } else {
                failed += 1;
                let _ = run_cached(conn, "ROLLBACK TO job");
                let _ = run_cached(conn, "RELEASE job");
            }
        }
        delivers.push(deliver);
    }
    let commit = conn.execute_batch("COMMIT");
    if let Some(inner) = inner {
        inner.stats.transactions.fetch_add(1, Ordering::Relaxed);
        inner.stats.writes.fetch_add(count, Ordering::Relaxed);
        inner
            .stats
            .write_errors
            .fetch_add(failed, Ordering::Relaxed);
    }
    match commit {
        Ok(()) => delivers.into_iter().for_each(|d| d(None)),
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            let msg = e.to_string();
            tracing::error!(error = %msg, "write transaction failed to commit");
            for d in delivers {
                d(Some(StoreError::Commit(msg.clone())));
            }
        }
    }
}

/// Copies the WAL back into the database after commits, at most every
/// [`CHECKPOINT_EVERY`], on its own connection and thread: PASSIVE, so it
/// never blocks the writer or the readers, and with `synchronous=FULL`, so
/// the database file is synced before SQLite reuses the WAL. Durability is
/// the WAL's (synced at every commit by the writer); this only bounds the
/// WAL's size, which SQLite's autocheckpoint did inside the commit.
fn checkpoint_loop(conn: Connection, rx: std::sync::mpsc::Receiver<()>) {
    while rx.recv().is_ok() {
        if let Err(e) = conn.execute_batch("PRAGMA wal_checkpoint(PASSIVE);") {
            tracing::warn!(error = %e, "WAL checkpoint failed");
        }
        std::thread::sleep(CHECKPOINT_EVERY);
    }
}

/// Runs a statement from the connection's statement cache (the savepoint
/// statements run once per write job: no parsing each time).
fn run_cached(conn: &Connection, sql: &str) -> rusqlite::Result<usize> {
    conn.prepare_cached(sql)?.execute([])
}

fn reader_loop(conn: Connection, rx: crossbeam_channel::Receiver<ReadMsg>) {
    while let Ok(msg) = rx.recv() {
        match msg {
            ReadMsg::Job(job) => job(&conn),
            ReadMsg::Close => break,
        }
    }
}

/// Seconds since the Unix epoch.
pub fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn temp_store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("t.db"), 2, 100).unwrap();
        (dir, store)
    }

    #[tokio::test]
    async fn failed_job_rolls_back_alone() {
        let (_dir, store) = temp_store();
        let a = store.write(|c| {
            c.execute("INSERT INTO id_alloc(name, next) VALUES ('a', 1)", [])?;
            Ok(())
        });
        let b = store.write(|c| {
            c.execute("INSERT INTO id_alloc(name, next) VALUES ('b', 1)", [])?;
            Err::<(), _>(StoreError::Conflict("b".into()))
        });
        let (ra, rb) = tokio::join!(a, b);
        assert!(ra.is_ok());
        assert!(matches!(rb, Err(StoreError::Conflict(_))));
        let names: Vec<String> = store
            .read(|c| {
                let mut st = c.prepare("SELECT name FROM id_alloc ORDER BY name")?;
                let rows = st.query_map([], |r| r.get(0))?;
                Ok(rows.collect::<Result<_, _>>()?)
            })
            .await
            .unwrap();
        assert_eq!(names, vec!["a".to_string()]);
        store.close();
        assert!(matches!(
            store.read(|_| Ok(())).await,
            Err(StoreError::Closed)
        ));
    }
}
