//! `/api/v1/links`: create (single and batch), read, list, edit, delete.

use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::error::{ApiError, ErrorBody};
use super::extract::ApiJson;
use crate::access::Scope;
use crate::app::SharedApp;
use crate::auth::Principal;
use crate::base_url;
use crate::links::{self, CreateLink, Created, LinkView, UpdateLink};

pub mod batch;
mod list_query;

pub use batch::{create_batch, BatchItem, BatchRequest, BatchResponse};
pub use list_query::{ListFilters, ListParams, OrderParam, SortParam, StateParam, TagsMode};

/// Largest page of `GET /api/v1/links`.
pub const MAX_PAGE: u32 = 1000;

fn base(app: &SharedApp, headers: &HeaderMap) -> String {
    base_url::for_request(headers, &app.config.base_url)
}

/// Creates a short link.
#[utoipa::path(
    post, path = "/api/v1/links", operation_id = "create_link", tag = "links",
    request_body = CreateLink,
    params(("X-Shortlink-Base" = Option<String>, Header, description = "Public base of short URLs, set by nginx")),
    responses(
        (status = 201, description = "Created; `Location` is the new link's resource, `/api/v1/links/{generated_code}`", body = LinkView,
            headers(("Location" = String, description = "The created link's URL in this API"))),
        (status = 200, description = "`dedupe` found an existing live link with the same URL and options", body = LinkView),
        (status = 400, description = "Malformed JSON (`invalid_json`)", body = ErrorBody),
        (status = 401, description = "Missing or invalid credentials", body = ErrorBody),
        (status = 403, description = "Lacks `links:write` (`insufficient_scope`)", body = ErrorBody),
        (status = 409, description = "Alias taken (`alias_taken`)", body = ErrorBody),
        (status = 415, description = "Body is not JSON", body = ErrorBody),
        (status = 422, description = "Invalid field: `invalid_url`, `invalid_alias`, `alias_reserved`, `invalid_expiry`, `invalid_redirect`, `invalid_max_visits`, `invalid_tags`, `invalid_body`", body = ErrorBody),
        (status = 500, description = "Internal error", body = ErrorBody),
    ),
    security(("api_key" = []), ("app_id" = [], "app_timestamp" = [], "app_signature" = []))
)]
pub async fn create(
    State(app): State<SharedApp>,
    Extension(p): Extension<Principal>,
    headers: HeaderMap,
    ApiJson(req): ApiJson<CreateLink>,
) -> Result<Response, ApiError> {
    p.require(Scope::LinksWrite)?;
    let created = app.links().acting_as(&p).create(&req, Some(&p.who)).await?;
    let view = LinkView::new(&app.codec, created.link(), &base(&app, &headers));
    Ok(match created {
        Created::New(_) => {
            let location = format!("/api/v1/links/{}", view.generated_code);
            (
                StatusCode::CREATED,
                [(header::LOCATION, location)],
                Json(view),
            )
                .into_response()
        }
        Created::Existing(_) => (StatusCode::OK, Json(view)).into_response(),
    })
}

/// A page of links in the asked order.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct LinkPage {
    /// Up to `limit` links.
    pub links: Vec<LinkView>,
    /// Pass as `cursor` for the next page; absent on the last page.
    pub next_cursor: Option<String>,
    /// Links matching the filters across every page.
    pub total: u64,
}

/// Lists links, newest first unless `sort`/`order` say otherwise, with
/// cursor pagination and filters.
#[utoipa::path(
    get, path = "/api/v1/links", operation_id = "list_links", tag = "links",
    params(ListParams, ListFilters, ("X-Shortlink-Base" = Option<String>, Header, description = "Public base of short URLs")),
    responses(
        (status = 200, description = "A page of links", body = LinkPage),
        (status = 400, description = "Bad query (`invalid_query`, `invalid_cursor`)", body = ErrorBody),
        (status = 404, description = "No such team (`unknown_team`)", body = ErrorBody),
        (status = 401, description = "Missing or invalid credentials", body = ErrorBody),
        (status = 403, description = "Lacks `links:read`", body = ErrorBody),
        (status = 500, description = "Internal error", body = ErrorBody),
    ),
    security(("api_key" = []), ("app_id" = [], "app_timestamp" = [], "app_signature" = []))
)]
pub async fn list(
    State(app): State<SharedApp>,
    Extension(p): Extension<Principal>,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
) -> Result<Json<LinkPage>, ApiError> {
    p.require(Scope::LinksRead)?;
    let (mut query, team) = list_query::parse(raw.as_deref().unwrap_or(""))?;
    if let Some(name) = team {
        query.team = Some(crate::teams::find(&app, &name).await?.id);
    }
    let (sort, ascending) = (query.sort, query.ascending);
    let page = app.links().acting_as(&p).list(query).await?;
    let next_cursor = page
        .next
        .map(|position| links::list::cursor(sort, ascending, position));
    let base = base(&app, &headers);
    Ok(Json(LinkPage {
        links: page
            .links
            .iter()
            .map(|l| LinkView::new(&app.codec, l, &base))
            .collect(),
        next_cursor,
        total: page.total,
    }))
}

/// Reads a link: code (or alias) to URL and every field, with total clicks.
#[utoipa::path(
    get, path = "/api/v1/links/{code}", operation_id = "get_link", tag = "links",
    params(("code" = String, Path, description = "Generated code or alias"),
           ("X-Shortlink-Base" = Option<String>, Header, description = "Public base of short URLs")),
    responses(
        (status = 200, description = "The link (also when expired or disabled: see `state`)", body = LinkView),
        (status = 401, description = "Missing or invalid credentials", body = ErrorBody),
        (status = 403, description = "Lacks `links:read`", body = ErrorBody),
        (status = 404, description = "No such link (`not_found`)", body = ErrorBody),
        (status = 500, description = "Internal error", body = ErrorBody),
    ),
    security(("api_key" = []), ("app_id" = [], "app_timestamp" = [], "app_signature" = []))
)]
pub async fn get(
    State(app): State<SharedApp>,
    Extension(p): Extension<Principal>,
    headers: HeaderMap,
    Path(code): Path<String>,
) -> Result<Json<LinkView>, ApiError> {
    p.require(Scope::LinksRead)?;
    let link = app.links().acting_as(&p).get(&code).await?;
    Ok(Json(LinkView::new(
        &app.codec,
        &link,
        &base(&app, &headers),
    )))
}

/// Edits a link; connected nginx workers drop it before the reply is sent.
#[utoipa::path(
    patch, path = "/api/v1/links/{code}", operation_id = "update_link", tag = "links",
    request_body = UpdateLink,
    params(("code" = String, Path, description = "Generated code or alias"),
           ("X-Shortlink-Base" = Option<String>, Header, description = "Public base of short URLs")),
    responses(
        (status = 200, description = "The edited link", body = LinkView),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Missing or invalid credentials", body = ErrorBody),
        (status = 403, description = "Lacks `links:write`", body = ErrorBody),
        (status = 404, description = "No such link", body = ErrorBody),
        (status = 409, description = "New alias taken", body = ErrorBody),
        (status = 422, description = "Invalid field", body = ErrorBody),
        (status = 500, description = "Internal error", body = ErrorBody),
    ),
    security(("api_key" = []), ("app_id" = [], "app_timestamp" = [], "app_signature" = []))
)]
pub async fn update(
    State(app): State<SharedApp>,
    Extension(p): Extension<Principal>,
    headers: HeaderMap,
    Path(code): Path<String>,
    ApiJson(patch): ApiJson<UpdateLink>,
) -> Result<Json<LinkView>, ApiError> {
    p.require(Scope::LinksWrite)?;
    let link = app.links().acting_as(&p).update(&code, patch).await?;
    Ok(Json(LinkView::new(
        &app.codec,
        &link,
        &base(&app, &headers),
    )))
}

/// Deletes a link and its stats; connected nginx workers drop it first.
#[utoipa::path(
    delete, path = "/api/v1/links/{code}", operation_id = "delete_link", tag = "links",
    params(("code" = String, Path, description = "Generated code or alias")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 401, description = "Missing or invalid credentials", body = ErrorBody),
        (status = 403, description = "Lacks `links:write`", body = ErrorBody),
        (status = 404, description = "No such link", body = ErrorBody),
        (status = 500, description = "Internal error", body = ErrorBody),
    ),
    security(("api_key" = []), ("app_id" = [], "app_timestamp" = [], "app_signature" = []))
)]
pub async fn delete(
    State(app): State<SharedApp>,
    Extension(p): Extension<Principal>,
    Path(code): Path<String>,
) -> Result<StatusCode, ApiError> {
    p.require(Scope::LinksWrite)?;
    app.links().acting_as(&p).delete(&code).await?;
    Ok(StatusCode::NO_CONTENT)
}
