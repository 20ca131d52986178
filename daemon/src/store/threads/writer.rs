//! The writer thread: groups the queued write jobs into one transaction (a
//! savepoint per job), records whether commits succeed, and watches the
//! database files it writes to ([`FileWatch`]).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use rusqlite::Connection;

use super::{JobOutcome, StoreError, StoreStats, WriteJob, WriteMsg};
use crate::store::watch::FileWatch;

/// Most jobs grouped into one write transaction.
const MAX_GROUP: usize = 512;

/// How often the writer checks its files when no write comes (see
/// [`FileWatch`]); a write also checks the `-wal` before it commits.
const WATCH_EVERY: Duration = Duration::from_secs(1);

/// The writer thread's state.
pub(super) struct Writer {
    /// Takes the grouped jobs.
    pub(super) conn: Connection,
    /// Takes the bulk jobs, each in a transaction of its own.
    pub(super) bulk_conn: Connection,
    /// Where commit outcomes and lost files are recorded.
    pub(super) stats: Arc<StoreStats>,
    /// The database files this connection writes to.
    pub(super) watch: FileWatch,
}

pub(super) fn writer_loop(
    mut w: Writer,
    rx: std::sync::mpsc::Receiver<WriteMsg>,
    checkpoint: std::sync::mpsc::SyncSender<()>,
) {
    use std::sync::mpsc::RecvTimeoutError;
    let mut closing: Option<std::sync::mpsc::Sender<()>> = None;
    while closing.is_none() {
        let mut jobs = Vec::new();
        let mut bulk = None;
        match rx.recv_timeout(WATCH_EVERY) {
            Ok(WriteMsg::Job(job)) => jobs.push(job),
            Ok(WriteMsg::Bulk(job)) => bulk = Some(job),
            Ok(WriteMsg::Close(done)) => {
                closing = Some(done);
                break;
            }
            Err(RecvTimeoutError::Timeout) => {
                let checked = w.watch.check_all();
                w.file_check(checked);
                continue;
            }
            Err(RecvTimeoutError::Disconnected) => break,
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
        if !jobs.is_empty() {
            w.run_group(false, jobs);
        }
        if let Some(job) = bulk {
            w.run_group(true, vec![job]);
        }
        // A full channel means a request is pending, which covers this one.
        let _ = checkpoint.try_send(());
    }
    drop(checkpoint);
    let Writer {
        conn, bulk_conn, ..
    } = w;
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

/// Answers every job of a group with `error`, nothing run.
fn refuse(jobs: Vec<WriteJob>, error: &str) {
    for job in jobs {
        let (_, deliver) = job(Err(StoreError::Commit(error.to_string())));
        deliver(None);
    }
}

impl Writer {
    /// Acts on a file check: the first time a database file is found gone,
    /// copies what the WAL holds into the database file (SQLite still has
    /// the deleted WAL open, so the commits acknowledged before are not
    /// lost), logs one error line and refuses writes from then on: they
    /// would go into a file no path leads to, gone at the next restart.
    fn file_check(&mut self, checked: Result<(), String>) {
        let Err(what) = checked else {
            return;
        };
        if self.stats.lost().is_some() {
            return;
        }
        let rescue = self
            .conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, i64>(2)?,
                ))
            });
        let rescued = match rescue {
            Ok((0, frames, done)) if frames == done => "copied into the database file".to_string(),
            Ok((_, frames, done)) => format!("only {done} of {frames} WAL pages copied back"),
            Err(e) => format!("copying them back failed: {e}"),
        };
        tracing::error!(
            problem = %what,
            earlier_commits = %rescued,
            "a database file is gone: writes are refused until shortlinkd is restarted"
        );
        *self
            .stats
            .lost_file
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(format!(
            "{what}; writes are refused until shortlinkd is restarted"
        ));
    }

    fn run_group(&mut self, bulk: bool, jobs: Vec<WriteJob>) {
        if let Some(lost) = self.stats.lost() {
            refuse(jobs, &lost);
            return;
        }
        let conn = if bulk { &self.bulk_conn } else { &self.conn };
        let stats = &*self.stats;
        if let Err(e) = conn.execute_batch("BEGIN IMMEDIATE") {
            let msg = e.to_string();
            refuse(jobs, &msg);
            stats.commit_outcome(Some(format!("cannot begin a write transaction: {msg}")));
            return;
        }
        let mut delivers = Vec::with_capacity(jobs.len());
        let mut failed = 0u64;
        let mut storage = None;
        let count = jobs.len() as u64;
        for job in jobs {
            let savepoint = run_cached(conn, "SAVEPOINT job");
            let (outcome, deliver) = job(Ok(conn));
            if savepoint.is_ok() {
                if outcome == JobOutcome::Done {
                    let _ = run_cached(conn, "RELEASE job");
                } else {
                    failed += 1;
                    let _ = run_cached(conn, "ROLLBACK TO job");
                    let _ = run_cached(conn, "RELEASE job");
                }
            }
            if let JobOutcome::Storage(e) = outcome {
                storage = Some(e);
            }
            delivers.push(deliver);
        }
        // Never acknowledge a commit into a WAL that was deleted.
        let commit = match self.watch.check_wal() {
            Ok(()) => conn.execute_batch("COMMIT").map_err(|e| e.to_string()),
            Err(lost) => Err(lost),
        };
        stats.transactions.fetch_add(1, Ordering::Relaxed);
        stats.writes.fetch_add(count, Ordering::Relaxed);
        stats.write_errors.fetch_add(failed, Ordering::Relaxed);
        match commit {
            Ok(()) => {
                delivers.into_iter().for_each(|d| d(None));
                stats.commit_outcome(storage);
            }
            Err(msg) => {
                let _ = conn.execute_batch("ROLLBACK");
                for d in delivers {
                    d(Some(StoreError::Commit(msg.clone())));
                }
                if self.stats.lost().is_none() {
                    let checked = self.watch.check_all();
                    if checked.is_err() {
                        self.file_check(checked);
                    } else {
                        self.stats.commit_outcome(Some(msg));
                    }
                }
            }
        }
    }
}

/// Runs a statement from the connection's statement cache (the savepoint
/// statements run once per write job: no parsing each time).
fn run_cached(conn: &Connection, sql: &str) -> rusqlite::Result<usize> {
    conn.prepare_cached(sql)?.execute([])
}
