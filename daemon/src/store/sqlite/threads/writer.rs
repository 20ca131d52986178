//! The writer thread: groups the queued write jobs into one transaction (a
//! savepoint per job), records whether commits succeed, and watches the
//! database files it writes to ([`FileWatch`]).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use rusqlite::Connection;

use super::{JobOutcome, Lane, Restarts, StoreError, WriteJob, WriteMsg};
use crate::store::sqlite::watch::FileWatch;
use crate::store::StoreStats;

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
    /// Starts the WAL over when the checkpointer cannot catch up.
    pub(super) restarts: Restarts,
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
        let mut alone = None;
        match rx.recv_timeout(WATCH_EVERY) {
            Ok(WriteMsg::Job(job)) => jobs.push(job),
            Ok(WriteMsg::Alone(job, lane)) => alone = Some((job, lane)),
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
        while alone.is_none() && jobs.len() < MAX_GROUP {
            match rx.try_recv() {
                Ok(WriteMsg::Job(job)) => jobs.push(job),
                // Runs after the jobs that queued before it.
                Ok(WriteMsg::Alone(job, lane)) => alone = Some((job, lane)),
                Ok(WriteMsg::Close(done)) => {
                    closing = Some(done);
                    break;
                }
                Err(_) => break,
            }
        }
        if !jobs.is_empty() {
            w.run_group(None, jobs);
        }
        if let Some((job, lane)) = alone {
            w.run_group(Some(lane), vec![job]);
        }
        w.restarts.restart_if_long(&w.conn);
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

    /// Runs `jobs` in one transaction: a savepoint each, or with `alone`
    /// one job without a savepoint, on that lane's connection.
    fn run_group(&mut self, alone: Option<Lane>, jobs: Vec<WriteJob>) {
        if let Some(lost) = self.stats.lost() {
            refuse(jobs, &lost);
            return;
        }
        // A job alone runs without a savepoint (below): only correct when
        // it is alone in its transaction, as the loop above sends it.
        debug_assert!(
            alone.is_none() || jobs.len() == 1,
            "{} jobs alone",
            jobs.len()
        );
        let conn = match alone {
            Some(Lane::Bulk) => &self.bulk_conn,
            Some(Lane::Writer) | None => &self.conn,
        };
        let stats = &*self.stats;
        if let Err(e) = conn.execute_batch("BEGIN IMMEDIATE") {
            let msg = e.to_string();
            stats.commit_outcome(Some(format!("cannot begin a write transaction: {msg}")));
            refuse(jobs, &msg);
            return;
        }
        let changes_before = conn.total_changes();
        let mut delivers = Vec::with_capacity(jobs.len());
        let mut failed = 0u64;
        let mut storage = None;
        // Set when a job's changes can no longer be told apart from the
        // others' (a savepoint statement failed, or SQLite rolled the whole
        // transaction back, as it may on a full disk): nothing commits.
        let mut broken: Option<String> = None;
        let count = jobs.len() as u64;
        for job in jobs {
            if let Some(why) = &broken {
                let (_, deliver) = job(Err(StoreError::Commit(why.clone())));
                failed += 1;
                delivers.push(deliver);
                continue;
            }
            // A job alone in its transaction has that as its savepoint: a
            // savepoint copies every page it first changes to the
            // sub-journal (about 5 % of an import chunk's writer time, a
            // quarter of a fold's).
            if alone.is_some() {
                let (outcome, deliver) = job(Ok(conn));
                delivers.push(deliver);
                if outcome == JobOutcome::Done {
                    if conn.is_autocommit() {
                        broken = Some("the transaction was rolled back by SQLite".to_string());
                    }
                    continue;
                }
                // Rolled back whole; its caller hears its own error.
                failed += u64::from(outcome != JobOutcome::Refused);
                if let JobOutcome::Storage(e) = outcome {
                    storage = Some(e);
                }
                if !conn.is_autocommit() {
                    if let Err(e) = conn.execute_batch("ROLLBACK") {
                        broken = Some(format!("cannot roll back: {e}"));
                    }
                }
                continue;
            }
            if let Err(e) = run_cached(conn, "SAVEPOINT job") {
                broken = Some(format!("cannot open a savepoint: {e}"));
                let (_, deliver) = job(Err(StoreError::Commit(e.to_string())));
                failed += 1;
                delivers.push(deliver);
                continue;
            }
            let (outcome, deliver) = job(Ok(conn));
            let closed = if outcome == JobOutcome::Done {
                run_cached(conn, "RELEASE job").map(|_| ())
            } else {
                // A caller's mistake is not a store failure.
                failed += u64::from(outcome != JobOutcome::Refused);
                run_cached(conn, "ROLLBACK TO job")
                    .and_then(|_| run_cached(conn, "RELEASE job").map(|_| ()))
            };
            if conn.is_autocommit() {
                broken = Some(match &outcome {
                    JobOutcome::Storage(e) => format!("the transaction was rolled back: {e}"),
                    _ => "the transaction was rolled back by SQLite".to_string(),
                });
            } else if let Err(e) = closed {
                broken = Some(format!("cannot close a savepoint: {e}"));
            }
            if let JobOutcome::Storage(e) = outcome {
                storage = Some(e);
            }
            delivers.push(deliver);
        }
        // Never acknowledge a commit into a WAL that was deleted.
        let commit = match (broken, self.watch.check_wal()) {
            (Some(why), _) => Err(why),
            // A job alone that failed was rolled back whole.
            (None, _) if conn.is_autocommit() => Ok(()),
            (None, Ok(())) => conn.execute_batch("COMMIT").map_err(|e| e.to_string()),
            (None, Err(lost)) => Err(lost),
        };
        stats.transactions.fetch_add(1, Ordering::Relaxed);
        stats.writes.fetch_add(count, Ordering::Relaxed);
        // A commit that fails fails every job of the group.
        let errors = if commit.is_ok() { failed } else { count };
        stats.write_errors.fetch_add(errors, Ordering::Relaxed);
        match commit {
            // The outcome is recorded before anyone hears of it: a caller
            // told its write failed finds health degraded.
            Ok(()) => {
                // A transaction that changed no row wrote nothing to the
                // disk (a periodic sweep that found no work): it tells
                // nothing about whether writes are stored again.
                if storage.is_some() || conn.total_changes() != changes_before {
                    stats.commit_outcome(storage);
                }
                delivers.into_iter().for_each(|d| d(None));
            }
            Err(msg) => {
                if !conn.is_autocommit() {
                    let _ = conn.execute_batch("ROLLBACK");
                }
                if self.stats.lost().is_none() {
                    let checked = self.watch.check_all();
                    if checked.is_err() {
                        self.file_check(checked);
                    } else {
                        self.stats.commit_outcome(Some(msg.clone()));
                    }
                }
                for d in delivers {
                    d(Some(StoreError::Commit(msg.clone())));
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::Lane;
    use crate::store::sqlite::tests::temp_store;
    use crate::store::StoreError;

    #[tokio::test]
    async fn a_job_that_ends_the_transaction_fails_the_whole_group() {
        let (_dir, store) = temp_store();
        let insert = |name: &'static str| {
            move |c: &rusqlite::Connection| {
                c.execute("INSERT INTO id_alloc(name, next) VALUES (?1, 1)", [name])?;
                Ok(())
            }
        };
        // The first job holds the writer so that the next three queue up
        // and are grouped into one transaction.
        let (started, running) = tokio::sync::oneshot::channel();
        let hold = tokio::spawn({
            let store = store.clone();
            async move {
                store
                    .write(move |_| {
                        let _ = started.send(());
                        std::thread::sleep(Duration::from_millis(300));
                        Ok(())
                    })
                    .await
            }
        });
        running.await.unwrap();
        let a = store.write(insert("a"));
        // As SQLite itself does on some disk-full errors.
        let b = store.write(|c| {
            c.execute_batch("ROLLBACK")?;
            Err::<(), _>(StoreError::Commit("simulated".into()))
        });
        let c = store.write(insert("c"));
        let (a, b, c) = tokio::join!(a, b, c);
        assert!(hold.await.unwrap().is_ok());
        assert!(a.is_err() && b.is_err() && c.is_err(), "{a:?} {b:?} {c:?}");
        let names: Vec<String> = store
            .read(|c| {
                let mut st = c.prepare("SELECT name FROM id_alloc WHERE name IN ('a', 'c')")?;
                let rows = st.query_map([], |r| r.get(0))?;
                Ok(rows.collect::<Result<_, _>>()?)
            })
            .await
            .unwrap();
        assert_eq!(
            names,
            Vec::<String>::new(),
            "nothing of a failed group is stored"
        );
        assert!(store.stats().problem().is_some());
        // A transaction that changes nothing (a sweep with no work) wrote
        // nothing to the disk: the problem stands.
        store.write(|_| Ok(())).await.unwrap();
        assert!(store.stats().problem().is_some());
        // The next write works and clears the problem.
        store.write(insert("d")).await.unwrap();
        assert_eq!(store.stats().problem(), None);
        store.close();
    }

    /// A job alone in its transaction runs without a savepoint of its
    /// own, on either lane: one that fails leaves nothing behind (its
    /// transaction is rolled back), its caller gets its error, and the
    /// writes after it are committed.
    #[tokio::test]
    async fn a_failed_job_alone_is_rolled_back_whole() {
        let (_dir, store) = temp_store();
        for lane in [Lane::Bulk, Lane::Writer] {
            let prefix = format!("{lane:?}-");
            let names = || {
                let like = format!("{prefix}%");
                store.read(move |c| {
                    let mut st = c.prepare("SELECT name FROM id_alloc WHERE name LIKE ?1")?;
                    let rows = st.query_map([like], |r| r.get(0))?;
                    Ok(rows.collect::<Result<Vec<String>, _>>()?)
                })
            };
            let insert = |name: &str| {
                let name = format!("{prefix}{name}");
                move |c: &rusqlite::Connection| {
                    c.execute("INSERT INTO id_alloc(name, next) VALUES (?1, 1)", [&name])
                }
            };
            let (a, b, c) = (insert("a"), insert("b"), insert("c"));
            let failed = store
                .send_write(
                    move |conn| {
                        a(conn)?;
                        a(conn)?;
                        Ok(())
                    },
                    Some(lane),
                    |r| r,
                )
                .await;
            assert!(failed.is_err(), "{lane:?}");
            assert_eq!(names().await.unwrap(), Vec::<String>::new(), "{lane:?}");
            assert_eq!(store.stats().problem(), None, "not a storage failure");
            store
                .send_write(move |conn| Ok(b(conn).map(|_| ())?), Some(lane), |r| r)
                .await
                .unwrap();
            store
                .write(move |conn| Ok(c(conn).map(|_| ())?))
                .await
                .unwrap();
            let expected: Vec<String> = ["b", "c"].iter().map(|n| format!("{prefix}{n}")).collect();
            assert_eq!(names().await.unwrap(), expected, "{lane:?}");
        }
        store.close();
    }
}
