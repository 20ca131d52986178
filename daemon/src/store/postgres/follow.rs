//! Following the change log: a task that gives final changes their
//! versions and hands every versioned change to the daemon exactly once,
//! in version order (`postgres::changes`), however the connection to PostgreSQL
//! comes and goes.
//!
//! `LISTEN` is lossy: notifications sent while the session is down are
//! gone. So the follower treats a notification only as a hint to read now;
//! after every (re)connect it `LISTEN`s first and then reads everything
//! after its position, so a change committed while it was away is read on
//! the way back; and it reads every `poll` anyway, which also carries it
//! when notifications are off (engines without `LISTEN`). The position
//! advances only after a batch was handed over.

use std::time::Duration;

use tokio::sync::mpsc;
use tokio_postgres::AsyncMessage;
use tokio_util::sync::CancellationToken;

use super::changes::{self, Change, LogRead, CHANNEL};
use super::{Pg, PgError};

/// Changes read at a time.
const BATCH: u32 = 1000;
/// Longest wait between reconnection attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// What the follower hands over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Followed {
    /// Changes in version order (each change's `seq` is its version); the
    /// follower's position is now the last one's.
    Changes(Vec<Change>),
    /// Versions after the position were pruned: drop everything cached,
    /// the follower goes on from this version (taken before the drop is
    /// due).
    Resync(u64),
}

/// How the follower is woken.
#[derive(Debug, Clone, Copy)]
pub struct FollowOptions {
    /// Read at least this often, notification or not.
    pub poll: Duration,
    /// `LISTEN` for wake-ups (off: poll only).
    pub listen: bool,
}

impl Default for FollowOptions {
    fn default() -> Self {
        Self {
            poll: Duration::from_secs(1),
            listen: true,
        }
    }
}

/// Follows the log from version `from` until `stop` is cancelled or the
/// receiver of `out` is dropped; returns the last version handed over.
/// An outage is logged once, and the recovery once, by `postgres::reach`.
pub async fn follow(
    pg: Pg,
    mut from: u64,
    options: FollowOptions,
    out: mpsc::Sender<Followed>,
    stop: CancellationToken,
) -> u64 {
    let mut backoff = Duration::from_millis(100);
    loop {
        let mut up = false;
        let started = std::time::Instant::now();
        let result = session(&pg, &options, &out, &mut from, &stop, &mut up).await;
        if up {
            pg.reach().answered(pg.url(), started);
            backoff = Duration::from_millis(100);
        }
        match result {
            Ok(()) => return from,
            Err(e) => {
                tracing::debug!(url = %pg.url(), error = %e, "change-log follower lost its session; reconnecting");
                pg.reach().failed(pg.url(), &e, started);
            }
        }
        tokio::select! {
            _ = stop.cancelled() => return from,
            _ = tokio::time::sleep(backoff) => {}
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// One session: `LISTEN` (if asked), catch up, then read on every wake-up
/// or poll tick. `Ok` when told to stop; `Err` when the database failed.
/// Sets `up` once the session has caught up.
async fn session(
    pg: &Pg,
    options: &FollowOptions,
    out: &mpsc::Sender<Followed>,
    from: &mut u64,
    stop: &CancellationToken,
    up: &mut bool,
) -> Result<(), PgError> {
    let (wake_tx, mut wake) = mpsc::channel::<()>(1);
    let mut listener = match options.listen {
        true => Some(Listener::start(pg, wake_tx).await?),
        false => None,
    };
    let mut tick = tokio::time::interval(options.poll);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        // Catch up first (right after LISTEN too: nothing slips between).
        if !drain(pg, out, from).await? {
            return Ok(());
        }
        *up = true;
        tokio::select! {
            _ = stop.cancelled() => return Ok(()),
            _ = tick.tick() => {}
            Some(()) = wake.recv() => {}
            _ = async {
                match listener.as_mut() {
                    Some(l) => { let _ = (&mut l.task).await; }
                    None => std::future::pending::<()>().await,
                }
            } => return Err(PgError::SessionEnded("the LISTEN session")),
        }
    }
}

/// Versions what is final, then reads and hands over every version after
/// `from`; `false` when the receiver is gone.
async fn drain(pg: &Pg, out: &mpsc::Sender<Followed>, from: &mut u64) -> Result<bool, PgError> {
    let mut client = pg.get().await?;
    changes::sequence(&mut client).await?;
    loop {
        match changes::read_after(&client, *from, BATCH).await? {
            LogRead::Changes(batch) if batch.is_empty() => return Ok(true),
            LogRead::Changes(batch) => {
                let last = batch.last().map_or(*from, |c| c.seq);
                let full = batch.len() == BATCH as usize;
                if out.send(Followed::Changes(batch)).await.is_err() {
                    return Ok(false);
                }
                *from = last;
                if !full {
                    return Ok(true);
                }
            }
            LogRead::Pruned => {
                let head = changes::head(&client).await?;
                if out.send(Followed::Resync(head)).await.is_err() {
                    return Ok(false);
                }
                *from = head;
            }
        }
    }
}

/// A session of its own that `LISTEN`s and turns each notification into a
/// wake-up; its task ends when the session does.
struct Listener {
    /// Dropping the client would end the session.
    client: tokio_postgres::Client,
    /// Drives the connection; finished when the session is gone.
    task: tokio::task::JoinHandle<()>,
}

impl Listener {
    async fn start(pg: &Pg, wake: mpsc::Sender<()>) -> Result<Listener, PgError> {
        // Bounded like the pool's connections: a hung server (connection
        // accepted, never greeted) must not hang the follower.
        let (client, mut connection) = tokio::time::timeout(pg.create_bound(), pg.session())
            .await
            .map_err(|_| PgError::Unanswered {
                url: pg.url().to_string(),
                after: pg.create_bound(),
            })??;
        let task = tokio::spawn(async move {
            loop {
                match std::future::poll_fn(|cx| connection.poll_message(cx)).await {
                    // A full channel already holds a wake-up.
                    Some(Ok(AsyncMessage::Notification(_))) => drop(wake.try_send(())),
                    Some(Ok(_)) => {}
                    Some(Err(_)) | None => return,
                }
            }
        });
        let listener = Listener { client, task };
        listener
            .client
            .batch_execute(&format!("LISTEN {CHANNEL}"))
            .await
            .map_err(PgError::query("listening for change notifications"))?;
        Ok(listener)
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.task.abort();
    }
}
