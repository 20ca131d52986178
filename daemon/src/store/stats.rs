//! Counters every store keeps about its writes, and why it cannot write
//! now if it cannot.

use std::sync::atomic::AtomicU64;
use std::sync::Mutex;

/// Counters about the store, read by `/metrics`, and whether it can write,
/// read by `/api/v1/health`.
#[derive(Debug, Default)]
pub struct StoreStats {
    /// Write transactions committed.
    pub transactions: AtomicU64,
    /// Write jobs applied (several per transaction under load).
    pub writes: AtomicU64,
    /// Write jobs that failed and were rolled back to their savepoint.
    pub write_errors: AtomicU64,
    /// Why the last write transaction could not be stored (disk full, I/O
    /// error); cleared by the next one that commits.
    commit_error: Mutex<Option<String>>,
    /// A database file was deleted or replaced under the daemon: writes
    /// are refused until a restart.
    pub(crate) lost_file: Mutex<Option<String>>,
}

impl StoreStats {
    /// Why the store cannot durably write now, if it cannot.
    pub fn problem(&self) -> Option<String> {
        let lost = self.lost_file.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(lost) = lost.as_ref() {
            return Some(lost.clone());
        }
        drop(lost);
        self.commit_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Notes the outcome of a write transaction. The error is logged once
    /// per change of state (a full disk fails every write: one error line
    /// says so, one more line when writes work again); the failures in
    /// between are logged at debug level.
    pub(crate) fn commit_outcome(&self, outcome: Option<String>) {
        let mut last = self.commit_error.lock().unwrap_or_else(|e| e.into_inner());
        match (&*last, &outcome) {
            (None, Some(e)) => tracing::error!(
                error = %e,
                "the database cannot store writes: every write fails until a commit succeeds again"
            ),
            (Some(_), Some(e)) => tracing::debug!(error = %e, "write transaction failed to commit"),
            (Some(_), None) => tracing::info!("the database stores writes again"),
            (None, None) => {}
        }
        *last = outcome;
    }

    pub(crate) fn lost(&self) -> Option<String> {
        self.lost_file
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}
