//! `GET /api/v1/health`: readiness probe, no auth.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::app::SharedApp;

/// Reply of the health check.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Health {
    /// `ok`, or `unavailable` when the database does not answer.
    pub status: String,
    /// The daemon's version.
    pub version: String,
    /// Seconds since the daemon started.
    pub uptime_seconds: u64,
    /// Fingerprint of the deployment key (compare with nginx's error log).
    pub key_fingerprint: String,
    /// Connected nginx workers.
    pub ipc_connections: i64,
    /// Links stored.
    pub links: Option<u64>,
}

/// Is the daemon up and its database answering?
#[utoipa::path(
    get, path = "/api/v1/health", tag = "health",
    responses(
        (status = 200, description = "Ready", body = Health),
        (status = 503, description = "The database does not answer", body = Health),
    )
)]
pub async fn get(State(app): State<SharedApp>) -> (StatusCode, Json<Health>) {
    let links = app.store.read(crate::store::links::count).await;
    let (status, code) = match links {
        Ok(_) => ("ok", StatusCode::OK),
        Err(_) => ("unavailable", StatusCode::SERVICE_UNAVAILABLE),
    };
    (
        code,
        Json(Health {
            status: status.into(),
            version: env!("CARGO_PKG_VERSION").into(),
            uptime_seconds: app.started.elapsed().as_secs(),
            key_fingerprint: app.fingerprint.to_string(),
            ipc_connections: app.metrics.ipc_connections.get(),
            links: links.ok(),
        }),
    )
}
