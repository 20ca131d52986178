//! The request extractors of the API: a JSON body and a query string, with
//! rejections in the API's error format ([`ApiError`]).

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap};
use axum::Json;
use serde::de::DeserializeOwned;

use super::error::ApiError;

/// `axum::Json` with rejections in our error format.
///
/// A body sent as plain `application/json` is read with `serde_json`
/// alone; only one that fails is read again through `axum::Json`, whose
/// `serde_path_to_error` names where it failed. The path tracking costs
/// every value it reads (about 5 % of an import row's daemon time) and
/// is only needed for the message. Any other media type goes to
/// `axum::Json` directly, which accepts or refuses it as before.
pub struct ApiJson<T>(pub T);

impl<T, S> FromRequest<S> for ApiJson<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        if !plain_json(req.headers()) {
            return match Json::<T>::from_request(req, state).await {
                Ok(Json(v)) => Ok(ApiJson(v)),
                Err(r) => Err(r.into()),
            };
        }
        let bytes = match Bytes::from_request(req, state).await {
            Ok(b) => b,
            Err(r) => return Err(axum::extract::rejection::JsonRejection::from(r).into()),
        };
        if let Ok(v) = serde_json::from_slice(&bytes) {
            return Ok(ApiJson(v));
        }
        match Json::<T>::from_bytes(&bytes) {
            Ok(Json(v)) => Ok(ApiJson(v)),
            Err(r) => Err(r.into()),
        }
    }
}

/// True when the body is declared `application/json`, with parameters or
/// none, in any case: a media type `axum::Json` accepts too.
fn plain_json(headers: &HeaderMap) -> bool {
    let Some(Ok(value)) = headers.get(header::CONTENT_TYPE).map(|v| v.to_str()) else {
        return false;
    };
    let essence = value.split(';').next().unwrap_or_default().trim();
    essence.eq_ignore_ascii_case("application/json")
}

/// `axum::extract::Query` with rejections in our error format.
pub struct ApiQuery<T>(pub T);

impl<T, S> FromRequestParts<S> for ApiQuery<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match axum::extract::Query::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Query(v)) => Ok(ApiQuery(v)),
            Err(r) => Err(r.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(content_type: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::CONTENT_TYPE, content_type.parse().unwrap());
        h
    }

    #[test]
    fn only_plain_json_takes_the_fast_path() {
        for t in [
            "application/json",
            "application/json; charset=utf-8",
            "Application/JSON",
            " application/json ;charset=UTF-8",
        ] {
            assert!(plain_json(&with(t)), "{t}");
        }
        for t in [
            "application/problem+json",
            "text/json",
            "application/jsonx",
            "text/plain",
            "",
        ] {
            assert!(!plain_json(&with(t)), "{t}");
        }
        assert!(!plain_json(&HeaderMap::new()));
    }
}
