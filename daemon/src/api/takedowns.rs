//! `/api/v1/takedowns`: switch off every link to a host or by one creator
//! in one call, list the records, undo one (admin scope), JSON over
//! [`crate::takedown`].

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::error::{ApiError, ErrorBody};
use super::extract::{ApiJson, ApiQuery};
use crate::app::SharedApp;
use crate::auth::Principal;
use crate::store::Takedown;
use crate::takedown::{self, TakedownError, Target, MAX_LIST};
use crate::timestamp::Timestamp;

/// Body of `POST /api/v1/takedowns`: a `host` or a `creator`, and why.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewTakedownBody {
    /// Every link whose target is on this host or one of its subdomains
    /// (a name or an address; `*.` or a trailing dot change nothing).
    #[schema(min_length = 1, max_length = 253)]
    pub host: Option<String>,
    /// Every link made by `key:<id>`, `app:<app id>`, `user:<name>` or `cli`.
    #[schema(min_length = 3, max_length = 200)]
    pub creator: Option<String>,
    /// Why: kept in the record.
    #[schema(min_length = 1, max_length = 1000)]
    pub reason: String,
}

/// A takedown as recorded.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TakedownView {
    pub id: i64,
    /// `host`, `creator` or `config` (the allow/block lists changed).
    pub kind: String,
    /// The host (normal form), the creator, or the lists.
    pub selector: String,
    pub reason: String,
    /// Who asked (`key:3`, `user:alice`, `cli`, `config`).
    pub created_by: String,
    pub created_at: Timestamp,
    /// Links that matched, switched off before or not.
    pub matched: u64,
    /// Links this takedown switched off.
    pub disabled: u64,
    pub undone_at: Option<Timestamp>,
    pub undone_by: Option<String>,
    /// Links the undo switched back on (those no other takedown in force
    /// covers).
    pub restored: Option<u64>,
}

impl From<Takedown> for TakedownView {
    fn from(t: Takedown) -> Self {
        Self {
            id: t.id,
            kind: t.kind,
            selector: t.selector,
            reason: t.reason,
            created_by: t.created_by,
            created_at: t.created_at.into(),
            matched: t.matched,
            disabled: t.disabled,
            undone_at: t.undone_at.map(Timestamp::from),
            undone_by: t.undone_by,
            restored: t.restored,
        }
    }
}

/// The newest takedowns first.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TakedownList {
    pub takedowns: Vec<TakedownView>,
}

/// One link a takedown matched.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TakedownLinkView {
    /// The link's generated code (its alias, if any, beside it).
    pub code: String,
    pub alias: Option<String>,
    /// The target as stored now; `null` once the link is deleted.
    pub url: Option<String>,
    /// This takedown switched it off (else it only recorded it: the link
    /// was off already, or the takedown flags only, as the blocklist does
    /// without `blocklist_disable`).
    pub switched_off: bool,
}

/// A page of the links a takedown matched.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TakedownLinks {
    pub links: Vec<TakedownLinkView>,
    /// Pass as `after` for the next page; `null` on the last one.
    pub next: Option<u64>,
}

/// Query of `GET /api/v1/takedowns/{id}/links`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct LinksParams {
    /// At most this many, 1 to 1000 (default 100).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<u32>,
    /// The `next` of the page before.
    pub after: Option<u64>,
}

/// Query of `GET /api/v1/takedowns`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ListParams {
    /// At most this many, 1 to 1000 (default 100).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<u32>,
}

impl From<TakedownError> for ApiError {
    fn from(e: TakedownError) -> Self {
        let message = e.to_string();
        let invalid = |code, field| {
            ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, code, message.clone()).field(field)
        };
        match e {
            TakedownError::BadHost(_) => invalid("invalid_host", "host"),
            TakedownError::BadCreator(_) => invalid("invalid_creator", "creator"),
            TakedownError::BadReason => invalid("invalid_reason", "reason"),
            TakedownError::NotFound(_) => {
                ApiError::new(StatusCode::NOT_FOUND, "not_found", message)
            }
            TakedownError::AlreadyUndone(_) => {
                ApiError::new(StatusCode::CONFLICT, "already_undone", message)
            }
            TakedownError::Denied(e) => e.into(),
            TakedownError::Store(e) => e.into(),
        }
    }
}

/// Switches off every link to a host (and its subdomains) or made by one
/// creator, on every node's edge, and records who, when and why.
#[utoipa::path(
    post, path = "/api/v1/takedowns", operation_id = "create_takedown", tag = "takedowns",
    request_body = NewTakedownBody,
    responses(
        (status = 201, description = "Done: the links are off at this node's edge", body = TakedownView),
        (status = 401, description = "Missing or invalid credentials", body = ErrorBody),
        (status = 403, description = "Lacks `admin`", body = ErrorBody),
        (status = 400, description = "Malformed JSON (`invalid_json`)", body = ErrorBody),
        (status = 413, description = "Body too large (`body_too_large`)", body = ErrorBody),
        (status = 415, description = "Body is not `application/json` (`unsupported_media_type`)", body = ErrorBody),
        (status = 422, description = "`invalid_host`, `invalid_creator`, `invalid_reason`, `invalid_target` (give a host or a creator, not both), `invalid_body`", body = ErrorBody),
        (status = 503, description = "Database unavailable", body = ErrorBody),
    ),
    security(("api_key" = []), ("app_id" = [], "app_timestamp" = [], "app_signature" = []))
)]
pub async fn create(
    State(app): State<SharedApp>,
    Extension(p): Extension<Principal>,
    ApiJson(req): ApiJson<NewTakedownBody>,
) -> Result<(StatusCode, Json<TakedownView>), ApiError> {
    let target = match (req.host, req.creator) {
        (Some(host), None) => Target::Host(host),
        (None, Some(creator)) => Target::Creator(creator),
        _ => {
            return Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_target",
                "give a host or a creator (one of them)",
            ))
        }
    };
    let t = takedown::take_down(&app, &p, &target, &req.reason).await?;
    Ok((StatusCode::CREATED, Json(t.into())))
}

/// Lists takedowns, newest first.
#[utoipa::path(
    get, path = "/api/v1/takedowns", operation_id = "list_takedowns", tag = "takedowns",
    params(ListParams),
    responses(
        (status = 200, description = "The newest takedowns first", body = TakedownList),
        (status = 400, description = "Bad query (`invalid_query`)", body = ErrorBody),
        (status = 401, description = "Missing or invalid credentials", body = ErrorBody),
        (status = 403, description = "Lacks `admin`", body = ErrorBody),
    ),
    security(("api_key" = []), ("app_id" = [], "app_timestamp" = [], "app_signature" = []))
)]
pub async fn list(
    State(app): State<SharedApp>,
    Extension(p): Extension<Principal>,
    ApiQuery(q): ApiQuery<ListParams>,
) -> Result<Json<TakedownList>, ApiError> {
    let list = takedown::list(&app, &p, limit(q.limit)?).await?;
    Ok(Json(TakedownList {
        takedowns: list.into_iter().map(TakedownView::from).collect(),
    }))
}

/// A page size of 1 to [`MAX_LIST`] (default 100).
fn limit(given: Option<u32>) -> Result<u32, ApiError> {
    let limit = given.unwrap_or(100);
    if !(1..=MAX_LIST).contains(&limit) {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_query",
            format!("limit must be between 1 and {MAX_LIST}"),
        )
        .field("limit"));
    }
    Ok(limit)
}

/// The links a takedown matched: those it switched off, and those it only
/// recorded.
#[utoipa::path(
    get, path = "/api/v1/takedowns/{id}/links", operation_id = "list_takedown_links", tag = "takedowns",
    params(("id" = i64, Path, description = "Takedown id"), LinksParams),
    responses(
        (status = 400, description = "An id in the path is not an integer (`bad_request`)", body = ErrorBody),
        (status = 200, description = "A page of the links, by id", body = TakedownLinks),
        (status = 400, description = "Bad query (`invalid_query`)", body = ErrorBody),
        (status = 401, description = "Missing or invalid credentials", body = ErrorBody),
        (status = 403, description = "Lacks `admin`", body = ErrorBody),
        (status = 404, description = "No such takedown", body = ErrorBody),
    ),
    security(("api_key" = []), ("app_id" = [], "app_timestamp" = [], "app_signature" = []))
)]
pub async fn links(
    State(app): State<SharedApp>,
    Extension(p): Extension<Principal>,
    Path(id): Path<i64>,
    ApiQuery(q): ApiQuery<LinksParams>,
) -> Result<Json<TakedownLinks>, ApiError> {
    let limit = limit(q.limit)?;
    let found = takedown::links(&app, &p, id, q.after.unwrap_or(0), limit).await?;
    let next = (found.len() == limit as usize)
        .then(|| found.last().map(|l| l.link_id))
        .flatten();
    let links = found
        .into_iter()
        .map(|l| TakedownLinkView {
            code: app.codec.encode(l.link_id).to_string(),
            alias: l.alias,
            url: l.url,
            switched_off: l.switched_off,
        })
        .collect();
    Ok(Json(TakedownLinks { links, next }))
}

/// One takedown.
#[utoipa::path(
    get, path = "/api/v1/takedowns/{id}", operation_id = "get_takedown", tag = "takedowns",
    params(("id" = i64, Path, description = "Takedown id")),
    responses(
        (status = 400, description = "An id in the path is not an integer (`bad_request`)", body = ErrorBody),
        (status = 200, description = "The record", body = TakedownView),
        (status = 401, description = "Missing or invalid credentials", body = ErrorBody),
        (status = 403, description = "Lacks `admin`", body = ErrorBody),
        (status = 404, description = "No such takedown", body = ErrorBody),
    ),
    security(("api_key" = []), ("app_id" = [], "app_timestamp" = [], "app_signature" = []))
)]
pub async fn get(
    State(app): State<SharedApp>,
    Extension(p): Extension<Principal>,
    Path(id): Path<i64>,
) -> Result<Json<TakedownView>, ApiError> {
    Ok(Json(takedown::get(&app, &p, id).await?.into()))
}

/// Undoes a takedown: switches back on the links it switched off that are
/// still off and that no other takedown in force covers.
#[utoipa::path(
    post, path = "/api/v1/takedowns/{id}/undo", operation_id = "undo_takedown", tag = "takedowns",
    params(("id" = i64, Path, description = "Takedown id")),
    responses(
        (status = 400, description = "An id in the path is not an integer (`bad_request`)", body = ErrorBody),
        (status = 200, description = "Undone: the links are back at this node's edge", body = TakedownView),
        (status = 401, description = "Missing or invalid credentials", body = ErrorBody),
        (status = 403, description = "Lacks `admin`", body = ErrorBody),
        (status = 404, description = "No such takedown", body = ErrorBody),
        (status = 409, description = "Undone before (`already_undone`)", body = ErrorBody),
        (status = 503, description = "Database unavailable", body = ErrorBody),
    ),
    security(("api_key" = []), ("app_id" = [], "app_timestamp" = [], "app_signature" = []))
)]
pub async fn undo(
    State(app): State<SharedApp>,
    Extension(p): Extension<Principal>,
    Path(id): Path<i64>,
) -> Result<Json<TakedownView>, ApiError> {
    Ok(Json(takedown::undo(&app, &p, id).await?.into()))
}
