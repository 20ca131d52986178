//! Counters exported at `/metrics` in the Prometheus text format.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Mutex;

/// Process-wide counters. Counters only go up; gauges are marked as such.
#[derive(Debug, Default)]
pub struct Metrics {
    /// Lookups received over IPC.
    pub ipc_lookups: AtomicU64,
    /// IPC lookups answered `Found`.
    pub ipc_lookups_found: AtomicU64,
    /// IPC lookups answered `NotFound`.
    pub ipc_lookups_not_found: AtomicU64,
    /// IPC lookups answered `Gone`.
    pub ipc_lookups_gone: AtomicU64,
    /// Click batches received (IPC and spool), duplicates included.
    pub click_batches: AtomicU64,
    /// Click batches that had been counted before.
    pub click_batches_duplicate: AtomicU64,
    /// Clicks counted.
    pub clicks: AtomicU64,
    /// Open IPC connections (gauge).
    pub ipc_connections: AtomicI64,
    /// IPC connections closed for a protocol error (bad frame, bad order).
    pub ipc_protocol_errors: AtomicU64,
    /// IPC handshakes refused (protocol or key mismatch).
    pub ipc_handshakes_refused: AtomicU64,
    /// Spool files imported.
    pub spool_files: AtomicU64,
    /// Spool files set aside as `*.bad`.
    pub spool_files_bad: AtomicU64,
    /// Links created.
    pub links_created: AtomicU64,
    /// Requests that failed with a server-side error (5xx, IPC errors).
    pub errors: AtomicU64,
    /// HTTP requests by method and status.
    http: Mutex<BTreeMap<(String, u16), u64>>,
}

impl Metrics {
    /// Counts one answered HTTP request.
    pub fn http_request(&self, method: &str, status: u16) {
        *self
            .http
            .lock()
            .expect("metrics lock")
            .entry((method.to_string(), status))
            .or_default() += 1;
        if status >= 500 {
            self.errors.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// HTTP requests counted so far, all statuses.
    pub fn http_total(&self) -> u64 {
        self.http.lock().expect("metrics lock").values().sum()
    }
}

/// Builds the exposition text.
#[derive(Default)]
pub struct Exposition {
    out: String,
}

impl Exposition {
    /// A metric with one unlabelled sample.
    pub fn single(&mut self, name: &str, kind: &str, help: &str, value: impl std::fmt::Display) {
        let _ = writeln!(
            self.out,
            "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}"
        );
    }

    /// A metric with labelled samples.
    pub fn labelled(&mut self, name: &str, kind: &str, help: &str, samples: &[(String, u64)]) {
        let _ = writeln!(self.out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for (labels, value) in samples {
            let _ = writeln!(self.out, "{name}{{{labels}}} {value}");
        }
    }

    /// The finished text.
    pub fn finish(self) -> String {
        self.out
    }
}

/// Renders `metrics` plus the values passed in `extra`.
pub fn render_http(metrics: &Metrics, e: &mut Exposition) {
    let samples: Vec<(String, u64)> = metrics
        .http
        .lock()
        .expect("metrics lock")
        .iter()
        .map(|((m, s), v)| (format!("method=\"{m}\",status=\"{s}\""), *v))
        .collect();
    e.labelled(
        "shortlinkd_http_requests_total",
        "counter",
        "HTTP API requests answered, by method and status.",
        &samples,
    );
}

/// Shorthand for relaxed loads.
pub fn get(c: &AtomicU64) -> u64 {
    c.load(Ordering::Relaxed)
}
