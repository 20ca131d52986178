//! Logging for periodic loops (the webhook claimer, the takedown refresh,
//! the spool import, the recycling sweep): while the database is down
//! every tick fails the same way, and a warning per tick is thousands of
//! lines that bury the one that matters. An [`OutageLog`] warns once when
//! its loop starts failing, logs the repeats at debug level, and says
//! once when it works again, with how long and how many ticks it failed.

use std::fmt::Display;
use std::time::{Duration, Instant};

/// What one tick's result changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// The loop works, as before.
    StillWorks,
    /// The first failure: warned.
    Started,
    /// Another failure of the same outage: logged at debug level.
    StillFailing,
    /// The first success after failures: logged at info level.
    Ended {
        /// How long the loop failed.
        after: Duration,
        /// Ticks that failed meanwhile.
        failures: u64,
    },
}

/// One periodic loop's outage state. Owned by the loop (no lock).
#[derive(Debug)]
pub struct OutageLog {
    /// What the loop does, as in "cannot {what}".
    what: &'static str,
    /// Since when it fails, and how many ticks failed.
    down: Option<(Instant, u64)>,
}

impl OutageLog {
    /// For a loop that would say "cannot `what`".
    pub fn new(what: &'static str) -> Self {
        Self { what, down: None }
    }

    /// A tick failed with `error`.
    pub fn failed(&mut self, error: &dyn Display) -> Change {
        match &mut self.down {
            Some((_, failures)) => {
                *failures += 1;
                tracing::debug!(error = %error, "still cannot {}", self.what);
                Change::StillFailing
            }
            None => {
                self.down = Some((Instant::now(), 1));
                tracing::warn!(
                    error = %error,
                    "cannot {} (said once; retried every tick until it works)",
                    self.what
                );
                Change::Started
            }
        }
    }

    /// A tick worked.
    pub fn worked(&mut self) -> Change {
        match self.down.take() {
            None => Change::StillWorks,
            Some((since, failures)) => {
                let after = since.elapsed();
                tracing::info!(?after, failures, "can {} again", self.what);
                Change::Ended { after, failures }
            }
        }
    }

    /// Records `result` as a tick's outcome; its value, if it worked.
    pub fn record<T, E: Display>(&mut self, result: Result<T, E>) -> Option<T> {
        match result {
            Ok(v) => {
                self.worked();
                Some(v)
            }
            Err(e) => {
                self.failed(&e);
                None
            }
        }
    }

    /// Whether the loop is failing now.
    pub fn is_failing(&self) -> bool {
        self.down.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outage_is_said_once_when_it_starts_and_once_when_it_ends() {
        let mut log = OutageLog::new("claim webhook deliveries");
        assert_eq!(log.worked(), Change::StillWorks);
        assert!(!log.is_failing());
        assert_eq!(log.failed(&"connection refused"), Change::Started);
        assert_eq!(log.failed(&"connection refused"), Change::StillFailing);
        assert_eq!(log.record::<(), _>(Err("timed out")), None);
        assert!(log.is_failing());
        match log.worked() {
            Change::Ended { failures, .. } => assert_eq!(failures, 3),
            other => panic!("{other:?}"),
        }
        assert_eq!(log.worked(), Change::StillWorks);
        // The next failure is a new outage, warned again.
        assert_eq!(log.failed(&"connection refused"), Change::Started);
        assert_eq!(log.record(Ok::<_, String>(7)), Some(7));
        assert!(!log.is_failing());
    }
}
