//! When a worker tries the daemon's socket again after its link went down.
//!
//! Two kinds of failure call for different waits. A `connect()` that finds
//! nobody listening (the socket file missing, or left behind by a daemon
//! that died) means the daemon is simply not running: trying again costs
//! one system call and bothers no one, so the worker tries every
//! [`NO_LISTENER_RETRY_MS`] and is linked again within that long of the
//! daemon's return (until then misses answer 503, and deleted or disabled
//! links go on redirecting from the zone). Any other failure reached a
//! daemon, or something listening in its place: one that refused the
//! handshake or could not prove the key (a misconfigured pair), hung in
//! the handshake, broke the protocol or dropped the link. Those wait
//! longer each time, from [`FIRST_BACKOFF_MS`] up to [`MAX_BACKOFF_MS`],
//! so a misconfigured pair does not make the daemon log ten refusals a
//! second per worker.

/// Wait after a `connect()` that found nobody listening, in milliseconds.
pub const NO_LISTENER_RETRY_MS: u64 = 100;
/// First wait after any other failure, in milliseconds; each further
/// failure doubles it.
pub const FIRST_BACKOFF_MS: u64 = 100;
/// Longest wait after failures other than "nobody listening".
pub const MAX_BACKOFF_MS: u64 = 5000;

/// How an attempt to reach the daemon failed, as far as retrying goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// `connect()` found nobody listening (`ENOENT`, `ECONNREFUSED`).
    NoListener,
    /// Anything else: something answered, and failed us.
    Other,
}

/// A worker's retry schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reconnect {
    /// Wait after the next failure other than [`Failure::NoListener`].
    backoff: u64,
}

impl Default for Reconnect {
    fn default() -> Self {
        Self::new()
    }
}

impl Reconnect {
    /// A schedule with nothing failed yet.
    pub const fn new() -> Self {
        Self {
            backoff: FIRST_BACKOFF_MS,
        }
    }

    /// Milliseconds to wait before the next attempt, after one that failed
    /// as `failure`. Finding nobody listening leaves the backoff of the
    /// other failures as it was: a daemon restarted into the same
    /// misconfiguration is not retried faster for having been away.
    pub fn after(&mut self, failure: Failure) -> u64 {
        match failure {
            Failure::NoListener => NO_LISTENER_RETRY_MS,
            Failure::Other => {
                let wait = self.backoff;
                self.backoff = (wait * 2).min(MAX_BACKOFF_MS);
                wait
            }
        }
    }

    /// The handshake completed: the next failure starts the backoff over.
    pub fn connected(&mut self) {
        self.backoff = FIRST_BACKOFF_MS;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nobody_listening_is_retried_every_100_ms_for_as_long_as_it_lasts() {
        let mut r = Reconnect::new();
        for _ in 0..1000 {
            assert_eq!(r.after(Failure::NoListener), 100);
        }
    }

    #[test]
    fn other_failures_back_off_doubling_up_to_5_s() {
        let mut r = Reconnect::new();
        let waits: Vec<u64> = (0..9).map(|_| r.after(Failure::Other)).collect();
        assert_eq!(
            waits,
            [100, 200, 400, 800, 1600, 3200, 5000, 5000, 5000],
            "a daemon refusing the handshake is asked at most once per 5 s"
        );
    }

    #[test]
    fn nobody_listening_keeps_the_backoff_and_a_handshake_resets_it() {
        let mut r = Reconnect::new();
        for _ in 0..4 {
            r.after(Failure::Other);
        }
        // The misconfigured daemon restarts: fast while it is away ...
        assert_eq!(r.after(Failure::NoListener), 100);
        assert_eq!(r.after(Failure::NoListener), 100);
        // ... and refused again, the wait goes on growing.
        assert_eq!(r.after(Failure::Other), 1600);
        r.connected();
        assert_eq!(r.after(Failure::Other), 100);
        assert_eq!(r.after(Failure::NoListener), 100);
        assert_eq!(r.after(Failure::Other), 200);
    }
}
