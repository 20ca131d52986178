//! A click batch from a worker: checked against the click bounds
//! (`ClickBatch::validate`) before anything is counted, then stored.
//!
//! The answers differ by what the worker should do next: `ClicksAck` (stored,
//! forget it), `ClicksRefused` (it breaks the bounds and never will pass:
//! drop it) and `Error` (the store failed: keep it and send it again).

use shortlink_core::ipc::{ClickBatch, Reply};

use crate::app::App;
use crate::stats;
use crate::timestamp::unix_now;

/// Checks and stores one batch; the reply for the worker that sent it
/// (`pid`, for the logs).
pub(super) async fn take(app: &App, id: u32, batch: ClickBatch, pid: u32) -> Reply {
    let batch_id = batch.batch_id;
    if let Err(e) = batch.validate(unix_now()) {
        tracing::warn!(
            pid,
            batch = %batch_id.to_hex(),
            reason = %e,
            "refusing a click batch outside the click bounds; nothing of it is counted"
        );
        return Reply::ClicksRefused {
            id,
            batch_id,
            reason: e.to_string(),
        };
    }
    match stats::ingest(app, vec![batch]).await {
        Ok(_) => Reply::ClicksAck { id, batch_id },
        Err(e) => {
            app.metrics.errors.inc();
            e.log(&format!("cannot store click batch {}", batch_id.to_hex()));
            Reply::Error {
                id,
                message: format!("while storing click batch {}: {e}", batch_id.to_hex()),
            }
        }
    }
}
