//! `GET /api/v1/health`: readiness probe. Without credentials it says only
//! whether the daemon is ready (and its version); with a valid API key
//! (`X-Api-Key`, any scope) it also gives the key fingerprint, the counts
//! and what is wrong, which are not for anyone who can reach the port.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::error::{ApiError, ErrorBody};
use crate::app::SharedApp;
use crate::auth::{self, AuthError};

/// Reply of the health check.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Health {
    /// `ok`; `degraded` when the database answers reads but cannot store
    /// writes (disk full, a database file deleted under the daemon);
    /// `unavailable` when the database does not answer.
    pub status: String,
    /// The daemon's version.
    pub version: String,
    /// Seconds since the daemon started (with an API key only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uptime_seconds: Option<u64>,
    /// Fingerprint of the deployment key, to compare with nginx's error log
    /// (with an API key only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_fingerprint: Option<String>,
    /// Connected nginx workers (with an API key only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipc_connections: Option<i64>,
    /// Links stored (with an API key only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub links: Option<u64>,
    /// What is wrong when the status is not `ok` (with an API key only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// Is the daemon up, its database answering and storing writes?
#[utoipa::path(
    get, path = "/api/v1/health", operation_id = "get_health", tag = "health",
    params(("X-Api-Key" = Option<String>, Header,
        description = "Any valid API key: adds the fingerprint, counts and problem")),
    responses(
        (status = 200, description = "Ready", body = Health),
        (status = 401, description = "The API key sent is not valid", body = ErrorBody),
        (status = 503, description = "The database does not answer or cannot store writes", body = Health),
    )
)]
pub async fn get(State(app): State<SharedApp>, headers: HeaderMap) -> Response {
    let detailed = match headers.get("x-api-key") {
        None => false,
        Some(key) => {
            let verified = match key.to_str() {
                Ok(key) => auth::verify_key(&app.store, &app.auth, key).await,
                Err(_) => Err(AuthError::InvalidApiKey),
            };
            match verified {
                Ok(_) => true,
                // A store that cannot read is what this probe reports.
                Err(AuthError::Store(_)) => false,
                Err(e) => return ApiError::from(e).into_response(),
            }
        }
    };
    let links = app.store.count_links().await;
    let (status, code, problem) = match (&links, app.store.stats().problem()) {
        (Err(e), _) => (
            "unavailable",
            StatusCode::SERVICE_UNAVAILABLE,
            Some(e.to_string()),
        ),
        (Ok(_), Some(problem)) => ("degraded", StatusCode::SERVICE_UNAVAILABLE, Some(problem)),
        (Ok(_), None) => ("ok", StatusCode::OK, None),
    };
    let mut health = Health {
        status: status.into(),
        version: env!("CARGO_PKG_VERSION").into(),
        uptime_seconds: None,
        key_fingerprint: None,
        ipc_connections: None,
        links: None,
        problem: None,
    };
    if detailed {
        health.uptime_seconds = Some(app.started.elapsed().as_secs());
        health.key_fingerprint = Some(app.fingerprint.to_string());
        health.ipc_connections = Some(app.metrics.ipc_connections.get());
        health.links = links.ok();
        health.problem = problem;
    }
    (code, Json(health)).into_response()
}
