//! The query of `GET /api/v1/links`: page and search ([`ListParams`]),
//! order and filters ([`ListFilters`]), and every `tag` given, checked and
//! turned into the store's [`ListQuery`].

use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::MAX_PAGE;
use crate::api::error::ApiError;
use crate::links;
use crate::store::{LinkState, ListQuery, ListSort};

/// Page and search of `GET /api/v1/links`; its order and other filters are
/// [`ListFilters`] (apart, so callers that only page and search stay as
/// they are).
#[derive(Debug, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ListParams {
    /// Page size, 1 to 1000 (default 50).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<u32>,
    /// `next_cursor` of the previous page, with the same `sort` and
    /// `order`. Opaque: the last link's id newest first, else its
    /// `(sort value, id)` position, so pages stay stable while links are
    /// added.
    pub cursor: Option<String>,
    /// Substring (case-sensitive) of the URL, alias or title, or a generated code.
    pub q: Option<String>,
    /// Only links with this tag; repeat the parameter or separate tags by
    /// commas for several (see `tags_mode`).
    #[param(value_type = Option<Vec<String>>, style = Form, explode)]
    pub tag: Option<String>,
}

/// What `GET /api/v1/links` sorts by.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SortParam {
    /// Creation order (the default).
    #[default]
    Created,
    /// Clicks written to the store (up to a flush period behind `clicks`).
    Clicks,
    /// Expiry; links that never expire count as the far future.
    Expires,
}

/// Sort direction of `GET /api/v1/links`.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum OrderParam {
    /// Smallest first.
    Asc,
    /// Largest (newest) first, the default.
    #[default]
    Desc,
}

/// How several `tag` values combine.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum TagsMode {
    /// A link carrying any of the tags matches (the default).
    #[default]
    Any,
    /// A link must carry every tag.
    All,
}

/// Link state to filter on, as `state` in a link.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum StateParam {
    /// Redirects.
    Active,
    /// Covered by a takedown in force.
    TakenDown,
    /// Switched off by an operator.
    Disabled,
    /// Past its expiry.
    Expired,
    /// Reached its visit limit.
    Exhausted,
}

/// Order and filters of `GET /api/v1/links`, beside [`ListParams`].
#[derive(Debug, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ListFilters {
    /// Sort by `created` (default), `clicks` or `expires`; ties by id.
    #[param(inline)]
    pub sort: Option<SortParam>,
    /// `desc` (default) or `asc`.
    #[param(inline)]
    pub order: Option<OrderParam>,
    /// With several tags: `any` (default) or `all` must be on a link.
    #[param(inline)]
    pub tags_mode: Option<TagsMode>,
    /// Only links in this state now: `active`, `disabled`, `expired`,
    /// `exhausted` (judged by the clicks written to the store, which trail
    /// `clicks` by at most one flush).
    #[param(inline)]
    pub state: Option<StateParam>,
    /// Only links created at or after this time: Unix seconds or RFC 3339.
    #[param(value_type = Option<crate::timestamp::TimeText>, inline)]
    pub created_after: Option<String>,
    /// Only links created before this time: Unix seconds or RFC 3339.
    #[param(value_type = Option<crate::timestamp::TimeText>, inline)]
    pub created_before: Option<String>,
    /// Only links of this team (its name). For admins: everyone else sees
    /// their own team's links only, whatever this says.
    pub team: Option<String>,
    /// Only links the link checker marks broken (`true`: their target
    /// failed `checker.fallback_after` probes in a row) or not (`false`).
    pub broken: Option<bool>,
}

/// Names of the [`ListFilters`] parameters.
const FILTER_PARAMS: [&str; 8] = [
    "sort",
    "order",
    "tags_mode",
    "state",
    "created_after",
    "created_before",
    "team",
    "broken",
];

/// Splits the query string of a list request: the tags (every `tag`,
/// commas split), the page and search, and the order and filters.
fn parse_list_query(raw: &str) -> Result<(Vec<String>, ListParams, ListFilters), ApiError> {
    let mut tags = Vec::new();
    let mut page = url::form_urlencoded::Serializer::new(String::new());
    let mut filters = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in url::form_urlencoded::parse(raw.as_bytes()) {
        if k == "tag" {
            tags.extend(
                v.split(',')
                    .map(str::trim)
                    .filter(|t| !t.is_empty())
                    .map(str::to_string),
            );
        } else if FILTER_PARAMS.contains(&k.as_ref()) {
            filters.append_pair(&k, &v);
        } else if PAGE_PARAMS.contains(&k.as_ref()) {
            page.append_pair(&k, &v);
        } else {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_query",
                format!(
                    "unknown parameter `{k}`; expected one of {}",
                    PAGE_PARAMS
                        .iter()
                        .chain(&FILTER_PARAMS)
                        .copied()
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
            .field(k));
        }
    }
    Ok((tags, query_of(page.finish())?, query_of(filters.finish())?))
}

/// Deserializes a query string with the rejections of `ApiQuery`.
fn query_of<T: serde::de::DeserializeOwned>(qs: String) -> Result<T, ApiError> {
    let uri: axum::http::Uri = format!("/?{qs}").parse().map_err(|e| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_query",
            format!("the query string is not valid: {e}"),
        )
    })?;
    Ok(axum::extract::Query::<T>::try_from_uri(&uri)?.0)
}

/// A time bound of the list, named `field` in errors.
fn time_bound(text: Option<&str>, field: &str) -> Result<Option<i64>, ApiError> {
    text.filter(|t| !t.is_empty())
        .map(|t| {
            links::input::parse_time(t).map_err(|e| {
                ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "invalid_query",
                    format!("{field}: {e}"),
                )
                .field(field)
            })
        })
        .transpose()
}

/// Most tags one list request filters by (each is matched against every
/// link's tags).
const MAX_FILTER_TAGS: usize = 100;

/// Names of the [`ListParams`] parameters.
const PAGE_PARAMS: [&str; 4] = ["limit", "cursor", "q", "tag"];

/// The store query of a list request's query string, and the team name
/// it filters on (resolved by the caller, who has the store).
pub(super) fn parse(raw: &str) -> Result<(ListQuery, Option<String>), ApiError> {
    let (tags, q, f) = parse_list_query(raw)?;
    if tags.len() > MAX_FILTER_TAGS {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_query",
            format!("at most {MAX_FILTER_TAGS} tags; got {}", tags.len()),
        )
        .field("tag"));
    }
    let limit = q.limit.unwrap_or(50);
    if limit == 0 || limit > MAX_PAGE {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_query",
            format!("limit must be between 1 and {MAX_PAGE}"),
        )
        .field("limit"));
    }
    let sort = match f.sort.unwrap_or_default() {
        SortParam::Created => ListSort::Created,
        SortParam::Clicks => ListSort::Clicks,
        SortParam::Expires => ListSort::Expires,
    };
    let ascending = matches!(f.order, Some(OrderParam::Asc));
    let after = match q.cursor.as_deref().filter(|c| !c.is_empty()) {
        None => None,
        Some(c) => Some(links::list::parse_cursor(c, sort, ascending).map_err(|e| {
            ApiError::new(StatusCode::BAD_REQUEST, "invalid_cursor", e).field("cursor")
        })?),
    };
    let team = f.team.clone().filter(|t| !t.trim().is_empty());
    let query = ListQuery {
        limit,
        after,
        sort,
        ascending,
        q: q.q.filter(|s| !s.is_empty()),
        tags,
        all_tags: matches!(f.tags_mode, Some(TagsMode::All)),
        state: f.state.map(|s| match s {
            StateParam::Active => LinkState::Active,
            StateParam::TakenDown => LinkState::TakenDown,
            StateParam::Disabled => LinkState::Disabled,
            StateParam::Expired => LinkState::Expired,
            StateParam::Exhausted => LinkState::Exhausted,
        }),
        created_after: time_bound(f.created_after.as_deref(), "created_after")?,
        created_before: time_bound(f.created_before.as_deref(), "created_before")?,
        broken: f.broken,
        ..ListQuery::default()
    };
    Ok((query, team))
}
