//! The API's authentication middleware: reads the credentials a request
//! carries (`X-Api-Key`, or `X-App-Id`, `X-Timestamp` and `X-Signature`),
//! has [`crate::auth`] verify them, and answers 401 (or 403) with the
//! error's stable `code` when they fail.

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::ApiError;
use crate::app::{App, SharedApp};
use crate::auth::{self, AuthError, SignedRequest};

/// Largest body a signed request may carry (it is hashed in memory).
pub const MAX_SIGNED_BODY: usize = 32 * 1024 * 1024;

impl From<AuthError> for ApiError {
    fn from(e: AuthError) -> Self {
        let message = e.to_string();
        let code = match e {
            AuthError::Store(e) => return e.into(),
            AuthError::InsufficientScope(_) => {
                return ApiError::new(StatusCode::FORBIDDEN, "insufficient_scope", message)
            }
            AuthError::MissingCredentials | AuthError::MissingSignedHeader(_) => {
                "missing_credentials"
            }
            AuthError::AmbiguousCredentials(_) => "ambiguous_credentials",
            AuthError::InvalidApiKey => "invalid_api_key",
            AuthError::RevokedApiKey(_) => "revoked_api_key",
            AuthError::ExpiredApiKey(..) => "expired_api_key",
            AuthError::InvalidAppId | AuthError::UnknownApp(_) => "unknown_app",
            AuthError::RevokedApp(_) => "revoked_app",
            AuthError::InvalidTimestamp => "invalid_timestamp",
            AuthError::StaleTimestamp { .. } => "stale_timestamp",
            AuthError::MalformedSignature | AuthError::SignatureMismatch => "invalid_signature",
            AuthError::ReplayedSignature => "replayed_signature",
        };
        ApiError::new(StatusCode::UNAUTHORIZED, code, message)
    }
}

/// Middleware: authenticates the request or answers 401.
pub async fn authenticate(State(app): State<SharedApp>, req: Request, next: Next) -> Response {
    match authenticated(&app, req).await {
        Ok(req) => next.run(req).await,
        Err(e) => e.into_response(),
    }
}

/// The headers of a signed request; a request that sends any of them
/// beside an API key is refused as ambiguous.
const SIGNED_HEADERS: [&str; 3] = ["x-app-id", "x-timestamp", "x-signature"];

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
}

/// The API key a request presents: `X-Api-Key`, or `Authorization: Bearer
/// <key>` (what Prometheus's `authorization` setting and most HTTP clients
/// send). `None` when it presents neither; an unreadable value or another
/// `Authorization` scheme is an invalid key, and both headers at once are
/// ambiguous.
pub fn presented_key(headers: &HeaderMap) -> Option<Result<&str, AuthError>> {
    if let Some(key) = headers.get("x-api-key") {
        if headers.contains_key(axum::http::header::AUTHORIZATION) {
            return Some(Err(AuthError::AmbiguousCredentials(
                "X-Api-Key and Authorization",
            )));
        }
        return Some(
            key.to_str()
                .map(str::trim)
                .map_err(|_| AuthError::InvalidApiKey),
        );
    }
    let value = headers.get(axum::http::header::AUTHORIZATION)?;
    let Ok(value) = value.to_str() else {
        return Some(Err(AuthError::InvalidApiKey));
    };
    let (scheme, key) = value.trim().split_once(' ').unwrap_or((value, ""));
    if !scheme.eq_ignore_ascii_case("bearer") || key.trim().is_empty() {
        return Some(Err(AuthError::InvalidApiKey));
    }
    Some(Ok(key.trim()))
}

async fn authenticated(app: &App, mut req: Request) -> Result<Request, ApiError> {
    let headers = req.headers();
    let principal = if let Some(key) = presented_key(headers) {
        if SIGNED_HEADERS.iter().any(|h| headers.contains_key(*h)) {
            return Err(AuthError::AmbiguousCredentials("an API key and signature headers").into());
        }
        auth::verify_key(&app.store, &app.auth, key?).await?
    } else if let Some(app_id) = headers.get("x-app-id") {
        let app_id = app_id
            .to_str()
            .map_err(|_| AuthError::InvalidAppId)?
            .trim()
            .to_string();
        let (parts, body) = req.into_parts();
        let bytes = axum::body::to_bytes(body, MAX_SIGNED_BODY)
            .await
            .map_err(|_| {
                ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "body_too_large",
                    "the body of a signed request is too large",
                )
            })?;
        let signed = SignedRequest {
            app_id: &app_id,
            timestamp: header(&parts.headers, "x-timestamp"),
            signature: header(&parts.headers, "x-signature"),
            method: parts.method.as_str(),
            path_and_query: parts
                .uri
                .path_and_query()
                .map(|p| p.as_str())
                .unwrap_or("/"),
            body: &bytes,
        };
        let window = app.config.signature_window;
        let principal = auth::verify_signature(&app.store, &app.auth, window, &signed).await?;
        req = Request::from_parts(parts, Body::from(bytes));
        principal
    } else {
        return Err(AuthError::MissingCredentials.into());
    };
    req.extensions_mut().insert(principal);
    Ok(req)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::Scope;

    #[test]
    fn a_key_is_presented_as_x_api_key_or_a_bearer_token() {
        let with = |name: &str, value: &str| {
            let mut h = HeaderMap::new();
            h.insert(
                axum::http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                value.parse().unwrap(),
            );
            h
        };
        let key = |h: &HeaderMap| presented_key(h).map(|r| r.map(str::to_string).map_err(|_| ()));
        assert_eq!(key(&with("x-api-key", "slk_a")), Some(Ok("slk_a".into())));
        assert_eq!(
            key(&with("authorization", "Bearer slk_b")),
            Some(Ok("slk_b".into()))
        );
        assert_eq!(
            key(&with("authorization", "bearer  slk_c ")),
            Some(Ok("slk_c".into()))
        );
        for bad in ["Basic dXNlcjpw", "Bearer", "Bearer  ", "slk_d"] {
            assert!(
                matches!(key(&with("authorization", bad)), Some(Err(_))),
                "{bad:?}"
            );
        }
        assert_eq!(key(&HeaderMap::new()), None);
        let mut both = with("x-api-key", "slk_a");
        both.insert("authorization", "Bearer slk_a".parse().unwrap());
        assert!(matches!(
            presented_key(&both),
            Some(Err(AuthError::AmbiguousCredentials(_)))
        ));
    }

    #[test]
    fn auth_errors_keep_their_statuses_and_codes() {
        let cases = [
            (AuthError::MissingCredentials, 401, "missing_credentials"),
            (
                AuthError::MissingSignedHeader("x-timestamp"),
                401,
                "missing_credentials",
            ),
            (AuthError::InvalidApiKey, 401, "invalid_api_key"),
            (
                AuthError::AmbiguousCredentials("X-Api-Key and Authorization"),
                401,
                "ambiguous_credentials",
            ),
            (
                AuthError::RevokedApiKey("ci".into()),
                401,
                "revoked_api_key",
            ),
            (AuthError::InvalidAppId, 401, "unknown_app"),
            (AuthError::UnknownApp("app_1".into()), 401, "unknown_app"),
            (AuthError::RevokedApp("app_1".into()), 401, "revoked_app"),
            (AuthError::InvalidTimestamp, 401, "invalid_timestamp"),
            (
                AuthError::StaleTimestamp {
                    ts: 1,
                    window: 60,
                    now: 100,
                },
                401,
                "stale_timestamp",
            ),
            (AuthError::MalformedSignature, 401, "invalid_signature"),
            (AuthError::SignatureMismatch, 401, "invalid_signature"),
            (AuthError::ReplayedSignature, 401, "replayed_signature"),
            (
                AuthError::InsufficientScope(Scope::LinksWrite),
                403,
                "insufficient_scope",
            ),
        ];
        for (e, status, code) in cases {
            let message = e.to_string();
            let api = ApiError::from(e);
            assert_eq!((api.status.as_u16(), api.code), (status, code), "{message}");
            assert_eq!(api.message, message);
        }
        // Store failures answer as everywhere else in the API.
        let e = ApiError::from(AuthError::Store(crate::store::StoreError::Closed));
        assert_eq!((e.status.as_u16(), e.code), (503, "shutting_down"));
        let e = ApiError::from(AuthError::InsufficientScope(Scope::LinksWrite));
        assert_eq!(
            e.message,
            "these credentials lack the links:write scope needed here"
        );
    }
}
