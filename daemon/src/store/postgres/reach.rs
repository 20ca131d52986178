//! Whether PostgreSQL answers, as every part of the daemon sees it: the
//! pool taking connections, the change-log follower's session. An outage
//! is logged once when it starts and once when it ends, with how long it
//! lasted and how many operations failed meanwhile; the failures between
//! are logged at debug level by whoever met them (a minute down under load
//! is thousands of failed lookups, not thousands of error lines).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// Shared by every clone of a [`super::Pg`].
#[derive(Debug, Default)]
pub struct Reach {
    /// Since when the server has not answered, and why.
    down: Mutex<Option<(Instant, String)>>,
    /// Operations that failed because of it since then.
    failed: AtomicU64,
    /// `down` is set: read by every answered operation without the lock,
    /// which only the changes of state take.
    is_down: AtomicBool,
    /// When the last outage ended: a failure of an operation begun before
    /// then met that outage, not a new one.
    recovered: Mutex<Option<Instant>>,
}

impl Reach {
    /// An operation begun at `started` could not reach `url`. One begun
    /// before the last outage ended (a connection attempt answered "the
    /// database system is starting up" while another already got through)
    /// belongs to that outage and opens no new one.
    pub fn failed(&self, url: &str, error: &dyn std::fmt::Display, started: Instant) {
        let mut down = self.down.lock().unwrap_or_else(|e| e.into_inner());
        let recovered = *self.recovered.lock().unwrap_or_else(|e| e.into_inner());
        if down.is_none() && recovered.is_some_and(|at| started < at) {
            tracing::debug!(url, error = %error, "an operation begun during the last outage failed late");
            return;
        }
        self.failed.fetch_add(1, Ordering::Relaxed);
        if down.is_none() {
            tracing::error!(
                url,
                error = %error,
                "PostgreSQL cannot be reached: cached redirects go on; lookups of uncached \
                 codes and writes answer 503, clicks are held, until it answers again"
            );
            *down = Some((Instant::now(), error.to_string()));
            self.is_down.store(true, Ordering::Release);
        } else {
            tracing::debug!(url, error = %error, "PostgreSQL still cannot be reached");
        }
    }

    /// `url` answered at `at` (a connection made then, a session that
    /// caught up since then). An answer from before the outage was noticed
    /// (a pooled connection made earlier and handed out again) proves
    /// nothing newer and ends no outage.
    pub fn answered(&self, url: &str, at: Instant) {
        if !self.is_down.load(Ordering::Acquire) {
            return;
        }
        let mut down = self.down.lock().unwrap_or_else(|e| e.into_inner());
        match down.as_ref() {
            Some((since, _)) if at > *since => {}
            _ => return,
        }
        self.is_down.store(false, Ordering::Release);
        if let Some((since, _)) = down.take() {
            *self.recovered.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
            // Outside the macro: its arguments run only when info is on.
            let failed = self.failed.swap(0, Ordering::Relaxed);
            tracing::info!(
                url,
                after = ?since.elapsed(),
                failed_operations = failed,
                "PostgreSQL answers again"
            );
        }
    }

    /// Whether an outage is going on (no lock taken).
    pub fn is_down(&self) -> bool {
        self.is_down.load(Ordering::Acquire)
    }

    /// Why the server is unreachable, if it is.
    pub fn problem(&self) -> Option<String> {
        self.down
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map(|(since, why)| {
                format!(
                    "PostgreSQL has not answered for {} s: {why}",
                    since.elapsed().as_secs()
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outage_is_one_state_from_first_failure_to_first_answer() {
        let r = Reach::default();
        let t = Instant::now;
        r.answered("db", t());
        assert_eq!(r.problem(), None);
        let begun_before = t();
        std::thread::sleep(std::time::Duration::from_millis(1));
        r.failed("db", &"connection refused", t());
        r.failed("db", &"connection refused again", t());
        let p = r.problem().unwrap();
        assert!(
            p.contains("connection refused") && !p.contains("again"),
            "{p}"
        );
        assert_eq!(r.failed.load(Ordering::Relaxed), 2);
        // An operation begun before the outage was noticed ends nothing.
        r.answered("db", begun_before);
        assert!(r.problem().is_some());
        let begun_during_the_outage = t();
        std::thread::sleep(std::time::Duration::from_millis(1));
        r.answered("db", t());
        assert_eq!(r.problem(), None);
        assert_eq!(r.failed.load(Ordering::Relaxed), 0);
        // Its late failure belongs to the outage that ended; a failure of
        // an operation begun after the answer is a new outage.
        r.failed(
            "db",
            &"the database system is starting up",
            begun_during_the_outage,
        );
        assert_eq!(r.problem(), None);
        r.failed("db", &"connection refused", t());
        assert!(r.problem().is_some());
    }
}
