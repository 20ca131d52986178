//! Starting while PostgreSQL cannot be reached: after a power cut the
//! database host may come up after the daemon's, and a daemon that exits
//! at once leaves the site down until someone restarts it. `serve` waits
//! instead, retrying with backoff, and becomes ready when the server
//! answers. The wait is said once when it starts and once when it ends,
//! not once per attempt (and not as an outage of a running daemon,
//! [`super::reach`]). A server that answers
//! and refuses (wrong password, no such database) is no outage: that
//! stops the daemon with the server's words.

use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::{Pg, PgError};

/// The first pause between attempts.
const FIRST_RETRY: Duration = Duration::from_millis(250);

/// The longest pause between attempts.
const MAX_RETRY: Duration = Duration::from_secs(10);

/// Returns once `pg` hands out a connection; fails at once on an error
/// other than an unreachable server, or when `stop` is cancelled.
pub async fn wait(pg: &Pg, stop: &CancellationToken) -> Result<(), PgError> {
    let mut pause = FIRST_RETRY;
    let mut waiting: Option<Instant> = None;
    loop {
        match pg.take().await {
            Ok(_) => {
                if let Some(since) = waiting {
                    tracing::info!(url = pg.url(), after = ?since.elapsed(), "PostgreSQL answers; starting");
                }
                return Ok(());
            }
            Err(e) if e.is_unreachable() => {
                if waiting.is_none() {
                    waiting = Some(Instant::now());
                    tracing::warn!(
                        url = pg.url(),
                        error = %e,
                        "PostgreSQL cannot be reached at start: waiting for it, retrying every \
                         {} s at most (SIGTERM stops the wait)",
                        MAX_RETRY.as_secs()
                    );
                }
            }
            Err(e) => return Err(e),
        }
        tokio::select! {
            _ = stop.cancelled() => return Err(PgError::StoppedWaiting(pg.url().to_string())),
            _ = tokio::time::sleep(pause) => {}
        }
        pause = next_pause(pause);
    }
}

/// Doubles, up to [`MAX_RETRY`].
fn next_pause(pause: Duration) -> Duration {
    (pause * 2).min(MAX_RETRY)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_double_up_to_the_cap() {
        let mut pause = FIRST_RETRY;
        let mut seen = vec![pause];
        while pause < MAX_RETRY {
            pause = next_pause(pause);
            seen.push(pause);
        }
        assert_eq!(seen.first(), Some(&Duration::from_millis(250)));
        assert_eq!(seen[1], Duration::from_millis(500));
        assert_eq!(seen.last(), Some(&MAX_RETRY));
        assert_eq!(next_pause(MAX_RETRY), MAX_RETRY);
    }
}
