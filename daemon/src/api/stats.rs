//! `GET /api/v1/links/{code}/stats`.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};
use utoipa::IntoParams;

use super::error::{ApiError, ApiQuery, ErrorBody};
use crate::app::SharedApp;
use crate::auth::{Principal, Scope};
use crate::links::parse_time;
use crate::stats::{self, Granularity, StatsView};

/// Query of the stats endpoint.
#[derive(Debug, Serialize, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub struct StatsParams {
    /// Range start: Unix seconds or RFC 3339 (default: `to` minus 7 days).
    pub from: Option<String>,
    /// Range end, exclusive: Unix seconds or RFC 3339 (default: now).
    pub to: Option<String>,
    /// `hour` (default) or `day`.
    pub granularity: Option<String>,
}

fn time_param(field: &'static str, v: Option<&str>) -> Result<Option<i64>, ApiError> {
    v.filter(|s| !s.is_empty())
        .map(|s| {
            parse_time(s).map_err(|m| {
                ApiError::new(StatusCode::BAD_REQUEST, "invalid_query", m).field(field)
            })
        })
        .transpose()
}

/// Click stats of a link: totals, an hourly or daily series, devices,
/// referrers and bots.
#[utoipa::path(
    get, path = "/api/v1/links/{code}/stats", tag = "stats",
    params(("code" = String, Path, description = "Generated code or alias"), StatsParams),
    responses(
        (status = 200, description = "Stats over the range", body = StatsView),
        (status = 400, description = "Bad query (`invalid_query`)", body = ErrorBody),
        (status = 401, description = "Missing or invalid credentials", body = ErrorBody),
        (status = 403, description = "Lacks `stats:read`", body = ErrorBody),
        (status = 404, description = "No such link", body = ErrorBody),
        (status = 422, description = "Empty or too long range (`invalid_range`)", body = ErrorBody),
        (status = 500, description = "Internal error", body = ErrorBody),
    ),
    security(("api_key" = []), ("app_id" = [], "app_timestamp" = [], "app_signature" = []))
)]
pub async fn get(
    State(app): State<SharedApp>,
    Extension(p): Extension<Principal>,
    Path(code): Path<String>,
    ApiQuery(q): ApiQuery<StatsParams>,
) -> Result<Json<StatsView>, ApiError> {
    p.require(Scope::StatsRead)?;
    let from = time_param("from", q.from.as_deref())?;
    let to = time_param("to", q.to.as_deref())?;
    let granularity = match q.granularity.as_deref() {
        None | Some("") | Some("hour") => Granularity::Hour,
        Some("day") => Granularity::Day,
        Some(other) => {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_query",
                format!("granularity must be hour or day; got {other:?}"),
            )
            .field("granularity"))
        }
    };
    Ok(Json(
        stats::query(&app, &code, from, to, granularity).await?,
    ))
}
