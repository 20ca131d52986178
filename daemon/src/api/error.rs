//! HTTP errors: RFC 9457 problem details (`application/problem+json`) with
//! a stable `code` per failure.
//!
//! The `type` of a problem is `https://shortlink.dev/errors/{code}` (one URI
//! per stable code, so clients may switch on either), `title` is the
//! status's reason phrase, `detail` the readable message. The older
//! `{"error": {"code", "message", "field"}}` member is kept beside them for
//! clients written before problem details.

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::Request;
use axum::http::{header, Method, StatusCode, Uri};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::store::{LinkError, StoreError};

/// Media type of every error reply (RFC 9457).
pub const PROBLEM_JSON: &str = "application/problem+json";

/// Prefix of the `type` URI of a problem; the stable code follows it.
pub const PROBLEM_TYPE_BASE: &str = "https://shortlink.dev/errors/";

/// The problem details (RFC 9457) every failing endpoint returns, sent as
/// `application/problem+json`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ErrorBody {
    /// `https://shortlink.dev/errors/{code}`: names the kind of problem.
    #[serde(rename = "type", default)]
    pub problem_type: String,
    /// The HTTP status's reason phrase, e.g. `Conflict`.
    #[serde(default)]
    pub title: String,
    /// The HTTP status code, repeated for clients that only see the body.
    #[serde(default)]
    pub status: u16,
    /// Human-readable explanation of this occurrence (same as `error.message`).
    #[serde(default)]
    pub detail: String,
    /// Stable machine-readable code (same as `error.code`).
    #[serde(default)]
    pub code: String,
    /// The request field at fault, when there is one (same as `error.field`).
    #[serde(default)]
    pub field: Option<String>,
    /// The same code, message and field as before problem details, kept for
    /// existing clients.
    pub error: ErrorDetail,
}

impl ErrorBody {
    /// The problem document of an error with `status` and `detail`.
    pub fn new(status: StatusCode, detail: ErrorDetail) -> Self {
        Self {
            problem_type: format!("{PROBLEM_TYPE_BASE}{}", detail.code),
            title: status.canonical_reason().unwrap_or("Error").to_string(),
            status: status.as_u16(),
            detail: detail.message.clone(),
            code: detail.code.clone(),
            field: detail.field.clone(),
            error: detail,
        }
    }
}

/// What went wrong.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ErrorDetail {
    /// Stable machine-readable code, e.g. `alias_taken`, `invalid_url`.
    pub code: String,
    /// Human-readable explanation.
    pub message: String,
    /// The request field at fault, when there is one.
    pub field: Option<String>,
}

/// The challenge of every 401.
pub const WWW_AUTHENTICATE: &str = "Bearer realm=\"shortlink\"";

/// An error on its way to becoming a response.
#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    pub field: Option<String>,
}

impl ApiError {
    /// An error without a field.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            field: None,
        }
    }

    /// Names the field at fault.
    pub fn field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }

    /// The JSON detail (also used per item in batch replies).
    pub fn detail(&self) -> ErrorDetail {
        ErrorDetail {
            code: self.code.to_string(),
            message: self.message.clone(),
            field: self.field.clone(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        // An unreachable database is logged once for the whole outage
        // (`store::postgres::reach`), not once per request refused during it.
        if self.status.is_server_error() && self.code != "database_unavailable" {
            tracing::error!(code = self.code, message = %self.message, "request failed");
        }
        let body = ErrorBody::new(self.status, self.detail());
        let mut reply = (
            self.status,
            [(header::CONTENT_TYPE, PROBLEM_JSON)],
            Json(body),
        )
            .into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            // RFC 9110: a 401 names how to authenticate. A key goes as a
            // bearer token (or X-Api-Key); signed requests are documented.
            reply.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                header::HeaderValue::from_static(WWW_AUTHENTICATE),
            );
        }
        reply
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Conflict(what) => ApiError::new(
                StatusCode::CONFLICT,
                "conflict",
                format!("{what} is already taken"),
            ),
            StoreError::NotFound(what) => ApiError::new(
                StatusCode::NOT_FOUND,
                "not_found",
                format!("{what} not found"),
            ),
            StoreError::InUse(what) => ApiError::new(StatusCode::CONFLICT, "in_use", what),
            StoreError::Closed => ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "shutting_down",
                "the daemon is shutting down",
            ),
            e @ StoreError::Unavailable(_) => ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "database_unavailable",
                e.to_string(),
            ),
            StoreError::Exhausted(what) => {
                ApiError::new(StatusCode::INSUFFICIENT_STORAGE, "codes_used_up", what)
            }
            e => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()),
        }
    }
}

impl From<LinkError> for ApiError {
    fn from(e: LinkError) -> Self {
        match e {
            LinkError::Invalid {
                field,
                code,
                message,
            } => ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, code, message).field(field),
            LinkError::AliasTaken(alias) => ApiError::new(
                StatusCode::CONFLICT,
                "alias_taken",
                format!("alias \"{alias}\" is already taken"),
            )
            .field("alias"),
            LinkError::NotFound(code) => ApiError::new(
                StatusCode::NOT_FOUND,
                "not_found",
                format!("no link has the code \"{code}\""),
            ),
            e @ LinkError::BatchTooLarge { .. } => ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "batch_too_large",
                e.to_string(),
            )
            .field("links"),
            e @ LinkError::TakenDown => {
                ApiError::new(StatusCode::CONFLICT, "taken_down", e.to_string()).field("disabled")
            }
            LinkError::Hashing(m) => ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "password_hashing",
                format!("link password hashing failed: {m}"),
            ),
            LinkError::Store(e) => e.into(),
        }
    }
}

/// Pulls a field name out of a serde message (`missing field `url``).
pub fn serde_field(message: &str) -> Option<String> {
    for marker in ["missing field `", "unknown field `"] {
        if let Some(rest) = message.split(marker).nth(1) {
            return rest.split('`').next().map(str::to_string);
        }
    }
    // serde_path_to_error prefixes the path: "url: invalid type ..."
    let tail = ["target type: ", "query string: "]
        .iter()
        .find_map(|marker| message.split_once(marker).map(|(_, t)| t))
        .unwrap_or(message);
    let (path, _) = tail.split_once(": ")?;
    (!path.is_empty() && !path.contains(' ')).then(|| path.to_string())
}

impl From<JsonRejection> for ApiError {
    fn from(r: JsonRejection) -> Self {
        let text = r.body_text();
        match r {
            JsonRejection::JsonDataError(_) => {
                let field = serde_field(&text);
                let code = crate::links::input::shape_error_code(&text).unwrap_or("invalid_body");
                let mut e = ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, code, text);
                e.field = field;
                e
            }
            JsonRejection::JsonSyntaxError(_) => {
                ApiError::new(StatusCode::BAD_REQUEST, "invalid_json", text)
            }
            JsonRejection::MissingJsonContentType(_) => ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
                "send the body as JSON with Content-Type: application/json",
            ),
            JsonRejection::BytesRejection(_) => {
                ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "body_too_large", text)
            }
            _ => ApiError::new(StatusCode::BAD_REQUEST, "invalid_body", text),
        }
    }
}

impl From<QueryRejection> for ApiError {
    fn from(r: QueryRejection) -> Self {
        let text = r.body_text();
        let field = serde_field(&text);
        let mut e = ApiError::new(StatusCode::BAD_REQUEST, "invalid_query", text);
        e.field = field;
        e
    }
}

/// Longest plain-text error body [`json_errors`] carries over.
const MAX_PLAIN_ERROR: usize = 4096;

/// The stable code of an error reply that no handler gave one (axum's own
/// rejections, such as a path segment that is not a number).
fn code_for_status(status: StatusCode) -> &'static str {
    match status {
        StatusCode::BAD_REQUEST => "bad_request",
        StatusCode::NOT_FOUND => "not_found",
        StatusCode::METHOD_NOT_ALLOWED => "method_not_allowed",
        StatusCode::PAYLOAD_TOO_LARGE => "body_too_large",
        StatusCode::UNSUPPORTED_MEDIA_TYPE => "unsupported_media_type",
        StatusCode::UNPROCESSABLE_ENTITY => "invalid_body",
        StatusCode::SERVICE_UNAVAILABLE => "unavailable",
        s if s.is_server_error() => "internal",
        _ => "error",
    }
}

/// Middleware: an error reply that is not JSON (axum's plain-text
/// rejections) becomes a problem document, its text the detail, so every
/// error of the API has a stable code. Headers such as `Allow` are kept; a
/// handler's own JSON reply with an error status (the health check's 503)
/// is left as it is.
pub async fn json_errors(req: Request, next: Next) -> Response {
    let resp = next.run(req).await;
    let is_json = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with(PROBLEM_JSON) || v.starts_with("application/json"));
    let status = resp.status();
    if is_json || !(status.is_client_error() || status.is_server_error()) {
        return resp;
    }
    let (mut parts, body) = resp.into_parts();
    let text = match axum::body::to_bytes(body, MAX_PLAIN_ERROR).await {
        Ok(b) if !b.is_empty() => String::from_utf8_lossy(&b).into_owned(),
        _ => status
            .canonical_reason()
            .unwrap_or("request failed")
            .to_string(),
    };
    let mut reply = ApiError::new(status, code_for_status(status), text).into_response();
    parts.headers.remove(header::CONTENT_TYPE);
    parts.headers.remove(header::CONTENT_LENGTH);
    for (name, value) in parts.headers.iter() {
        reply.headers_mut().entry(name).or_insert(value.clone());
    }
    reply
}

/// Reply for routes that do not exist.
pub async fn not_found() -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "no_route", "no such endpoint")
}

/// Reply for a route that exists but not with this method; the router adds
/// the `Allow` header with the methods it has.
pub async fn method_not_allowed(method: Method, uri: Uri) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!(
            "{method} is not allowed on {}; the Allow header lists the methods that are",
            uri.path()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_names_from_serde_messages() {
        assert_eq!(
            serde_field("Failed to deserialize the JSON body into the target type: missing field `url` at line 1 column 2"),
            Some("url".into())
        );
        assert_eq!(
            serde_field("Failed to deserialize the JSON body into the target type: max_visits: invalid type: string \"x\", expected u64 at line 1 column 20"),
            Some("max_visits".into())
        );
        assert_eq!(
            serde_field("Failed to deserialize query string: limit: invalid digit found in string"),
            Some("limit".into())
        );
    }

    #[test]
    fn an_unreachable_database_is_a_503_with_its_own_code() {
        let e = ApiError::from(StoreError::Unavailable(
            "PostgreSQL at db:5432: refused".into(),
        ));
        assert_eq!(e.status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(e.code, "database_unavailable");
        assert!(e.message.contains("db:5432"), "{}", e.message);
        let e = ApiError::from(StoreError::Commit("disk I/O error".into()));
        assert_eq!(e.status, StatusCode::INTERNAL_SERVER_ERROR);
    }
}
