//! The daemon's own counters, registered once in a `prometheus-client`
//! registry that `GET /metrics` encodes (see `api/metrics.rs`, which adds
//! the values other parts own: cache, ids, store, event hub, uptime).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::{Registry, Unit};

/// Prefix of every metric name.
pub const PREFIX: &str = "shortlinkd";

/// Labels of `shortlinkd_http_requests_total`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct HttpLabels {
    method: String,
    status: u16,
}

/// Labels of `shortlinkd_http_request_duration_seconds`: the route
/// pattern, never the raw path, so the series stay few.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct RouteLabels {
    method: String,
    route: String,
}

/// Labels of `shortlinkd_ipc_lookup_duration_seconds`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct SourceLabels {
    source: &'static str,
}

/// Buckets from 100 µs to about 13 s, ×2.5 apart.
fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.0001, 2.5, 14))
}

/// Labels of `shortlinkd_ipc_lookup_results_total` and
/// `shortlinkd_link_probes_total`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct LookupLabels {
    result: &'static str,
}

/// Process-wide counters; cloned handles share their values with the
/// registry.
#[derive(Debug)]
pub struct Metrics {
    /// Lookups received over IPC.
    pub ipc_lookups: Counter,
    /// IPC lookups answered `Found`.
    pub ipc_lookups_found: Counter,
    /// IPC lookups answered `NotFound`.
    pub ipc_lookups_not_found: Counter,
    /// IPC lookups answered `Gone`.
    pub ipc_lookups_gone: Counter,
    /// Visits of limited links leased to the edges.
    pub visits_leased: Counter,
    /// Click batches received (IPC and spool), duplicates included.
    pub click_batches: Counter,
    /// Click batches that had been counted before.
    pub click_batches_duplicate: Counter,
    /// Clicks counted.
    pub clicks: Counter,
    /// Open IPC connections.
    pub ipc_connections: Gauge,
    /// IPC connections closed for a protocol error (bad frame, bad order).
    pub ipc_protocol_errors: Counter,
    /// IPC handshakes refused (protocol or key mismatch).
    pub ipc_handshakes_refused: Counter,
    /// Spool files imported.
    pub spool_files: Counter,
    /// Spool files set aside as `*.bad`.
    pub spool_files_bad: Counter,
    /// Links created.
    pub links_created: Counter,
    /// Requests that failed with a server-side error (5xx, IPC errors).
    pub errors: Counter,
    /// HTTP requests by method and status.
    http_requests: Family<HttpLabels, Counter>,
    /// HTTP request latency by method and route.
    http_duration: Family<RouteLabels, Histogram, fn() -> Histogram>,
    /// IPC lookups answered from the daemon's cache: seconds from the
    /// read of the request to the reply queued.
    pub ipc_lookup_cached: Histogram,
    /// IPC lookups that read the database.
    pub ipc_lookup_stored: Histogram,
    /// Link checker probes that found the target answering (below 400).
    pub link_probes_ok: Counter,
    /// Probes that found an error status or no answer.
    pub link_probes_failed: Counter,
    /// Targets not probed (a private address).
    pub link_probes_skipped: Counter,
    /// Links failing their probes (one failure or more in a row), as of
    /// the checker's last sweep.
    pub links_failing: Gauge,
    /// Webhook delivery attempts by result.
    pub webhook_deliveries: WebhookAttempts,
    /// Everything above, for the exposition.
    registry: Registry,
}

/// Webhook delivery attempts (`crate::webhooks::dispatch`) by result.
#[derive(Debug, Default)]
pub struct WebhookAttempts {
    /// A 2xx answer.
    pub delivered: Counter,
    /// Failed, to be retried.
    pub retried: Counter,
    /// Failed, and given up.
    pub failed: Counter,
}

impl Default for Metrics {
    fn default() -> Self {
        let lookup_results = Family::<LookupLabels, Counter>::default();
        // Created up front (so all three show from the start) and kept as
        // handles, so counting a result needs no label lookup.
        let result = |result| {
            lookup_results
                .get_or_create(&LookupLabels { result })
                .clone()
        };
        let probe_results = Family::<LookupLabels, Counter>::default();
        let probe = |result| {
            probe_results
                .get_or_create(&LookupLabels { result })
                .clone()
        };
        let webhook_results = Family::<LookupLabels, Counter>::default();
        let webhook = |result| {
            webhook_results
                .get_or_create(&LookupLabels { result })
                .clone()
        };
        let m = Self {
            webhook_deliveries: WebhookAttempts {
                delivered: webhook("delivered"),
                retried: webhook("retried"),
                failed: webhook("failed"),
            },
            link_probes_ok: probe("ok"),
            link_probes_failed: probe("failed"),
            link_probes_skipped: probe("skipped"),
            links_failing: Gauge::default(),
            ipc_lookups: Counter::default(),
            ipc_lookups_found: result("found"),
            ipc_lookups_not_found: result("not_found"),
            ipc_lookups_gone: result("gone"),
            visits_leased: Counter::default(),
            click_batches: Counter::default(),
            click_batches_duplicate: Counter::default(),
            clicks: Counter::default(),
            ipc_connections: Gauge::default(),
            ipc_protocol_errors: Counter::default(),
            ipc_handshakes_refused: Counter::default(),
            spool_files: Counter::default(),
            spool_files_bad: Counter::default(),
            links_created: Counter::default(),
            errors: Counter::default(),
            http_requests: Family::default(),
            http_duration: Family::new_with_constructor(latency_histogram),
            ipc_lookup_cached: Histogram::new(std::iter::empty()),
            ipc_lookup_stored: Histogram::new(std::iter::empty()),
            registry: Registry::with_prefix(PREFIX),
        };
        let lookup_durations =
            Family::<SourceLabels, Histogram, fn() -> Histogram>::new_with_constructor(
                latency_histogram,
            );
        let by_source = |source| {
            lookup_durations
                .get_or_create(&SourceLabels { source })
                .clone()
        };
        let m = Self {
            ipc_lookup_cached: by_source("cache"),
            ipc_lookup_stored: by_source("store"),
            ..m
        };
        let mut m = m.registered(lookup_results, lookup_durations, probe_results);
        m.registry.register(
            "webhook_attempts",
            "Webhook delivery attempts by result (delivered, retried, failed)",
            webhook_results,
        );
        m
    }
}

impl Metrics {
    /// Registers every metric (the registry holds clones sharing the values).
    fn registered(
        mut self,
        lookup_results: Family<LookupLabels, Counter>,
        lookup_durations: Family<SourceLabels, Histogram, fn() -> Histogram>,
        probe_results: Family<LookupLabels, Counter>,
    ) -> Self {
        let counters = [
            (
                "ipc_lookups",
                "Lookups received over IPC",
                &self.ipc_lookups,
            ),
            (
                "visits_leased",
                "Visits of limited links leased to the edges",
                &self.visits_leased,
            ),
            (
                "click_batches",
                "Click batches received (IPC and spool), re-sent duplicates included",
                &self.click_batches,
            ),
            (
                "click_batches_duplicate",
                "Click batches seen before and not counted again",
                &self.click_batches_duplicate,
            ),
            ("clicks", "Clicks counted", &self.clicks),
            (
                "ipc_protocol_errors",
                "IPC connections closed for a protocol error",
                &self.ipc_protocol_errors,
            ),
            (
                "ipc_handshakes_refused",
                "IPC handshakes refused (protocol or key mismatch)",
                &self.ipc_handshakes_refused,
            ),
            (
                "errors",
                "Server-side errors (HTTP 5xx, failed IPC requests)",
                &self.errors,
            ),
            ("links_created", "Links created", &self.links_created),
            (
                "spool_files",
                "Click spool files imported",
                &self.spool_files,
            ),
            (
                "spool_files_bad",
                "Click spool files set aside as corrupt",
                &self.spool_files_bad,
            ),
        ];
        let r = &mut self.registry;
        for (name, help, counter) in counters {
            r.register(name, help, counter.clone());
        }
        r.register(
            "ipc_lookup_results",
            "IPC lookups by result",
            lookup_results,
        );
        r.register(
            "link_probes",
            "Link checker probes by result (ok, failed, skipped)",
            probe_results,
        );
        r.register(
            "links_failing",
            "Links whose target failed its last probe (as of the checker's last sweep)",
            self.links_failing.clone(),
        );
        r.register(
            "ipc_connections",
            "Open IPC connections from nginx workers",
            self.ipc_connections.clone(),
        );
        r.register(
            "http_requests",
            "HTTP API requests answered, by method and status",
            self.http_requests.clone(),
        );
        r.register_with_unit(
            "http_request_duration",
            "HTTP API request latency, by method and route",
            Unit::Seconds,
            self.http_duration.clone(),
        );
        r.register_with_unit(
            "ipc_lookup_duration",
            "IPC lookup latency, answered from the cache or the store",
            Unit::Seconds,
            lookup_durations,
        );
        r.register(
            "build",
            "The daemon's version and IPC protocol",
            Info::new(vec![
                ("version", env!("CARGO_PKG_VERSION").to_string()),
                (
                    "protocol",
                    shortlink_core::ipc::PROTOCOL_VERSION.to_string(),
                ),
            ]),
        );
        self
    }

    /// Times one answered HTTP request (`route`: the matched pattern).
    pub fn http_duration(&self, method: &str, route: &str, seconds: f64) {
        self.http_duration
            .get_or_create(&RouteLabels {
                method: method.to_string(),
                route: route.to_string(),
            })
            .observe(seconds);
    }

    /// Counts one answered HTTP request.
    pub fn http_request(&self, method: &str, status: u16) {
        self.http_requests
            .get_or_create(&HttpLabels {
                method: method.to_string(),
                status,
            })
            .inc();
        if status >= 500 {
            self.errors.inc();
        }
    }

    /// The registry holding every counter above.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_labels_and_values() {
        let m = Metrics::default();
        m.ipc_lookups.inc();
        m.ipc_lookups_gone.inc();
        m.http_request("GET", 200);
        m.http_request("POST", 503);
        m.ipc_connections.inc();
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, m.registry()).unwrap();
        for line in [
            "# TYPE shortlinkd_ipc_lookups counter",
            "shortlinkd_ipc_lookups_total 1",
            "shortlinkd_ipc_lookup_results_total{result=\"found\"} 0",
            "shortlinkd_ipc_lookup_results_total{result=\"gone\"} 1",
            "shortlinkd_http_requests_total{method=\"GET\",status=\"200\"} 1",
            "shortlinkd_http_requests_total{method=\"POST\",status=\"503\"} 1",
            "shortlinkd_errors_total 1",
            "# TYPE shortlinkd_ipc_connections gauge",
            "shortlinkd_ipc_connections 1",
            "# HELP shortlinkd_clicks Clicks counted.",
        ] {
            assert!(text.lines().any(|l| l == line), "{line:?} in\n{text}");
        }
    }
}
