//! No panic crosses into nginx: every `extern "C"` entry point of the module
//! (directive setters, merge and init callbacks, zone init, phase and
//! variable handlers, event handlers and timers, worker start and exit) runs
//! its body through [`guard`].
//!
//! A panic here is a bug in the module: it is logged on the caller's log and
//! the entry point returns what nginx reads as failure (`NGX_ERROR`,
//! `NGX_CONF_ERROR`, a 500), so the worker lives on.

use std::panic::{catch_unwind, AssertUnwindSafe};

use nginx_sys::ngx_log_t;

use crate::log::error;

/// Runs `body`; on a panic, logs "internal error in `what`" on the log that
/// `log` returns (read only then, so the happy path pays nothing for it) and
/// returns `failed`.
#[inline]
pub fn guard<R>(
    what: &str,
    log: impl FnOnce() -> *mut ngx_log_t,
    failed: R,
    body: impl FnOnce() -> R,
) -> R {
    // The module's state is plain data owned by nginx's single-threaded
    // event loop; after a panic the entry point reports failure and nothing
    // half-done is resumed, so the unwind-safety assertion holds.
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(value) => value,
        Err(_) => {
            let log = log();
            if !log.is_null() {
                error!(log, "shortlink: internal error in {}", what);
            }
            failed
        }
    }
}
