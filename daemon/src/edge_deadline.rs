//! The edge's deadline on the store: every store call the IPC server makes
//! for a waiting nginx worker (a lookup miss, the link behind a password
//! check, a visit lease) is given `edge_timeout_ms`, and past it the worker
//! is answered `StoreError::Unavailable` (a `Reply::Error`: its request
//! gets a 503).
//!
//! A worker gives each request `shortlink_timeout` (500 ms by default) and
//! takes a daemon that sends nothing back in that time for dead: it drops
//! the link, fails every miss at once and logs that the daemon is down.
//! Without a deadline here a hung database (a stopped server, a cut
//! network) makes a healthy daemon look dead that way about once a
//! second, and holds the connection's in-flight permits until the reader
//! stops. With a deadline below nginx's, the worker always hears back, and
//! only the requests that needed the database fail.
//!
//! A read is dropped at the deadline, so nothing it would have read is
//! cached. A write (a visit lease) is left to finish in a task of its own,
//! and what it did after the deadline is undone by the caller's `late`
//! (visits granted to a worker that was told "unavailable" are handed
//! back), so a deadline never loses what the database committed.
//!
//! Calls past the deadline are logged once per run (the first warned, the
//! rest counted until a call is in time again), not once each: a hung
//! database fails every miss the same way.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use shortlink_core::failure_run::FailureRun;

use crate::store::StoreError;

/// The deadline, and the run of calls that missed it.
#[derive(Debug)]
pub struct EdgeDeadline {
    limit: Duration,
    /// The origin of the run's clock.
    epoch: Instant,
    /// Calls past the deadline since the last one in time (a lock held
    /// for a counter's update, never across an await).
    late: Mutex<FailureRun>,
    /// Whether a run of late calls is under way: a call in time outside
    /// one (nearly every call) takes no lock.
    in_run: AtomicBool,
}

impl EdgeDeadline {
    /// A deadline of `limit` on each call.
    pub fn new(limit: Duration) -> Self {
        Self {
            limit,
            epoch: Instant::now(),
            late: Mutex::new(FailureRun::new()),
            in_run: AtomicBool::new(false),
        }
    }

    /// The outcome of read `call`, or `StoreError::Unavailable` when it
    /// has not finished within the deadline (then it is dropped, and
    /// nothing of it is kept).
    pub async fn read<T, E: From<StoreError>>(
        &self,
        call: impl Future<Output = Result<T, E>>,
    ) -> Result<T, E> {
        match tokio::time::timeout(self.limit, call).await {
            Ok(result) => {
                if result.is_ok() {
                    self.in_time();
                }
                result
            }
            Err(_) => Err(self.missed().into()),
        }
    }

    /// The outcome of write `call`, run in a task of its own, or
    /// `StoreError::Unavailable` when it has not finished within the
    /// deadline: the write then goes on, and what it returns when it
    /// succeeds is handed to `late` (to undo what the worker will never
    /// use).
    pub async fn write<T, Late, Undo>(
        &self,
        call: impl Future<Output = Result<T, StoreError>> + Send + 'static,
        late: Late,
    ) -> Result<T, StoreError>
    where
        T: Send + 'static,
        Late: FnOnce(T) -> Undo + Send + 'static,
        Undo: Future<Output = ()> + Send + 'static,
    {
        let mut task = tokio::spawn(call);
        match tokio::time::timeout(self.limit, &mut task).await {
            Ok(joined) => {
                let result = joined.unwrap_or_else(|e| Err(StoreError::Panic(e.to_string())));
                if result.is_ok() {
                    self.in_time();
                }
                result
            }
            Err(_) => {
                tokio::spawn(async move {
                    if let Ok(Ok(done)) = task.await {
                        late(done).await;
                    }
                });
                Err(self.missed())
            }
        }
    }

    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    /// A call missed the deadline: the error the worker is sent, and a
    /// warning if it starts a run.
    fn missed(&self) -> StoreError {
        let ms = self.limit.as_millis();
        let mut late = self.late.lock().unwrap_or_else(|e| e.into_inner());
        let starts = late.failed(self.now_ms());
        self.in_run.store(true, Ordering::Relaxed);
        drop(late);
        if starts {
            tracing::warn!(
                edge_timeout_ms = ms as u64,
                "the database did not answer an nginx worker's request within edge_timeout_ms: \
                 the worker answers 503 (said once; calls past it are counted until one is in time)"
            );
        }
        StoreError::Unavailable(format!(
            "no answer from the database within {ms} ms (edge_timeout_ms)"
        ))
    }

    /// A call finished in time: ends a run of late ones, saying so once.
    fn in_time(&self) {
        if !self.in_run.load(Ordering::Relaxed) {
            return;
        }
        let ended = {
            let mut late = self.late.lock().unwrap_or_else(|e| e.into_inner());
            self.in_run.store(false, Ordering::Relaxed);
            late.answered(self.now_ms())
        };
        if let Some(ended) = ended {
            tracing::info!(
                late = ended.failures,
                after = ?Duration::from_millis(ended.lasted_ms),
                "the database answers nginx workers within edge_timeout_ms again"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Arc;

    /// Long enough for anything that is not hung, on any machine.
    const AMPLE: Duration = Duration::from_secs(30);

    fn unavailable<T: std::fmt::Debug>(r: Result<T, StoreError>) -> String {
        match r {
            Err(StoreError::Unavailable(m)) => m,
            other => panic!("expected Unavailable, got {other:?}"),
        }
    }

    /// Polls `f` every 10 ms until it holds, for at most [`AMPLE`].
    async fn until(f: impl Fn() -> bool) {
        let started = Instant::now();
        while !f() {
            assert!(started.elapsed() < AMPLE, "not within {AMPLE:?}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    #[tokio::test]
    async fn a_read_past_the_deadline_is_unavailable_and_ends_a_run_when_one_is_in_time() {
        let d = EdgeDeadline::new(Duration::from_millis(50));
        let hung = d.read(std::future::pending::<Result<u8, StoreError>>());
        let message = unavailable(hung.await);
        assert!(message.contains("50 ms") && message.contains("edge_timeout_ms"));
        assert!(d.late.lock().unwrap().is_failing());
        unavailable(
            d.read(std::future::pending::<Result<u8, StoreError>>())
                .await,
        );
        // The store's own errors pass through as they are and end nothing.
        let failed = d.read(async { Err::<u8, _>(StoreError::Closed) }).await;
        assert!(matches!(failed, Err(StoreError::Closed)));
        assert!(d.late.lock().unwrap().is_failing());
        assert_eq!(d.read(async { Ok::<_, StoreError>(1) }).await.unwrap(), 1);
        assert!(!d.late.lock().unwrap().is_failing(), "in time again");
    }

    #[tokio::test]
    async fn a_late_write_finishes_and_what_it_did_is_handed_to_late() {
        let d = EdgeDeadline::new(Duration::from_millis(50));
        let undone = Arc::new(AtomicU32::new(0));
        let undo = |undone: Arc<AtomicU32>| {
            move |granted: u32| async move {
                undone.fetch_add(granted, Ordering::SeqCst);
            }
        };
        let (release, released) = tokio::sync::oneshot::channel::<()>();
        let slow = d.write(
            async move {
                // Finishes only once the worker has been told "unavailable".
                let _ = released.await;
                Ok(5u32)
            },
            undo(undone.clone()),
        );
        unavailable(slow.await);
        assert_eq!(undone.load(Ordering::SeqCst), 0, "still running");
        release.send(()).unwrap();
        until(|| undone.load(Ordering::SeqCst) == 5).await;
    }

    #[tokio::test]
    async fn a_write_in_time_or_one_that_failed_late_is_not_undone() {
        let d = EdgeDeadline::new(AMPLE);
        let undone = Arc::new(AtomicU32::new(0));
        let count = undone.clone();
        let quick = d.write(async { Ok(2u32) }, move |n| async move {
            count.fetch_add(n, Ordering::SeqCst);
        });
        assert_eq!(quick.await.unwrap(), 2);
        let d = EdgeDeadline::new(Duration::from_millis(50));
        let (release, released) = tokio::sync::oneshot::channel::<()>();
        let (ended, end) = tokio::sync::oneshot::channel::<()>();
        let count = undone.clone();
        let failing = d.write(
            async move {
                let _ = released.await;
                let _ = ended.send(());
                Err::<u32, _>(StoreError::Closed)
            },
            move |n| async move {
                count.fetch_add(n, Ordering::SeqCst);
            },
        );
        unavailable(failing.await);
        release.send(()).unwrap();
        tokio::time::timeout(AMPLE, end).await.unwrap().unwrap();
        tokio::task::yield_now().await;
        assert_eq!(undone.load(Ordering::SeqCst), 0, "nothing to undo");
    }
}
