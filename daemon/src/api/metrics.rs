//! `GET /metrics`: Prometheus text exposition.

use std::sync::atomic::Ordering;

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::Extension;

use super::auth::{Principal, Scope};
use super::error::{ApiError, ErrorBody};
use crate::app::{App, SharedApp};
use crate::metrics::{get, render_http, Exposition};

/// Renders every metric of the daemon.
pub fn render(app: &App) -> String {
    let m = &app.metrics;
    let mut e = Exposition::default();
    e.single(
        "shortlinkd_ipc_lookups_total",
        "counter",
        "Lookups received over IPC.",
        get(&m.ipc_lookups),
    );
    e.labelled(
        "shortlinkd_ipc_lookup_results_total",
        "counter",
        "IPC lookups by result.",
        &[
            ("result=\"found\"".into(), get(&m.ipc_lookups_found)),
            ("result=\"not_found\"".into(), get(&m.ipc_lookups_not_found)),
            ("result=\"gone\"".into(), get(&m.ipc_lookups_gone)),
        ],
    );
    e.single(
        "shortlinkd_click_batches_total",
        "counter",
        "Click batches received (IPC and spool), re-sent duplicates included.",
        get(&m.click_batches),
    );
    e.single(
        "shortlinkd_click_batches_duplicate_total",
        "counter",
        "Click batches seen before and not counted again.",
        get(&m.click_batches_duplicate),
    );
    e.single(
        "shortlinkd_clicks_total",
        "counter",
        "Clicks counted.",
        get(&m.clicks),
    );
    e.single(
        "shortlinkd_ipc_connections",
        "gauge",
        "Open IPC connections from nginx workers.",
        m.ipc_connections.load(Ordering::Relaxed),
    );
    e.single(
        "shortlinkd_ipc_subscribers",
        "gauge",
        "IPC connections subscribed to events.",
        app.hub.len(),
    );
    e.single(
        "shortlinkd_ipc_protocol_errors_total",
        "counter",
        "IPC connections closed for a protocol error.",
        get(&m.ipc_protocol_errors),
    );
    e.single(
        "shortlinkd_ipc_handshakes_refused_total",
        "counter",
        "IPC handshakes refused (protocol or key mismatch).",
        get(&m.ipc_handshakes_refused),
    );
    e.single(
        "shortlinkd_events_published_total",
        "counter",
        "Events pushed to subscribed nginx workers.",
        get(&app.hub.published),
    );
    e.single(
        "shortlinkd_ipc_subscribers_dropped_total",
        "counter",
        "Subscribers dropped for not keeping up.",
        get(&app.hub.dropped),
    );
    render_http(m, &mut e);
    e.single(
        "shortlinkd_errors_total",
        "counter",
        "Server-side errors (HTTP 5xx, failed IPC requests).",
        get(&m.errors),
    );
    e.single(
        "shortlinkd_links_created_total",
        "counter",
        "Links created.",
        get(&m.links_created),
    );
    let cache = app.store.cache();
    e.single(
        "shortlinkd_cache_hits_total",
        "counter",
        "Link lookups answered from the daemon's cache.",
        get(&cache.hits),
    );
    e.single(
        "shortlinkd_cache_misses_total",
        "counter",
        "Link lookups that went to the database.",
        get(&cache.misses),
    );
    e.single(
        "shortlinkd_cache_entries",
        "gauge",
        "Links in the daemon's cache.",
        cache.len(),
    );
    e.single(
        "shortlinkd_id_segments_leased_total",
        "counter",
        "Id segments leased from the database.",
        get(&app.ids.leased),
    );
    e.single(
        "shortlinkd_ids_allocated_total",
        "counter",
        "Ids handed out to new links.",
        get(&app.ids.handed_out),
    );
    e.single(
        "shortlinkd_id_segment_remaining",
        "gauge",
        "Ids left in leased segments in memory.",
        app.ids.remaining(),
    );
    e.single(
        "shortlinkd_id_segment_size",
        "gauge",
        "Ids per leased segment.",
        app.ids.segment_size(),
    );
    let s = app.store.stats();
    e.single(
        "shortlinkd_store_transactions_total",
        "counter",
        "Write transactions committed.",
        get(&s.transactions),
    );
    e.single(
        "shortlinkd_store_writes_total",
        "counter",
        "Write jobs applied (grouped into transactions).",
        get(&s.writes),
    );
    e.single(
        "shortlinkd_store_write_errors_total",
        "counter",
        "Write jobs rolled back.",
        get(&s.write_errors),
    );
    e.single(
        "shortlinkd_spool_files_total",
        "counter",
        "Click spool files imported.",
        get(&m.spool_files),
    );
    e.single(
        "shortlinkd_spool_files_bad_total",
        "counter",
        "Click spool files set aside as corrupt.",
        get(&m.spool_files_bad),
    );
    e.single(
        "shortlinkd_uptime_seconds",
        "gauge",
        "Seconds since the daemon started.",
        app.started.elapsed().as_secs(),
    );
    e.finish()
}

fn respond(app: &App) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        render(app),
    )
}

/// Prometheus metrics (needs `stats:read` unless `metrics_auth = false`).
#[utoipa::path(
    get, path = "/metrics", tag = "health",
    responses(
        (status = 200, description = "Prometheus text format", body = String, content_type = "text/plain"),
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
