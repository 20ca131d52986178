//! Failed answers, said once per run: while the daemon's database is down
//! or hung, every miss, password check and visit lease fails the same way,
//! and an `[error]` line each would flood the log. The first failure of a
//! run (an error reply, or no reply within `shortlink_timeout`) is logged
//! by its caller with [`RUN_NOTE`]; the next ones are counted until a
//! request is answered again, which is logged once with their number
//! (`shortlink_core::failure_run`).

use super::{now, DaemonLink};
use crate::log::warning;

/// Ends the line of the failure that starts a run.
pub(super) const RUN_NOTE: &str =
    "further failures are counted, not logged, until the daemon answers again";

impl DaemonLink {
    /// A lookup, password check or visit lease failed: true when this
    /// starts a run and the caller logs it.
    pub(super) fn failure_starts_run(&mut self) -> bool {
        self.failures.failed(now() as u64)
    }

    /// The daemon answered a lookup, password check or visit lease: ends
    /// the run of failures, if one was under way, with one line.
    pub(super) fn answered_again(&mut self) {
        let Some(ended) = self.failures.answered(now() as u64) else {
            return;
        };
        warning!(
            self.log,
            "shortlink: the daemon at {} answers again; {} lookups, password checks or visit leases failed in the last {} ms",
            self.peer(),
            ended.failures,
            ended.lasted_ms
        );
    }
}
