//! The link checker's results: `GET /api/v1/links/{code}/check` (the last
//! probe of one link, for whoever may read it) and `GET /api/v1/checks`
//! (every link failing its probes, admin).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::error::{ApiError, ErrorBody};
use super::extract::ApiQuery;
use crate::access::Scope;
use crate::app::SharedApp;
use crate::auth::Principal;
use crate::store::LinkCheck;
use crate::timestamp::Timestamp;

/// Most links one page lists.
const MAX_PAGE: u32 = 1000;

/// A link's last probe.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct CheckView {
    /// The link's generated code.
    pub code: String,
    /// The target as stored now.
    pub url: Option<String>,
    /// When it was last probed; `null`: never (the checker is off, or has
    /// not reached it yet).
    pub checked_at: Option<Timestamp>,
    /// The last answer's status, after redirects.
    pub status: Option<u16>,
    /// Why the last probe failed, or why the target was not probed.
    pub error: Option<String>,
    /// Failed probes in a row.
    pub failures: u32,
}

impl CheckView {
    fn of(app: &SharedApp, c: LinkCheck) -> Self {
        Self {
            code: app.codec.encode(c.link_id).to_string(),
            url: c.url,
            checked_at: c.checked_at.map(Timestamp::from),
            status: c.status,
            error: c.error,
            failures: c.failures,
        }
    }
}

/// A page of failing links.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct CheckList {
    pub checks: Vec<CheckView>,
    /// Pass as `after` for the next page; `null` on the last one.
    pub next: Option<u64>,
}

/// Query of `GET /api/v1/checks`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct CheckParams {
    /// Only links with at least this many failures in a row (default 1).
    #[param(minimum = 1, maximum = 1000)]
    pub min_failures: Option<u32>,
    /// At most this many, 1 to 1000 (default 100).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<u32>,
    /// The `next` of the page before.
    pub after: Option<u64>,
}

fn bad_query(field: &'static str, message: String) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, "invalid_query", message).field(field)
}

/// The last probe of a link's target.
#[utoipa::path(
    get, path = "/api/v1/links/{code}/check", operation_id = "get_link_check", tag = "links",
    params(("code" = String, Path, description = "Generated code or alias")),
    responses(
        (status = 200, description = "The last probe (all `null` when never probed)", body = CheckView),
        (status = 401, description = "Missing or invalid credentials", body = ErrorBody),
        (status = 403, description = "Lacks `links:read`", body = ErrorBody),
        (status = 404, description = "No such link (`not_found`)", body = ErrorBody),
    ),
    security(("api_key" = []), ("app_id" = [], "app_timestamp" = [], "app_signature" = []))
)]
pub async fn get(
    State(app): State<SharedApp>,
    Extension(p): Extension<Principal>,
    Path(code): Path<String>,
) -> Result<Json<CheckView>, ApiError> {
    p.require(Scope::LinksRead)?;
    let link = app.links().acting_as(&p).get(&code).await?;
    let found = app.store.link_checks(vec![link.id]).await?;
    let check = found.into_iter().next().unwrap_or(LinkCheck {
        link_id: link.id,
        url: None,
        checked_at: None,
        status: None,
        error: None,
        failures: 0,
    });
    Ok(Json(CheckView {
        url: Some(link.url),
        ..CheckView::of(&app, check)
    }))
}

/// Every link whose target fails its probes, by link id.
#[utoipa::path(
    get, path = "/api/v1/checks", operation_id = "list_failing_checks", tag = "links",
    params(CheckParams),
    responses(
        (status = 200, description = "A page of failing links", body = CheckList),
        (status = 400, description = "Bad query (`invalid_query`)", body = ErrorBody),
        (status = 401, description = "Missing or invalid credentials", body = ErrorBody),
        (status = 403, description = "Lacks `admin`", body = ErrorBody),
    ),
    security(("api_key" = []), ("app_id" = [], "app_timestamp" = [], "app_signature" = []))
)]
pub async fn failing(
    State(app): State<SharedApp>,
    Extension(p): Extension<Principal>,
    ApiQuery(q): ApiQuery<CheckParams>,
) -> Result<Json<CheckList>, ApiError> {
    p.require(Scope::Admin)?;
    let limit = q.limit.unwrap_or(100);
    if !(1..=MAX_PAGE).contains(&limit) {
        return Err(bad_query(
            "limit",
            format!("limit must be between 1 and {MAX_PAGE}"),
        ));
    }
    let min = q.min_failures.unwrap_or(1);
    if !(1..=1000).contains(&min) {
        return Err(bad_query(
            "min_failures",
            "min_failures must be between 1 and 1000".into(),
        ));
    }
    let found = app
        .store
        .failing_checks(min, q.after.unwrap_or(0), limit)
        .await?;
    let next = (found.len() == limit as usize)
        .then(|| found.last().map(|c| c.link_id))
        .flatten();
    Ok(Json(CheckList {
        checks: found.into_iter().map(|c| CheckView::of(&app, c)).collect(),
        next,
    }))
}
