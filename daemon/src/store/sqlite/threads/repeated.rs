//! A failure the checkpointer may meet pass after pass (a failing disk
//! fails every checkpoint and every sync, up to one pass per writer commit
//! past the WAL limit): said at once, then at most every [`WARN_EVERY`]
//! while it goes on, with how many were not said, and once more when it
//! stops. One line per pass would bury every other line of the log.

use std::time::{Duration, Instant};

/// Least time between two warnings of one failure that goes on.
pub(super) const WARN_EVERY: Duration = Duration::from_secs(60);

/// One kind of failure, as the log has told it so far.
#[derive(Debug, Default)]
pub(super) struct Repeated {
    /// While failing: when the last warning was, and the failures since
    /// it that were not warned of.
    failing: Option<(Instant, u64)>,
    /// Failures since the last success.
    total: u64,
}

impl Repeated {
    /// It failed at `now`: `Some(unsaid)` when this failure is to be
    /// warned of, `unsaid` being the failures since the last warning that
    /// were not (0 for the first of a run).
    pub(super) fn failed(&mut self, now: Instant) -> Option<u64> {
        self.total += 1;
        match &mut self.failing {
            None => {
                self.failing = Some((now, 0));
                Some(0)
            }
            Some((said, unsaid)) if now.duration_since(*said) >= WARN_EVERY => {
                let n = *unsaid;
                *said = now;
                *unsaid = 0;
                Some(n)
            }
            Some((_, unsaid)) => {
                *unsaid += 1;
                None
            }
        }
    }

    /// It worked: `Some(failures)` when this ends a run of failures (how
    /// many there were), to be said too.
    pub(super) fn worked(&mut self) -> Option<u64> {
        self.failing.take()?;
        Some(std::mem::take(&mut self.total))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_of_failures_is_said_at_once_then_sparingly_then_its_end() {
        let t0 = Instant::now();
        let mut r = Repeated::default();
        assert_eq!(r.worked(), None, "no failure, nothing to say");
        assert_eq!(r.failed(t0), Some(0), "the first is said at once");
        for i in 1..=5 {
            assert_eq!(r.failed(t0 + Duration::from_secs(i)), None, "failure {i}");
        }
        assert_eq!(
            r.failed(t0 + WARN_EVERY),
            Some(5),
            "a minute on: said again, with the five not said"
        );
        assert_eq!(r.failed(t0 + WARN_EVERY + Duration::from_secs(1)), None);
        assert_eq!(r.worked(), Some(8), "its end says how many failed");
        assert_eq!(r.worked(), None, "said once");
        assert_eq!(
            r.failed(t0 + WARN_EVERY + Duration::from_secs(2)),
            Some(0),
            "a new run is said at once, however soon"
        );
        assert_eq!(r.worked(), Some(1));
    }
}
