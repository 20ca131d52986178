//! Webhooks: `POST/GET /api/v1/webhooks`, `GET/DELETE
//! /api/v1/webhooks/{id}`, the delivery log `GET
//! /api/v1/webhooks/{id}/deliveries` and `POST
//! /api/v1/webhooks/{id}/deliveries/{delivery}/redeliver`. Admins manage;
//! whoever reads a team's links reads its webhooks and their log.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::error::{ApiError, ErrorBody};
use super::extract::{ApiJson, ApiQuery};
use crate::app::{App, SharedApp};
use crate::auth::Principal;
use crate::store::{Delivery, DeliveryStatus, Webhook};
use crate::timestamp::Timestamp;
use crate::webhooks::{self, AddWebhook, WebhookError};

/// Most deliveries one page lists.
const MAX_PAGE: u32 = 1000;

/// Body of `POST /api/v1/webhooks`.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewWebhookBody {
    /// Where deliveries are POSTed: an absolute `http` or `https` URL.
    #[schema(max_length = 2048)]
    pub url: String,
    /// Events to receive: `link.created`, `link.updated`, `link.deleted`,
    /// `link.disabled`, `link.expired`, `link.exhausted`, `link.clicks`,
    /// or `link.*` for all.
    #[schema(min_items = 1)]
    pub events: Vec<String>,
    /// The team whose links it reports (default: the caller's).
    pub team: Option<String>,
}

/// A webhook as shown (never its secret).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct WebhookView {
    pub id: i64,
    /// The team whose links it reports.
    pub team_id: i64,
    pub url: String,
    pub events: Vec<String>,
    pub active: bool,
    pub created_at: Timestamp,
    pub created_by: Option<String>,
}

impl From<Webhook> for WebhookView {
    fn from(w: Webhook) -> Self {
        Self {
            id: w.id,
            team_id: w.team_id,
            url: w.url,
            events: w.events.iter().map(|e| e.as_str().to_string()).collect(),
            active: w.active,
            created_at: w.created_at.into(),
            created_by: w.created_by,
        }
    }
}

/// A new webhook: the secret is shown this once.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct CreatedWebhook {
    #[serde(flatten)]
    pub webhook: WebhookView,
    /// Signs every delivery (`Shortlink-Signature`). Cannot be shown again.
    pub secret: String,
}

/// Every webhook the caller sees.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct WebhookList {
    pub webhooks: Vec<WebhookView>,
}

/// One delivery in the log.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct DeliveryView {
    pub id: i64,
    pub webhook_id: i64,
    pub event: String,
    /// The link's generated code.
    pub code: Option<String>,
    /// `pending`, `delivered` or `failed` (given up).
    pub status: String,
    /// Attempts so far.
    pub attempts: u32,
    /// When it is tried next (pending only).
    pub next_attempt_at: Option<Timestamp>,
    /// The last answer's status.
    pub last_status: Option<u16>,
    /// Why the latest failed attempt failed (kept once delivered).
    pub last_error: Option<String>,
    /// When the event happened.
    pub created_at: Timestamp,
    pub delivered_at: Option<Timestamp>,
    /// The delivery this one sends again.
    pub redelivery_of: Option<i64>,
    /// The event's data, as sent under `data`.
    #[schema(value_type = Object)]
    pub payload: serde_json::Value,
}

impl DeliveryView {
    /// `d` as shown, its link's code from `app`'s codec.
    pub fn of(app: &App, d: Delivery) -> Self {
        Self {
            id: d.id,
            webhook_id: d.webhook_id,
            event: d.event,
            code: d.link_id.map(|id| app.codec.encode(id).to_string()),
            status: d.status.as_str().to_string(),
            attempts: d.attempts,
            next_attempt_at: (d.status == DeliveryStatus::Pending)
                .then_some(d.next_attempt_at.into()),
            last_status: d.last_status,
            last_error: d.last_error,
            created_at: d.created_at.into(),
            delivered_at: d.delivered_at.map(Timestamp::from),
            redelivery_of: d.redelivery_of,
            payload: webhooks::wire::with_rfc3339_times(
                serde_json::from_str(&d.payload).unwrap_or(serde_json::Value::Null),
            ),
        }
    }
}

/// A page of the delivery log, newest first.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct DeliveryList {
    pub deliveries: Vec<DeliveryView>,
    /// Pass as `before` for the next page; `null` on the last one.
    pub next: Option<i64>,
}

/// Query of the delivery log.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct DeliveryParams {
    /// At most this many, 1 to 1000 (default 100).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<u32>,
    /// The `next` of the page before.
    pub before: Option<i64>,
}

impl From<WebhookError> for ApiError {
    fn from(e: WebhookError) -> Self {
        let message = e.to_string();
        match e {
            WebhookError::InvalidUrl(_) => {
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_url", message).field("url")
            }
            WebhookError::UnknownEvent(_) | WebhookError::NoEvents => {
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_events", message)
                    .field("events")
            }
            WebhookError::NotFound(_) | WebhookError::NoDelivery(..) => {
                ApiError::new(StatusCode::NOT_FOUND, "not_found", message)
            }
            WebhookError::NoRandom(_) => {
                ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
            }
            WebhookError::Team(e) => e.into(),
            WebhookError::Denied(e) => e.into(),
            WebhookError::Store(e) => e.into(),
        }
    }
}

/// Adds a webhook; its signing secret is in this reply only.
#[utoipa::path(
    post, path = "/api/v1/webhooks", operation_id = "create_webhook", tag = "webhooks",
    request_body = NewWebhookBody,
    responses(
        (status = 201, description = "Created", body = CreatedWebhook),
        (status = 401, description = "Missing or invalid credentials", body = ErrorBody),
        (status = 403, description = "Lacks `admin`", body = ErrorBody),
        (status = 404, description = "No such team (`unknown_team`)", body = ErrorBody),
        (status = 400, description = "Malformed JSON (`invalid_json`)", body = ErrorBody),
        (status = 413, description = "Body too large (`body_too_large`)", body = ErrorBody),
        (status = 415, description = "Body is not `application/json` (`unsupported_media_type`)", body = ErrorBody),
        (status = 422, description = "`invalid_url`, `invalid_events`, `invalid_body`", body = ErrorBody),
    ),
    security(("api_key" = []), ("app_id" = [], "app_timestamp" = [], "app_signature" = []))
)]
pub async fn create(
    State(app): State<SharedApp>,
    Extension(p): Extension<Principal>,
    ApiJson(req): ApiJson<NewWebhookBody>,
) -> Result<(StatusCode, Json<CreatedWebhook>), ApiError> {
    let add = AddWebhook {
        url: req.url,
        events: req.events,
        team: req.team,
    };
    let (hook, secret) = webhooks::add(&app, &p, &add).await?;
    Ok((
        StatusCode::CREATED,
        Json(CreatedWebhook {
            webhook: hook.into(),
            secret,
        }),
    ))
}

/// Lists webhooks: every team's for an admin, else the caller's team's.
#[utoipa::path(
    get, path = "/api/v1/webhooks", operation_id = "list_webhooks", tag = "webhooks",
    responses(
        (status = 200, description = "The webhooks the caller sees, by id", body = WebhookList),
        (status = 401, description = "Missing or invalid credentials", body = ErrorBody),
        (status = 403, description = "Lacks `links:read`", body = ErrorBody),
    ),
    security(("api_key" = []), ("app_id" = [], "app_timestamp" = [], "app_signature" = []))
)]
pub async fn list(
    State(app): State<SharedApp>,
    Extension(p): Extension<Principal>,
) -> Result<Json<WebhookList>, ApiError> {
    let hooks = webhooks::list(&app, &p).await?;
    Ok(Json(WebhookList {
        webhooks: hooks.into_iter().map(WebhookView::from).collect(),
    }))
}

/// One webhook.
#[utoipa::path(
    get, path = "/api/v1/webhooks/{id}", operation_id = "get_webhook", tag = "webhooks",
    params(("id" = i64, Path, description = "Webhook id")),
    responses(
        (status = 400, description = "An id in the path is not an integer (`bad_request`)", body = ErrorBody),
        (status = 200, description = "The webhook", body = WebhookView),
        (status = 401, description = "Missing or invalid credentials", body = ErrorBody),
        (status = 403, description = "Lacks `links:read`", body = ErrorBody),
        (status = 404, description = "No such webhook (`not_found`)", body = ErrorBody),
    ),
    security(("api_key" = []), ("app_id" = [], "app_timestamp" = [], "app_signature" = []))
)]
pub async fn get(
    State(app): State<SharedApp>,
    Extension(p): Extension<Principal>,
    Path(id): Path<i64>,
) -> Result<Json<WebhookView>, ApiError> {
    Ok(Json(webhooks::get(&app, &p, id).await?.into()))
}

/// Deletes a webhook and its delivery log.
#[utoipa::path(
    delete, path = "/api/v1/webhooks/{id}", operation_id = "delete_webhook", tag = "webhooks",
    params(("id" = i64, Path, description = "Webhook id")),
    responses(
        (status = 400, description = "An id in the path is not an integer (`bad_request`)", body = ErrorBody),
        (status = 204, description = "Deleted"),
        (status = 401, description = "Missing or invalid credentials", body = ErrorBody),
        (status = 403, description = "Lacks `admin`", body = ErrorBody),
        (status = 404, description = "No such webhook (`not_found`)", body = ErrorBody),
    ),
    security(("api_key" = []), ("app_id" = [], "app_timestamp" = [], "app_signature" = []))
)]
pub async fn delete(
    State(app): State<SharedApp>,
    Extension(p): Extension<Principal>,
    Path(id): Path<i64>,
) -> Result<StatusCode, ApiError> {
    webhooks::delete(&app, &p, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The delivery log of a webhook, newest first.
#[utoipa::path(
    get, path = "/api/v1/webhooks/{id}/deliveries", operation_id = "list_webhook_deliveries",
    tag = "webhooks",
    params(("id" = i64, Path, description = "Webhook id"), DeliveryParams),
    responses(
        (status = 400, description = "An id in the path is not an integer (`bad_request`)", body = ErrorBody),
        (status = 200, description = "A page of deliveries", body = DeliveryList),
        (status = 400, description = "Bad query (`invalid_query`)", body = ErrorBody),
        (status = 401, description = "Missing or invalid credentials", body = ErrorBody),
        (status = 403, description = "Lacks `links:read`", body = ErrorBody),
        (status = 404, description = "No such webhook (`not_found`)", body = ErrorBody),
    ),
    security(("api_key" = []), ("app_id" = [], "app_timestamp" = [], "app_signature" = []))
)]
pub async fn deliveries(
    State(app): State<SharedApp>,
    Extension(p): Extension<Principal>,
    Path(id): Path<i64>,
    ApiQuery(q): ApiQuery<DeliveryParams>,
) -> Result<Json<DeliveryList>, ApiError> {
    let limit = q.limit.unwrap_or(100);
    if !(1..=MAX_PAGE).contains(&limit) {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_query",
            format!("limit must be between 1 and {MAX_PAGE}"),
        )
        .field("limit"));
    }
    let found = webhooks::deliveries(&app, &p, id, q.before, limit).await?;
    let next = (found.len() == limit as usize)
        .then(|| found.last().map(|d| d.id))
        .flatten();
    Ok(Json(DeliveryList {
        deliveries: found
            .into_iter()
            .map(|d| DeliveryView::of(&app, d))
            .collect(),
        next,
    }))
}

/// Sends a delivery again: a new delivery of the same event and data, due
/// now.
#[utoipa::path(
    post, path = "/api/v1/webhooks/{id}/deliveries/{delivery}/redeliver",
    operation_id = "redeliver_webhook_delivery", tag = "webhooks",
    params(
        ("id" = i64, Path, description = "Webhook id"),
        ("delivery" = i64, Path, description = "Delivery id"),
    ),
    responses(
        (status = 400, description = "An id in the path is not an integer (`bad_request`)", body = ErrorBody),
        (status = 202, description = "Queued: the new delivery", body = DeliveryView),
        (status = 401, description = "Missing or invalid credentials", body = ErrorBody),
        (status = 403, description = "Lacks `admin`", body = ErrorBody),
        (status = 404, description = "No such webhook or delivery (`not_found`)", body = ErrorBody),
    ),
    security(("api_key" = []), ("app_id" = [], "app_timestamp" = [], "app_signature" = []))
)]
pub async fn redeliver(
    State(app): State<SharedApp>,
    Extension(p): Extension<Principal>,
    Path((id, delivery)): Path<(i64, i64)>,
) -> Result<(StatusCode, Json<DeliveryView>), ApiError> {
    let again = webhooks::redeliver(&app, &p, id, delivery).await?;
    Ok((StatusCode::ACCEPTED, Json(DeliveryView::of(&app, again))))
}
