//! `GET /api/v1/ids` (admin): the id ranges leased, and their recycling
//! (`crate::recycle`): how many ranges are leased, purged and available
//! again, and the newest of them.

use axum::extract::State;
use axum::http::StatusCode;
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};
use std::sync::atomic::Ordering;
use utoipa::{IntoParams, ToSchema};

use super::error::{ApiError, ErrorBody};
use super::extract::ApiQuery;
use crate::access::Scope;
use crate::app::SharedApp;
use crate::auth::Principal;
use crate::store::{IdRange, RangeState};
use crate::timestamp::Timestamp;

/// Most ranges one answer lists.
const MAX_RANGES: u32 = 1000;

/// The recycling settings in force on this daemon.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct RecyclingView {
    /// Whether expired and deleted links' ids are reused.
    pub enabled: bool,
    /// Days a range and its links must be past before reuse.
    pub grace_days: u64,
    /// Seconds between two sweeps.
    pub sweep_interval: u64,
}

/// One leased range of ids.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct IdRangeView {
    /// First id of the range.
    pub start: u64,
    /// One past the last id.
    pub stop: u64,
    /// The generated code of the first id.
    pub first_code: String,
    /// When it was last handed to a daemon.
    pub leased_at: Timestamp,
    /// `leased`, `purged` (old links gone, edges told) or `available`.
    pub state: RangeState,
    /// When it was last purged for reuse.
    pub recycled_at: Option<Timestamp>,
    /// Times it was handed out again.
    pub reuses: u32,
}

impl IdRangeView {
    fn of(app: &SharedApp, r: IdRange) -> Self {
        Self {
            start: r.start,
            stop: r.stop,
            first_code: crate::codes::generated_for_id(&app.codec, r.start),
            leased_at: Timestamp(r.leased_at),
            state: r.state,
            recycled_at: r.recycled_at.map(Timestamp),
            reuses: r.reuses,
        }
    }
}

/// The id ranges and their recycling.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct IdsView {
    /// The settings of this daemon.
    pub recycling: RecyclingView,
    /// Ranges handed out (over every node).
    pub leased: u64,
    /// Ranges purged, waiting to be released.
    pub purged: u64,
    /// Ranges free to be handed out again.
    pub available: u64,
    /// Ids in the available ranges.
    pub available_ids: u64,
    /// Recycled ranges handed out again, over all time.
    pub reused: u64,
    /// Ids made reusable by this daemon since it started.
    pub recycled_ids: u64,
    /// The newest ranges, highest first.
    pub ranges: Vec<IdRangeView>,
}

/// Query of `GET /api/v1/ids`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct IdsParams {
    /// Ranges to list, 0 to 1000 (default 20).
    #[param(minimum = 0, maximum = 1000)]
    pub limit: Option<u32>,
}

/// The id ranges leased, and their recycling.
#[utoipa::path(
    get, path = "/api/v1/ids", operation_id = "get_id_ranges", tag = "health",
    params(IdsParams),
    responses(
        (status = 200, description = "The id ranges and their recycling", body = IdsView),
        (status = 400, description = "Bad query (`invalid_query`)", body = ErrorBody),
        (status = 401, description = "Missing or invalid credentials", body = ErrorBody),
        (status = 403, description = "Lacks `admin`", body = ErrorBody),
    ),
    security(("api_key" = []), ("app_id" = [], "app_timestamp" = [], "app_signature" = []))
)]
pub async fn get(
    State(app): State<SharedApp>,
    Extension(p): Extension<Principal>,
    ApiQuery(q): ApiQuery<IdsParams>,
) -> Result<Json<IdsView>, ApiError> {
    p.require(Scope::Admin)?;
    let limit = q.limit.unwrap_or(20);
    if limit > MAX_RANGES {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_query",
            format!("limit must be between 0 and {MAX_RANGES}"),
        )
        .field("limit"));
    }
    let found = app.store.id_ranges(limit).await?;
    let config = &app.config.recycling;
    Ok(Json(IdsView {
        recycling: RecyclingView {
            enabled: config.enabled,
            grace_days: config.grace_days,
            sweep_interval: config.sweep_interval,
        },
        leased: found.leased,
        purged: found.purged,
        available: found.available,
        available_ids: found.available_ids,
        reused: found.reused,
        recycled_ids: app.ids.recycled.load(Ordering::Relaxed),
        ranges: found
            .ranges
            .into_iter()
            .map(|r| IdRangeView::of(&app, r))
            .collect(),
    }))
}
