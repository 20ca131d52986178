//! The HTTP API (axum), versioned under `/api/v1`.
//!
//! [`router`] is the public API (authenticated by key or signature);
//! [`control_router`] serves the same routes on the owner-only control
//! socket for the CLI, with every scope. Both are plain `Router`s so more
//! (the admin UI under `/admin`) can be merged in `server.rs`.

pub mod auth;
pub mod checks;
pub mod error;
pub mod extract;
pub mod health;
pub mod ids;
pub mod import;
pub mod keys;
pub mod links;
pub mod metrics;
pub mod openapi;
pub mod qr;
pub mod stats;
pub mod takedowns;
pub mod teams;
pub mod users;
pub mod webhooks;

use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{header, HeaderName, HeaderValue, Method};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::{delete, get, post, put};
use axum::{Extension, Router};

use crate::app::SharedApp;

/// Body limit of the batch endpoint (10,000 links).
pub const MAX_BATCH_BODY: usize = 32 * 1024 * 1024;
/// Body limit everywhere else.
pub const MAX_BODY: usize = 256 * 1024;

/// Routes that need a [`auth::Principal`] in the request extensions.
fn protected(app: &SharedApp) -> Router<SharedApp> {
    let mut r = Router::new()
        .route("/api/v1/links", post(links::create).get(links::list))
        .route(
            "/api/v1/links/batch",
            post(links::create_batch).layer(DefaultBodyLimit::max(MAX_BATCH_BODY)),
        )
        .route(
            "/api/v1/links/{code}",
            get(links::get).patch(links::update).delete(links::delete),
        )
        .route("/api/v1/links/{code}/stats", get(stats::get))
        .route("/api/v1/links/{code}/qr", get(qr::get))
        .route("/api/v1/links/{code}/check", get(checks::get))
        .route("/api/v1/checks", get(checks::failing))
        .route("/api/v1/ids", get(ids::get))
        .route("/api/v1/stats", get(stats::site))
        .route("/api/v1/keys", post(keys::create_key).get(keys::list_keys))
        .route("/api/v1/keys/{id}", delete(keys::revoke_key))
        .route("/api/v1/apps", post(keys::create_app).get(keys::list_apps))
        .route("/api/v1/apps/{app_id}", delete(keys::revoke_app))
        .route(
            "/api/v1/takedowns",
            post(takedowns::create).get(takedowns::list),
        )
        .route("/api/v1/takedowns/{id}", get(takedowns::get))
        .route("/api/v1/takedowns/{id}/undo", post(takedowns::undo))
        .route("/api/v1/takedowns/{id}/links", get(takedowns::links))
        .route("/api/v1/users", post(users::create).get(users::list))
        .route("/api/v1/users/{name}", delete(users::delete))
        .route("/api/v1/users/{name}/password", put(users::set_password))
        .route(
            "/api/v1/users/{name}/membership",
            put(teams::set_membership),
        )
        .route("/api/v1/teams", post(teams::create).get(teams::list))
        .route("/api/v1/teams/{name}", delete(teams::delete))
        .route(
            "/api/v1/webhooks",
            post(webhooks::create).get(webhooks::list),
        )
        .route(
            "/api/v1/webhooks/{id}",
            get(webhooks::get).delete(webhooks::delete),
        )
        .route(
            "/api/v1/webhooks/{id}/deliveries",
            get(webhooks::deliveries),
        )
        .route(
            "/api/v1/webhooks/{id}/deliveries/{delivery}/redeliver",
            post(webhooks::redeliver),
        );
    if app.config.metrics_auth {
        r = r.route("/metrics", get(metrics::get_authenticated));
    }
    r
}

fn public(app: &SharedApp) -> Router<SharedApp> {
    let mut r = Router::new()
        .route("/api/v1/health", get(health::get))
        .route("/api/v1/openapi.json", get(openapi::openapi_json));
    if !app.config.metrics_auth {
        r = r.route("/metrics", get(metrics::get_public));
    }
    r
}

async fn count_requests(State(app): State<SharedApp>, req: Request, next: Next) -> Response {
    let method = req.method().as_str().to_string();
    let route = req
        .extensions()
        .get::<axum::extract::MatchedPath>()
        .map_or("unmatched", |p| p.as_str())
        .to_string();
    let started = std::time::Instant::now();
    let resp = next.run(req).await;
    app.metrics.http_request(&method, resp.status().as_u16());
    app.metrics
        .http_duration(&method, &route, started.elapsed().as_secs_f64());
    resp
}

/// Remembers the base nginx passed, so a target on it is known for a short
/// URL of this deployment (`links::loops`) from the first request on.
async fn remember_base(State(app): State<SharedApp>, req: Request, next: Next) -> Response {
    if let Some(base) = req
        .headers()
        .get(crate::base_url::HEADER)
        .and_then(|v| v.to_str().ok())
    {
        app.rules.served.remember(base);
    }
    next.run(req).await
}

fn finish(app: SharedApp, routes: Router<SharedApp>) -> Router {
    routes
        .fallback(error::not_found)
        .method_not_allowed_fallback(error::method_not_allowed)
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .layer(middleware::from_fn(error::json_errors))
        .layer(middleware::from_fn_with_state(app.clone(), remember_base))
        .layer(middleware::from_fn_with_state(app.clone(), count_requests))
        .with_state(app)
}

/// CORS for browser clients of the configured origins (`cors_origins`);
/// none configured: no CORS headers at all. Preflights are answered here,
/// before authentication, as browsers send them without credentials.
fn cors(origins: &[String]) -> Option<tower_http::cors::CorsLayer> {
    use tower_http::cors::{AllowOrigin, CorsLayer};
    if origins.is_empty() {
        return None;
    }
    // Config::validate has checked each is an origin (a valid header value).
    let origins: Vec<HeaderValue> = origins
        .iter()
        .filter_map(|o| HeaderValue::from_str(o).ok())
        .collect();
    Some(
        CorsLayer::new()
            .allow_origin(AllowOrigin::list(origins))
            .allow_methods([
                Method::GET,
                Method::HEAD,
                Method::POST,
                Method::PUT,
                Method::PATCH,
                Method::DELETE,
            ])
            .allow_headers([
                HeaderName::from_static("x-api-key"),
                header::AUTHORIZATION,
                header::CONTENT_TYPE,
                HeaderName::from_static("x-app-id"),
                HeaderName::from_static("x-timestamp"),
                HeaderName::from_static("x-signature"),
            ])
            .expose_headers([header::LOCATION])
            .max_age(std::time::Duration::from_secs(600)),
    )
}

/// The public API: keys or signatures required, except for health and the
/// OpenAPI document.
pub fn router(app: SharedApp) -> Router {
    let routes = protected(&app)
        .route_layer(middleware::from_fn_with_state(
            app.clone(),
            auth::authenticate,
        ))
        .merge(public(&app));
    let cors = cors(&app.config.cors_origins);
    let api = finish(app, routes);
    match cors {
        Some(cors) => api.layer(cors),
        None => api,
    }
}

/// The API for the local CLI on the owner-only control socket (plus the
/// bulk import path, which only the CLI uses).
pub fn control_router(app: SharedApp) -> Router {
    let routes = protected(&app)
        .route(
            "/api/v1/import",
            post(import::import).layer(DefaultBodyLimit::max(MAX_BATCH_BODY)),
        )
        .route_layer(Extension(crate::auth::Principal::local()))
        .merge(public(&app));
    finish(app, routes)
}
