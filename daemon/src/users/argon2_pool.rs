//! A bounded pool for Argon2 work. Every hash or check fills a 19 MiB
//! memory block; run on tokio's blocking pool without a bound, N concurrent
//! sign-ins allocated N blocks that the allocator then kept (30 unknown
//! names took the daemon to 600 MB). Here at most [`WORKERS`] jobs run at
//! once, each on a memory block kept for the next job, and at most
//! [`QUEUE`] more wait their turn; an unauthenticated caller beyond that is
//! refused at once ([`Argon2Pool::try_run`]).

use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use argon2::Block;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Argon2 jobs running at once (the machine's cores are for serving too).
pub const WORKERS: usize = 2;
/// Sign-in checks that may wait for a worker before more are refused.
pub const QUEUE: usize = 8;

/// A worker's argon2 memory, grown to the largest job it has run and
/// reused by the next one.
pub type Memory = Vec<Block>;

/// Why a job did not run to the end.
#[derive(Debug, thiserror::Error)]
pub enum PoolError {
    /// Every worker is busy and the queue is full.
    #[error("{WORKERS} password checks are running and {QUEUE} are waiting")]
    Busy,
    /// The job panicked or the pool is gone.
    #[error("password hashing failed: {0}")]
    Failed(String),
}

/// Workers with their memory, and the bounds on running and waiting jobs.
pub struct Argon2Pool {
    /// Memory of the idle workers; never more blocks than workers.
    idle: Arc<Mutex<Vec<Memory>>>,
    /// One permit per worker.
    running: Arc<Semaphore>,
    /// Jobs admitted by [`Argon2Pool::try_run`]: running or waiting.
    admitted: Arc<Semaphore>,
}

impl Argon2Pool {
    /// A pool of `workers` that lets `queue` more jobs wait.
    pub fn new(workers: usize, queue: usize) -> Self {
        Argon2Pool {
            idle: Arc::new(Mutex::new(Vec::with_capacity(workers))),
            running: Arc::new(Semaphore::new(workers)),
            admitted: Arc::new(Semaphore::new(workers + queue)),
        }
    }

    /// The daemon's pool: memory is a property of the process, so every
    /// hash and check in it shares one bound.
    pub fn global() -> &'static Argon2Pool {
        static POOL: OnceLock<Argon2Pool> = OnceLock::new();
        POOL.get_or_init(|| Argon2Pool::new(WORKERS, QUEUE))
    }

    /// Runs `job` when a worker is free; [`PoolError::Busy`] at once when
    /// `workers + queue` jobs are in already. For callers anyone can be.
    pub async fn try_run<T, F>(&self, job: F) -> Result<T, PoolError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Memory) -> T + Send + 'static,
    {
        let admission = Arc::clone(&self.admitted)
            .try_acquire_owned()
            .map_err(|_| PoolError::Busy)?;
        self.run_with(job, Some(admission)).await
    }

    /// Runs `job` when a worker is free, however long that takes. For
    /// callers already authenticated (adding users, changing passwords).
    pub async fn run<T, F>(&self, job: F) -> Result<T, PoolError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Memory) -> T + Send + 'static,
    {
        self.run_with(job, None).await
    }

    async fn run_with<T, F>(
        &self,
        job: F,
        admission: Option<OwnedSemaphorePermit>,
    ) -> Result<T, PoolError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Memory) -> T + Send + 'static,
    {
        let worker = Arc::clone(&self.running)
            .acquire_owned()
            .await
            .map_err(|e| PoolError::Failed(e.to_string()))?;
        let idle = Arc::clone(&self.idle);
        tokio::task::spawn_blocking(move || {
            // The permits and the memory go back when the work is done, not
            // when the caller stops waiting (a client that hangs up must
            // not make room for one more block while this one is in use).
            let _held = (worker, admission);
            let mut memory = idle
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .pop()
                .unwrap_or_default();
            let out = job(&mut memory);
            idle.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(memory);
            out
        })
        .await
        .map_err(|e| PoolError::Failed(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    /// A job that signals when it starts and then waits for `release`.
    fn blocking_job(
        started: mpsc::Sender<()>,
        release: mpsc::Receiver<()>,
    ) -> impl FnOnce(&mut Memory) + Send + 'static {
        move |_| {
            started.send(()).unwrap();
            release.recv_timeout(Duration::from_secs(10)).unwrap();
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn refuses_at_once_when_workers_and_queue_are_full() {
        let pool = Arc::new(Argon2Pool::new(1, 1));
        let (started_tx, started) = mpsc::channel();
        let (release_first, rx) = mpsc::channel();
        let p = pool.clone();
        let first = tokio::spawn(async move { p.try_run(blocking_job(started_tx, rx)).await });
        started.recv_timeout(Duration::from_secs(10)).unwrap();
        // The second waits for the worker; the third is refused at once.
        let p = pool.clone();
        let second = tokio::spawn(async move { p.try_run(|_| 2).await });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(matches!(pool.try_run(|_| 3).await, Err(PoolError::Busy)));
        // An authenticated caller waits instead of being refused.
        let p = pool.clone();
        let waiting = tokio::spawn(async move { p.run(|_| 4).await });
        release_first.send(()).unwrap();
        first.await.unwrap().unwrap();
        assert_eq!(second.await.unwrap().unwrap(), 2);
        assert_eq!(waiting.await.unwrap().unwrap(), 4);
        assert_eq!(pool.try_run(|_| 5).await.unwrap(), 5, "room again");
    }

    #[tokio::test]
    async fn memory_is_reused_not_reallocated() {
        let pool = Argon2Pool::new(1, 0);
        let first = pool
            .run(|m| {
                m.resize(64, Block::default());
                m.as_ptr() as usize
            })
            .await
            .unwrap();
        let second = pool.run(|m| (m.len(), m.as_ptr() as usize)).await.unwrap();
        assert_eq!(second, (64, first), "the next job gets the same block");
        assert_eq!(pool.idle.lock().unwrap().len(), 1);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_caller_that_gives_up_keeps_its_slot_until_the_work_ends() {
        let pool = Arc::new(Argon2Pool::new(1, 0));
        let (started_tx, started) = mpsc::channel();
        let (release, rx) = mpsc::channel();
        let p = pool.clone();
        let caller = tokio::spawn(async move { p.try_run(blocking_job(started_tx, rx)).await });
        started.recv_timeout(Duration::from_secs(10)).unwrap();
        caller.abort();
        let _ = caller.await;
        assert!(
            matches!(pool.try_run(|_| ()).await, Err(PoolError::Busy)),
            "the abandoned job still holds its worker and memory"
        );
        release.send(()).unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while pool.try_run(|_| ()).await.is_err() {
            assert!(std::time::Instant::now() < deadline, "slot never freed");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}
