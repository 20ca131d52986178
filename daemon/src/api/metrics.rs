//! `GET /metrics`: the daemon's metrics in the OpenMetrics text format
//! (which Prometheus scrapes), encoded by `prometheus-client`.

use std::sync::atomic::{AtomicU64, Ordering};

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::Extension;
use prometheus_client::encoding::text;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::{Registry, Unit};

use super::error::{ApiError, ErrorBody};
use crate::access::Scope;
use crate::app::{App, SharedApp};
use crate::auth::Principal;
use crate::metrics::PREFIX;

/// What the OpenMetrics text format is served as.
const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The values other parts of the daemon own (event hub, cache, ids, store,
/// uptime), read now.
fn state(app: &App) -> Registry {
    let (cache, ids, store) = (app.store.cache(), &app.ids, app.store.stats());
    let counters: [(&str, &str, &AtomicU64); 11] = [
        (
            "events_published",
            "Events pushed to subscribed nginx workers",
            &app.hub.published,
        ),
        (
            "ipc_subscribers_dropped",
            "Subscribers dropped for not keeping up",
            &app.hub.dropped,
        ),
        (
            "cache_hits",
            "Link lookups answered from the daemon's cache",
            &cache.hits,
        ),
        (
            "cache_misses",
            "Link lookups that went to the database",
            &cache.misses,
        ),
        (
            "id_segments_leased",
            "Id segments leased from the database",
            &ids.leased,
        ),
        (
            "ids_allocated",
            "Ids handed out to new links",
            &ids.handed_out,
        ),
        (
            "ids_recycled",
            "Ids of expired and deleted links made reusable by this daemon's recycling sweeps",
            &ids.recycled,
        ),
        (
            "id_segments_reused",
            "Recycled id ranges taken again instead of a fresh lease",
            &ids.reused,
        ),
        (
            "store_transactions",
            "Write transactions committed",
            &store.transactions,
        ),
        (
            "store_writes",
            "Write jobs applied (grouped into transactions)",
            &store.writes,
        ),
        (
            "store_write_errors",
            "Write jobs rolled back",
            &store.write_errors,
        ),
    ];
    let gauges: [(&str, &str, u64); 4] = [
        (
            "ipc_subscribers",
            "IPC connections subscribed to events",
            app.hub.len() as u64,
        ),
        (
            "cache_entries",
            "Links in the daemon's cache",
            cache.len() as u64,
        ),
        (
            "id_segment_remaining",
            "Ids left in leased segments in memory",
            ids.remaining(),
        ),
        (
            "id_segment_size",
            "Ids per leased segment",
            ids.segment_size(),
        ),
    ];
    let mut r = Registry::with_prefix(PREFIX);
    for (name, help, value) in counters {
        r.register(name, help, ConstCounter::new(value.load(Ordering::Relaxed)));
    }
    for (name, help, value) in gauges {
        r.register(name, help, ConstGauge::new(value));
    }
    r.register_with_unit(
        "uptime",
        "Seconds since the daemon started",
        Unit::Seconds,
        ConstGauge::new(app.started.elapsed().as_secs()),
    );
    r
}

/// Renders every metric of the daemon in the OpenMetrics text format.
pub fn render(app: &App) -> String {
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = text::encode_registry(&mut out, app.metrics.registry())
        .and_then(|()| text::encode_registry(&mut out, &state(app)))
        .and_then(|()| text::encode_registry(&mut out, &crate::process_stats::registry()))
        .and_then(|()| text::encode_eof(&mut out));
    out
}

fn respond(app: &App) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, CONTENT_TYPE)], render(app))
}

/// Prometheus metrics (needs `stats:read` unless `metrics_auth = false`).
#[utoipa::path(
    get, path = "/metrics", operation_id = "get_metrics", tag = "health",
    responses(
        (status = 200, description = "OpenMetrics text format", body = String, content_type = "application/openmetrics-text"),
        (status = 401, description = "Missing or invalid credentials", body = ErrorBody),
        (status = 403, description = "Lacks `stats:read`", body = ErrorBody),
    ),
    security(("api_key" = []), ("app_id" = [], "app_timestamp" = [], "app_signature" = []), ())
)]
pub async fn get_authenticated(
    State(app): State<SharedApp>,
    Extension(p): Extension<Principal>,
) -> Result<impl IntoResponse, ApiError> {
    p.require(Scope::StatsRead)?;
    Ok(respond(&app))
}

/// The same without auth, when `metrics_auth = false`.
pub async fn get_public(State(app): State<SharedApp>) -> impl IntoResponse {
    respond(&app)
}
