//! `GET /api/v1/links/{code}/qr`: the QR code of a link's short URL, as SVG
//! (default) or PNG, drawn by the same renderers as the admin UI.

use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

use super::error::{ApiError, ErrorBody};
use super::extract::ApiQuery;
use crate::access::Scope;
use crate::app::SharedApp;
use crate::auth::Principal;
use crate::base_url;
use crate::codes;
use crate::links::LinkView;
use crate::qr;

/// PNG pixels per QR module: default and bounds.
const SCALE: u32 = 8;
const MAX_SCALE: u32 = 40;

/// Image format of the QR code.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum QrFormat {
    /// `image/svg+xml`, one unit per module.
    #[default]
    Svg,
    /// `image/png`, `scale` pixels per module.
    Png,
}

/// Query of `GET /api/v1/links/{code}/qr`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct QrParams {
    /// `svg` (default) or `png`.
    pub format: Option<QrFormat>,
    /// PNG pixels per module, 1 to 40 (default 8).
    #[param(minimum = 1, maximum = 40)]
    pub scale: Option<u32>,
}

/// The QR code of a link's short URL.
#[utoipa::path(
    get, path = "/api/v1/links/{code}/qr", operation_id = "get_link_qr", tag = "links",
    params(("code" = String, Path, description = "Generated code or alias"), QrParams,
           ("X-Shortlink-Base" = Option<String>, Header, description = "Public base of short URLs")),
    responses(
        (status = 200, description = "The QR code of `short_url`", content(
            (String = "image/svg+xml"),
            (Vec<u8> = "image/png"),
        )),
        (status = 400, description = "Bad query (`invalid_query`)", body = ErrorBody),
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
    ApiQuery(q): ApiQuery<QrParams>,
) -> Result<Response, ApiError> {
    p.require(Scope::LinksRead)?;
    let scale = q.scale.unwrap_or(SCALE);
    if !(1..=MAX_SCALE).contains(&scale) {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_query",
            format!("scale must be between 1 and {MAX_SCALE}"),
        )
        .field("scale"));
    }
    let link = app.links().acting_as(&p).get(&code).await?;
    let base = base_url::for_request(&headers, &app.config.base_url);
    let url = LinkView::short_url(&base, &codes::public(&app.codec, &link));
    let internal = |e: qr::QrError| match e {
        qr::QrError::TooLarge(_) => {
            ApiError::new(StatusCode::BAD_REQUEST, "invalid_query", e.to_string()).field("scale")
        }
        e => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()),
    };
    Ok(match q.format.unwrap_or_default() {
        QrFormat::Svg => (
            [(header::CONTENT_TYPE, "image/svg+xml")],
            qr::svg(&url).map_err(internal)?,
        )
            .into_response(),
        QrFormat::Png => (
            [(header::CONTENT_TYPE, "image/png")],
            qr::png(&url, scale).map_err(internal)?,
        )
            .into_response(),
    })
}
