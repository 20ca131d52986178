//! `POST /api/v1/import`: the bulk path of `shortlinkd import`, on the
//! owner-only control socket only (not through nginx).
//!
//! Rows are compact (`[line, url, alias, expires_at, tags]`) and the reply
//! names only the refused rows, so a million-row import moves a few bytes
//! per row each way instead of a full link view.

use axum::extract::State;
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};

use super::error::ApiError;
use super::extract::ApiJson;
use crate::access::Scope;
use crate::app::SharedApp;
use crate::auth::Principal;
use crate::links::{ImportOutcome, ImportRow};

/// Body of `POST /api/v1/import`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImportRequest {
    /// Up to [`crate::links::MAX_IMPORT`] rows.
    pub rows: Vec<ImportRow>,
}

/// Stores the good rows in one transaction; replies with the count and the
/// refused rows by line, after the commit.
pub async fn import(
    State(app): State<SharedApp>,
    Extension(p): Extension<Principal>,
    ApiJson(req): ApiJson<ImportRequest>,
) -> Result<Json<ImportOutcome>, ApiError> {
    p.require(Scope::LinksWrite)?;
    Ok(Json(
        app.links()
            .acting_as(&p)
            .import(req.rows, Some(&p.who))
            .await?,
    ))
}
