//! `GET /api/v1/links/{code}/stats` and `GET /api/v1/stats` (every link).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};
use utoipa::IntoParams;

use super::error::{ApiError, ErrorBody};
use super::extract::ApiQuery;
use crate::access::Scope;
use crate::app::SharedApp;
use crate::auth::Principal;
use crate::links::parse_time;
use crate::stats::{self, Granularity, SiteQuery, SiteStatsView, StatsView, StatsZone, MAX_TOP};

/// Query of the stats endpoint.
#[derive(Debug, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct StatsParams {
    /// Range start: Unix seconds or RFC 3339 (default: `to` minus 7 days).
    #[param(value_type = Option<crate::timestamp::TimeText>, inline)]
    pub from: Option<String>,
    /// Range end, exclusive: Unix seconds or RFC 3339 (default: now).
    #[param(value_type = Option<crate::timestamp::TimeText>, inline)]
    pub to: Option<String>,
    /// `hour` (default) or `day`.
    #[param(value_type = Option<Granularity>, inline)]
    pub granularity: Option<String>,
    /// IANA time zone whose midnights start the day buckets (default
    /// `UTC`), such as `Europe/Paris`; an unknown one is 422 `invalid_tz`.
    #[param(example = "Europe/Paris")]
    pub tz: Option<String>,
}

/// `hour` (default) or `day`.
fn granularity_param(v: Option<&str>) -> Result<Granularity, ApiError> {
    match v {
        None | Some("hour") => Ok(Granularity::Hour),
        Some("day") => Ok(Granularity::Day),
        Some(other) => Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_query",
            format!("granularity must be hour or day; got {other:?}"),
        )
        .field("granularity")),
    }
}

/// A range end: absent is the default, empty is refused (the OpenAPI
/// document says a time, and `to=` is more likely a template's hole than
/// a wish for now).
fn time_param(field: &'static str, v: Option<&str>) -> Result<Option<i64>, ApiError> {
    v.map(|s| {
        if s.is_empty() {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_query",
                format!("{field} is empty: give Unix seconds or RFC 3339, or leave it out"),
            )
            .field(field));
        }
        parse_time(s)
            .map_err(|m| ApiError::new(StatusCode::BAD_REQUEST, "invalid_query", m).field(field))
    })
    .transpose()
}

/// Click stats of a link: totals, an hourly or daily series, devices,
/// referrers and bots.
#[utoipa::path(
    get, path = "/api/v1/links/{code}/stats", operation_id = "get_link_stats", tag = "stats",
    params(("code" = String, Path, description = "Generated code or alias"), StatsParams),
    responses(
        (status = 200, description = "Stats over the range", body = StatsView),
        (status = 400, description = "Bad query (`invalid_query`)", body = ErrorBody),
        (status = 401, description = "Missing or invalid credentials", body = ErrorBody),
        (status = 403, description = "Lacks `stats:read`", body = ErrorBody),
        (status = 404, description = "No such link", body = ErrorBody),
        (status = 422, description = "Empty or too long range (`invalid_range`), unknown `tz` (`invalid_tz`)", body = ErrorBody),
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
    let granularity = granularity_param(q.granularity.as_deref())?;
    let zone = StatsZone::parse(q.tz.as_deref())?;
    Ok(Json(
        stats::query(&app, &p, &code, from, to, granularity, &zone).await?,
    ))
}

/// Query of the site-wide stats endpoint.
#[derive(Debug, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct SiteStatsParams {
    /// Range start: Unix seconds or RFC 3339 (default: `to` minus 7 days).
    #[param(value_type = Option<crate::timestamp::TimeText>, inline)]
    pub from: Option<String>,
    /// Range end, exclusive: Unix seconds or RFC 3339 (default: now).
    #[param(value_type = Option<crate::timestamp::TimeText>, inline)]
    pub to: Option<String>,
    /// `hour` (default) or `day`.
    #[param(value_type = Option<Granularity>, inline)]
    pub granularity: Option<String>,
    /// How many of the most clicked links to list, 0 to 100 (default 10).
    #[param(minimum = 0, maximum = 100)]
    pub top: Option<usize>,
    /// IANA time zone whose midnights start the day buckets (default
    /// `UTC`), such as `Europe/Paris`; an unknown one is 422 `invalid_tz`.
    #[param(example = "Europe/Paris")]
    pub tz: Option<String>,
    /// Only the links with this tag: a campaign's totals, series and top
    /// links.
    #[param(example = "spring-sale")]
    pub tag: Option<String>,
}

/// Click stats of every link, or with `tag` of a campaign's links: totals,
/// an hourly or daily series and the most clicked links in the range.
#[utoipa::path(
    get, path = "/api/v1/stats", operation_id = "get_site_stats", tag = "stats",
    params(SiteStatsParams),
    responses(
        (status = 200, description = "Stats over the range", body = SiteStatsView),
        (status = 400, description = "Bad query (`invalid_query`)", body = ErrorBody),
        (status = 401, description = "Missing or invalid credentials", body = ErrorBody),
        (status = 403, description = "Lacks `stats:read`", body = ErrorBody),
        (status = 422, description = "Empty or too long range (`invalid_range`), unknown `tz` (`invalid_tz`), bad `tag` (`invalid_tags`)", body = ErrorBody),
        (status = 500, description = "Internal error", body = ErrorBody),
    ),
    security(("api_key" = []), ("app_id" = [], "app_timestamp" = [], "app_signature" = []))
)]
pub async fn site(
    State(app): State<SharedApp>,
    Extension(p): Extension<Principal>,
    ApiQuery(q): ApiQuery<SiteStatsParams>,
) -> Result<Json<SiteStatsView>, ApiError> {
    p.require(Scope::StatsRead)?;
    let from = time_param("from", q.from.as_deref())?;
    let to = time_param("to", q.to.as_deref())?;
    let granularity = granularity_param(q.granularity.as_deref())?;
    let top = q.top.unwrap_or(10);
    if top > MAX_TOP {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_query",
            format!("top must be between 0 and {MAX_TOP}"),
        )
        .field("top"));
    }
    let query = SiteQuery {
        from,
        to,
        granularity,
        zone: StatsZone::parse(q.tz.as_deref())?,
        tag: q.tag,
        top,
    };
    Ok(Json(stats::site_query(&app, &p, query).await?))
}
