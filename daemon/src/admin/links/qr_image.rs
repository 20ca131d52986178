//! The QR code of a link's short URL as a file: `qr.svg` and `qr.png`,
//! inline or as a download (the renderer is [`crate::qr`]).

use axum::extract::{Path, Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::super::{AdminError, AdminState, Authed};
use crate::codes;
use crate::links::LinkView;
use crate::qr;

/// Query of the QR endpoints.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct QrParams {
    /// Any value: send as an attachment.
    pub download: Option<String>,
}

/// The short URL behind `code` and its public code.
async fn qr_target(
    admin: &AdminState,
    a: &Authed,
    code: &str,
) -> Result<(String, String), AdminError> {
    let link = admin
        .app
        .links()
        .acting_as(&a.principal())
        .get(code)
        .await?;
    let code = codes::public(&admin.app.codec, &link);
    Ok((LinkView::short_url(&a.base, &code), code))
}

/// An image reply, as an attachment when `download` is set.
fn qr_response(
    body: Vec<u8>,
    mime: &'static str,
    code: &str,
    ext: &str,
    download: bool,
) -> Response {
    let mut resp = ([(header::CONTENT_TYPE, mime)], body).into_response();
    if download {
        if let Ok(v) = format!("attachment; filename=\"{code}.{ext}\"").parse() {
            resp.headers_mut().insert(header::CONTENT_DISPOSITION, v);
        }
    }
    resp
}

/// GET `/admin/links/{code}/qr.svg`.
pub async fn qr_svg(
    State(admin): State<AdminState>,
    a: Authed,
    Path(code): Path<String>,
    Query(q): Query<QrParams>,
) -> Result<Response, AdminError> {
    let (url, code) = qr_target(&admin, &a, &code).await?;
    let svg = qr::svg(&url).map_err(|e| AdminError::Internal(e.to_string()))?;
    Ok(qr_response(
        svg.into_bytes(),
        "image/svg+xml",
        &code,
        "svg",
        q.download.is_some(),
    ))
}

/// GET `/admin/links/{code}/qr.png`.
pub async fn qr_png(
    State(admin): State<AdminState>,
    a: Authed,
    Path(code): Path<String>,
    Query(q): Query<QrParams>,
) -> Result<Response, AdminError> {
    let (url, code) = qr_target(&admin, &a, &code).await?;
    let png = qr::png(&url, 8).map_err(|e| AdminError::Internal(e.to_string()))?;
    Ok(qr_response(
        png,
        "image/png",
        &code,
        "png",
        q.download.is_some(),
    ))
}
