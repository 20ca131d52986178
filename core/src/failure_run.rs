//! A run of failed requests between the edge and the daemon, said once
//! when it starts and once when it ends.
//!
//! While the database is down or hung every miss fails the same way, and a
//! line per failure is thousands of lines that bury the one that matters.
//! The worker (for the daemon's error replies and timeouts) and the daemon
//! (for store calls past the edge's deadline) keep one [`FailureRun`]
//! each: the first failure is logged, the next ones only counted, and the
//! first success after them logs that requests are answered again, with
//! how many failed meanwhile and for how long.

/// The run under way, if any.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct FailureRun {
    /// When the run started (ms on the owner's clock) and failures so far.
    run: Option<(u64, u64)>,
}

/// A run that ended: what the recovery line says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ended {
    /// Requests that failed in the run, the first included.
    pub failures: u64,
    /// Milliseconds from the first failure to the success that ended it.
    pub lasted_ms: u64,
}

impl FailureRun {
    /// No run under way.
    pub const fn new() -> Self {
        Self { run: None }
    }

    /// A request failed at `now_ms`: true when it starts a run (log it),
    /// false when it is counted in the run under way (stay quiet).
    pub fn failed(&mut self, now_ms: u64) -> bool {
        match &mut self.run {
            Some((_, failures)) => {
                *failures += 1;
                false
            }
            None => {
                self.run = Some((now_ms, 1));
                true
            }
        }
    }

    /// A request was answered at `now_ms`: the run it ends, if one was
    /// under way (log it once).
    pub fn answered(&mut self, now_ms: u64) -> Option<Ended> {
        self.run.take().map(|(since, failures)| Ended {
            failures,
            // The clock may be another worker's or step back: never negative.
            lasted_ms: now_ms.saturating_sub(since),
        })
    }

    /// Whether a run is under way.
    pub fn is_failing(&self) -> bool {
        self.run.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_is_said_once_when_it_starts_and_once_when_it_ends() {
        let mut run = FailureRun::new();
        assert_eq!(run.answered(5), None, "no run, nothing to say");
        assert!(run.failed(1000), "the first failure is logged");
        for t in 1001..1500 {
            assert!(!run.failed(t), "the others are counted");
        }
        assert!(run.is_failing());
        assert_eq!(
            run.answered(21_000),
            Some(Ended {
                failures: 500,
                lasted_ms: 20_000
            })
        );
        assert!(!run.is_failing());
        assert_eq!(run.answered(21_001), None, "the end is said once");
        // The next failure starts a new run, logged again.
        assert!(run.failed(30_000));
        assert_eq!(
            run.answered(29_000),
            Some(Ended {
                failures: 1,
                lasted_ms: 0
            }),
            "a clock that stepped back gives no negative length"
        );
    }
}
