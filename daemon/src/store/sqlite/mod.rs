//! SQLite storage: one writer thread that groups concurrent writes into one
//! transaction, a few reader threads working in parallel (WAL mode), and a
//! cache of hot links in front of them.
//!
//! [`SqliteStore`] is a cheap cloneable handle. Work is sent to the threads as
//! closures over a `rusqlite::Connection`; no lock is ever held across an
//! `.await`. The rest of the daemon does not send closures: it calls the
//! store interface (`crate::store`), which `backend/` implements with these
//! threads and the SQL helpers of the files here.

pub mod backup;
pub mod changes;
pub mod clicks;
pub mod files;
pub mod ids;
pub mod keys;
pub mod links;
pub mod recycle;
pub mod teams;
pub mod users;
pub mod webhooks;

mod backend;
mod error;
mod inline;
mod schema_hooks;
mod snapshot;
mod threads;
mod watch;

use std::path::Path;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use rusqlite::Connection;
use rusqlite_migration::{Migrations, M};
use shortlink_core::ipc::{ChangePosition, ClickBatch};
use tokio::sync::Notify;

use clicks::{ClickOverlay, PendingClicks};
use threads::{Lane, ReadMsg, WriteMsg};

use crate::store::{FoldOutcome, LinkCache, StoreError, StoreResult, StoreStats};

/// What every clone of a [`SqliteStore`] shares.
struct Inner {
    /// To the writer thread.
    writer: std::sync::mpsc::Sender<WriteMsg>,
    /// To the reader threads (whichever is free).
    readers: crossbeam_channel::Sender<ReadMsg>,
    /// Joined by [`SqliteStore::close`].
    threads: std::sync::Mutex<Vec<JoinHandle<()>>>,
    reader_count: usize,
    /// Connections for reads on the caller's thread (edge lookups).
    inline: inline::InlineReaders,
    /// Hot links, shared by the API and the IPC lookups.
    cache: LinkCache,
    /// Shared with the writer thread, which counts into it.
    stats: Arc<StoreStats>,
    /// Acknowledged clicks not folded into the tables yet.
    pending: Arc<PendingClicks>,
    /// One fold at a time.
    fold_lock: tokio::sync::Mutex<()>,
    /// Woken when the pending clicks should be folded early.
    fold_wake: Notify,
    /// The change log's head at open.
    changes_at_open: ChangePosition,
}

/// Handle to the database threads; clone freely.
#[derive(Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("readers", &self.inner.reader_count)
            .finish()
    }
}

/// Every migration, in order; version n is `MIGRATIONS[n - 1]`.
pub(crate) const MIGRATIONS: &[&str] = &[
    include_str!("schema_v1.sql"),
    include_str!("schema_v2.sql"),
    include_str!("schema_v3.sql"),
    include_str!("schema_v4.sql"),
    include_str!("schema_v5.sql"),
    include_str!("schema_v6.sql"),
    include_str!("schema_v7.sql"),
    include_str!("schema_v8.sql"),
    include_str!("schema_v9.sql"),
    include_str!("schema_v10.sql"),
    include_str!("schema_v11.sql"),
    include_str!("schema_v12.sql"),
    include_str!("schema_v13.sql"),
    include_str!("schema_v14.sql"),
    include_str!("schema_v15.sql"),
    include_str!("schema_v16.sql"),
    include_str!("schema_v17.sql"),
    include_str!("schema_v18.sql"),
    include_str!("schema_v19.sql"),
    include_str!("schema_v20.sql"),
    include_str!("schema_v21.sql"),
    include_str!("schema_v22.sql"),
    include_str!("schema_v23.sql"),
    include_str!("schema_v24.sql"),
];

/// The schema version (`PRAGMA user_version`) after the last migration:
/// `restore` refuses a database of a newer one.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

fn migrations() -> Migrations<'static> {
    migrations_to(MIGRATIONS.len())
}

/// The migrations up to `version`, hooks included (tests build databases
/// of an older version with it).
pub(crate) fn migrations_to(version: usize) -> Migrations<'static> {
    Migrations::new(
        MIGRATIONS[..version]
            .iter()
            .enumerate()
            .map(|(i, sql)| match i + 1 {
                21 => M::up_with_hook(sql, schema_hooks::v21_check_mode_without_in),
                _ => M::up(sql),
            })
            .collect(),
    )
}

/// The writer's connection to the database at `path` as the store opens
/// it (WAL, `synchronous=FULL`, its cache and checkpoint settings, the
/// click log attached), with no app secrets: for tools that measure the
/// writer's work alone (`examples/click_floor.rs`). The schema must be
/// migrated already ([`SqliteStore::open`] does it).
pub fn writer_connection(path: &Path) -> StoreResult<Connection> {
    threads::open_writer(path, &None)
}

impl SqliteStore {
    /// Opens (creating if needed) the database at `path`, brings the schema
    /// up to date and starts the writer and `readers` reader threads.
    pub fn open(path: &Path, readers: usize, cache_size: usize) -> StoreResult<Self> {
        Self::open_sealed(path, readers, cache_size, None)
    }

    /// Like [`SqliteStore::open`], sealing and opening app secrets with `seal`
    /// (without it, touching an app secret fails; see `keys`).
    pub fn open_sealed(
        path: &Path,
        readers: usize,
        cache_size: usize,
        seal: Option<crate::app_secret::SecretSeal>,
    ) -> StoreResult<Self> {
        let mut writer_conn = threads::open_writer(path, &seal)?;
        migrations().to_latest(&mut writer_conn)?;
        // What a migration rewrote (secrets sealed by v5) leaves the WAL
        // and reaches the database file now, old page images overwritten.
        writer_conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
        let adopted = clicks::logdb::adopt(&writer_conn)?;
        if adopted > 0 {
            tracing::info!(
                batches = adopted,
                "unfolded click batches moved into the click log's own file"
            );
        }
        let changes_at_open = changes::head(&writer_conn)?;
        // Clicks acknowledged before a crash and not folded yet.
        let pending = Arc::new(PendingClicks::default());
        let recovered = clicks::recover(&writer_conn, &pending)?;
        if recovered > 0 {
            tracing::info!(
                batches = recovered,
                "click batches acknowledged before the last stop are pending a fold"
            );
        }
        let stats = Arc::new(StoreStats::default());
        let threads = threads::start(path, writer_conn, readers, Arc::clone(&stats), &seal)?;
        let inline = inline::InlineReaders::open(path, &seal)?;
        Ok(Self {
            inner: Arc::new(Inner {
                writer: threads.writer,
                readers: threads.readers,
                threads: std::sync::Mutex::new(threads.handles),
                reader_count: threads.reader_count,
                inline,
                // Reads here are in-process: not worth a second copy.
                cache: LinkCache::without_reads(cache_size),
                stats,
                pending,
                fold_lock: tokio::sync::Mutex::new(()),
                fold_wake: Notify::new(),
                changes_at_open,
            }),
        })
    }

    /// Runs `f` inside the next write transaction; resolves once that
    /// transaction has committed. An `Err` from `f` rolls back only `f`'s
    /// own changes (a savepoint), not the other jobs grouped with it.
    pub(crate) async fn write<T, F>(&self, f: F) -> StoreResult<T>
    where
        F: FnOnce(&Connection) -> StoreResult<T> + Send + 'static,
        T: Send + 'static,
    {
        self.send_write(f, None, |r| r).await
    }

    /// Like [`SqliteStore::write`] for one big job (thousands of rows): it gets a
    /// transaction of its own, on a connection with a page cache sized for
    /// it, still on the one writer thread (so never concurrently with other
    /// writes) and still resolved only after its commit. Id leases run here
    /// too, to keep that cache warm (`backend/ids.rs` says why).
    pub(crate) async fn write_bulk<T, F>(&self, f: F) -> StoreResult<T>
    where
        F: FnOnce(&Connection) -> StoreResult<T> + Send + 'static,
        T: Send + 'static,
    {
        self.send_write(f, Some(Lane::Bulk), |r| r).await
    }

    /// `after` runs on the writer thread with the job's final result (after
    /// the commit, or with the error), before the next transaction begins.
    /// `alone`: in a transaction of its own on that lane, else grouped.
    async fn send_write<T, F, H>(&self, f: F, alone: Option<Lane>, after: H) -> StoreResult<T>
    where
        F: FnOnce(&Connection) -> StoreResult<T> + Send + 'static,
        T: Send + 'static,
        H: FnOnce(StoreResult<T>) -> StoreResult<T> + Send + 'static,
    {
        let (job, rx) = threads::write_job(f, after);
        let msg = match alone {
            Some(lane) => WriteMsg::Alone(job, lane),
            None => WriteMsg::Job(job),
        };
        self.inner
            .writer
            .send(msg)
            .map_err(|_| StoreError::Closed)?;
        rx.await.map_err(|_| StoreError::Closed)?
    }

    /// Runs `f` on one of the reader connections.
    pub(crate) async fn read<T, F>(&self, f: F) -> StoreResult<T>
    where
        F: FnOnce(&Connection) -> StoreResult<T> + Send + 'static,
        T: Send + 'static,
    {
        let (job, rx) = threads::read_job(f);
        self.inner
            .readers
            .send(ReadMsg::Job(job))
            .map_err(|_| StoreError::Closed)?;
        rx.await.map_err(|_| StoreError::Closed)?
    }

    /// Runs `f` on this thread, on a connection of the inline pool:
    /// `None` when none is free or `f` failed (then use
    /// [`SqliteStore::read`]). For short reads only: the caller is held
    /// for them.
    pub(crate) fn read_now<T>(&self, f: impl FnOnce(&Connection) -> StoreResult<T>) -> Option<T> {
        self.inner.inline.try_read(f)
    }

    /// Like [`SqliteStore::read`], with the acknowledged clicks not folded into
    /// the tables yet: what `f` reads plus the overlay is every click
    /// acknowledged before the read, each once.
    pub(crate) async fn read_counted<T, F>(&self, f: F) -> StoreResult<T>
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
                move |c| {
                    let mut batches = batches;
                    clicks::append_batches(c, &mut batches, now).map(|seqs| (batches, seqs))
                },
                None,
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
        self.fold_with(clicks::fold_job).await
    }

    /// Writes the pending clicks of links with a visit limit or
    /// renew-on-access to `clicks` and the link totals, in one transaction
    /// (the log stays for the fold of everything).
    pub async fn fold_prompt_clicks(&self) -> StoreResult<FoldOutcome> {
        self.fold_with(clicks::fold_prompt_job).await
    }

    /// Runs fold `job` on the writer, one fold at a time, alone in its
    /// transaction (it changes a page of `links` and of `clicks` per few
    /// links: no savepoint copies them), and tells the pending clicks
    /// whether it committed.
    async fn fold_with(
        &self,
        job: fn(&Connection, &PendingClicks) -> StoreResult<FoldOutcome>,
    ) -> StoreResult<FoldOutcome> {
        let _one = self.inner.fold_lock.lock().await;
        if self.inner.pending.is_empty() {
            return Ok(FoldOutcome::default());
        }
        let pending = Arc::clone(&self.inner.pending);
        let after = Arc::clone(&pending);
        self.send_write(
            move |c| job(c, &pending),
            Some(Lane::Writer),
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

    /// The edge change log's head when the store was opened: the live
    /// feed starts after it (`crate::edge`).
    pub fn changes_at_open(&self) -> ChangePosition {
        self.inner.changes_at_open
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
        self.inner.inline.close();
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

#[cfg(test)]
mod takedown_state_tests;

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// What is logged at `level` and above while `f` runs, as text.
    pub(crate) fn logged_at(level: tracing::Level, f: impl FnOnce()) -> String {
        let out = Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = Arc::clone(&out);
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(level)
            .with_ansi(false)
            .with_writer(move || Sink(Arc::clone(&sink)))
            .finish();
        tracing::subscriber::with_default(subscriber, f);
        let text = out.lock().unwrap();
        String::from_utf8_lossy(&text).into_owned()
    }

    struct Sink(Arc<std::sync::Mutex<Vec<u8>>>);

    impl std::io::Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    pub(crate) fn temp_store() -> (tempfile::TempDir, SqliteStore) {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("t.db"), 2, 100).unwrap();
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
