//! The admin UI under `/admin/`, reached through nginx like the API.
//!
//! Pages are rendered on the server with maud; a few lines of plain
//! JavaScript (copy buttons, delete confirmation) and the stylesheet are
//! embedded in the binary; charts and QR codes are SVG made here. Every
//! change goes through the same functions as the API ([`crate::links`],
//! [`crate::credentials`], [`crate::users`]), so validation and edge
//! invalidation are the API's own.
//!
//! Security: see [`session`] (cookies, CSRF) and [`crate::users::lockout`]
//! (failed sign-ins). Every state-changing request is a POST checked by
//! [`require_csrf`] before any handler runs.

pub mod charts;
pub mod creators;
pub mod dashboard;
pub mod keys;
pub mod links;
pub mod login;
pub mod session;
pub mod takedowns;
pub mod teams;
pub mod usage;
pub mod users;
pub mod view;
pub mod webhooks;

use std::sync::Arc;
use std::time::Instant;

use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, FromRequest, FromRequestParts, Multipart, Request, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::Router;

use crate::access::Role;
use crate::app::SharedApp;
use crate::auth::Principal;
use crate::base_url;
use crate::store::{LinkError, StoreError};
use crate::users::{self as accounts, LoginThrottle};
use session::{SessionInfo, Sessions};
use usage::CredentialUse;

/// Largest form body accepted.
const MAX_FORM: usize = 64 * 1024;
/// Largest bulk create form (axum's default body limit, which the form
/// extractor keeps): 10,000 lines of 200 bytes.
const MAX_BULK_FORM: usize = 2 * 1024 * 1024;

/// Largest CSV upload (nginx's `client_max_body_size` for `/admin/` must
/// allow it too; its default is 1 MiB).
const MAX_UPLOAD: usize = 32 * 1024 * 1024;

/// The largest body a POST to `path` may have.
fn body_limit(path: &str) -> usize {
    match path {
        "/admin/bulk" => MAX_BULK_FORM,
        "/admin/csv/import" => MAX_UPLOAD,
        _ => MAX_FORM,
    }
}

/// State of the admin UI, shared by its handlers.
pub struct Admin {
    pub app: SharedApp,
    pub sessions: Sessions,
    pub throttle: LoginThrottle,
    /// Last use of API keys and apps.
    pub uses: Arc<CredentialUse>,
}

/// The handle handlers get.
pub type AdminState = Arc<Admin>;

/// The API router with the admin UI merged in, and last-use tracking of
/// API credentials around the API's routes.
pub fn with_admin(app: SharedApp, api: Router) -> Router {
    let uses = Arc::new(CredentialUse::default());
    let tracker = usage::Tracker {
        app: app.clone(),
        uses: uses.clone(),
    };
    let state = Arc::new(Admin {
        app,
        sessions: Sessions::default(),
        throttle: LoginThrottle::default(),
        uses,
    });
    api.route_layer(middleware::from_fn_with_state(tracker, usage::track))
        .merge(router(state))
}

/// The `/admin` routes alone.
pub fn router(state: AdminState) -> Router {
    Router::new()
        .route("/admin", get(|| async { Redirect::to("/admin/") }))
        .route("/admin/", get(home))
        .route("/admin/login", get(login::form).post(login::submit))
        .route("/admin/logout", post(login::logout))
        .route("/admin/dashboard", get(dashboard::page))
        .route("/admin/links", get(links::list).post(links::create))
        .route("/admin/links/new", get(links::new_form))
        // Beside /admin/links/, not under it: a link aliased "bulk" or
        // "csv" keeps its page at /admin/links/{alias}.
        .route(
            "/admin/bulk",
            get(links::bulk_form).post(links::bulk_create),
        )
        .route("/admin/csv", get(links::csv_page))
        .route(
            "/admin/csv/import",
            post(links::import_csv).layer(DefaultBodyLimit::max(MAX_UPLOAD)),
        )
        .route("/admin/csv/export.csv", get(links::export_csv))
        .route("/admin/links/{code}", get(links::detail).post(links::edit))
        .route("/admin/links/{code}/disable", post(links::disable))
        .route("/admin/links/{code}/enable", post(links::enable))
        .route("/admin/links/{code}/delete", post(links::delete))
        .route("/admin/links/{code}/qr.svg", get(links::qr_svg))
        .route("/admin/links/{code}/qr.png", get(links::qr_png))
        .route("/admin/keys", get(keys::page).post(keys::create_key))
        .route("/admin/keys/{id}/revoke", post(keys::revoke_key))
        .route("/admin/users", get(users::page).post(users::add))
        .route("/admin/users/{name}/password", post(users::reset_password))
        .route("/admin/users/{name}/delete", post(users::delete))
        .route(
            "/admin/takedowns",
            get(takedowns::page).post(takedowns::create),
        )
        .route("/admin/takedowns/{id}/undo", post(takedowns::undo))
        .route(
            "/admin/users/{name}/membership",
            post(teams::set_membership),
        )
        .route("/admin/teams", get(teams::page).post(teams::create))
        .route("/admin/teams/{name}/delete", post(teams::delete))
        .route(
            "/admin/webhooks",
            get(webhooks::page).post(webhooks::create),
        )
        .route("/admin/webhooks/{id}", get(webhooks::deliveries))
        .route("/admin/webhooks/{id}/delete", post(webhooks::delete))
        .route(
            "/admin/webhooks/{id}/deliveries/{delivery}/redeliver",
            post(webhooks::redeliver),
        )
        .route("/admin/apps", get(apps).post(keys::create_app))
        .route("/admin/apps/{app_id}/revoke", post(keys::revoke_app))
        .route("/admin/assets/admin.css", get(css))
        .route("/admin/assets/admin.js", get(js))
        .route("/admin/{*rest}", get(not_found).post(not_found))
        .method_not_allowed_fallback(method_not_allowed)
        .layer(middleware::from_fn_with_state(state.clone(), require_csrf))
        .layer(middleware::from_fn(security_headers))
        .with_state(state)
}

async fn home(_: Authed) -> Redirect {
    Redirect::to("/admin/dashboard")
}

async fn not_found(_: Authed) -> AdminError {
    AdminError::NotFound("There is no such page.".into())
}

/// `GET /admin/apps` (where the create-app form posts): the apps are
/// listed on the keys page.
async fn apps() -> Redirect {
    Redirect::to("/admin/keys#apps")
}

/// An address that exists, not with this method (a form's action opened
/// in the browser): an admin page saying so; the router adds `Allow`.
async fn method_not_allowed(method: Method) -> AdminError {
    AdminError::Status(
        StatusCode::METHOD_NOT_ALLOWED,
        format!("This address does not take {method}: use the buttons and forms of its page."),
    )
}

async fn css() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=3600"),
        ],
        include_str!("../../assets/admin.css"),
    )
}

async fn js() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=3600"),
        ],
        include_str!("../../assets/admin.js"),
    )
}

/// Headers on every admin response: no framing, no inline script, no
/// caching of pages, no referrer to link targets.
async fn security_headers(req: Request, next: Next) -> Response {
    let mut resp = next.run(req).await;
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; \
             object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'",
        ),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    if !h.contains_key(header::CACHE_CONTROL) {
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    resp
}

/// True when the `csrf` field of a urlencoded form body equals `expected`.
pub fn form_has_token(body: &[u8], expected: &str) -> bool {
    url::form_urlencoded::parse(body)
        .find(|(k, _)| k == "csrf")
        .is_some_and(|(_, v)| session::tokens_match(expected, &v))
}

/// True for a `multipart/form-data` body (a file upload).
fn is_multipart(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("multipart/form-data"))
}

/// True when the `csrf` part of a multipart body equals `expected`. The
/// forms send it first, so a large file after it is not read here.
async fn multipart_has_token(headers: &HeaderMap, body: Bytes, expected: &str) -> bool {
    let mut req = Request::new(Body::from(body));
    if let Some(ct) = headers.get(header::CONTENT_TYPE) {
        req.headers_mut().insert(header::CONTENT_TYPE, ct.clone());
    }
    let Ok(mut form) = Multipart::from_request(req, &()).await else {
        return false;
    };
    while let Ok(Some(field)) = form.next_field().await {
        if field.name() == Some("csrf") {
            return field
                .text()
                .await
                .is_ok_and(|v| session::tokens_match(expected, &v));
        }
    }
    false
}

/// Refuses every request but GET and HEAD whose form (urlencoded or
/// multipart) does not carry the session's CSRF token (or, for the sign-in form, the login cookie's).
async fn require_csrf(State(admin): State<AdminState>, req: Request, next: Next) -> Response {
    if matches!(*req.method(), Method::GET | Method::HEAD) {
        return next.run(req).await;
    }
    let expected = if req.uri().path() == "/admin/login" {
        session::cookie(req.headers(), session::LOGIN_COOKIE).map(str::to_string)
    } else {
        let token = session::cookie(req.headers(), session::SESSION_COOKIE);
        match token.and_then(|t| admin.sessions.get(t, Instant::now())) {
            Some(s) => Some(s.csrf),
            None => return Redirect::to("/admin/login").into_response(),
        }
    };
    let limit = body_limit(req.uri().path());
    let (parts, body) = req.into_parts();
    let bytes = match axum::body::to_bytes(body, limit).await {
        Ok(b) => b,
        Err(_) => {
            return AdminError::Status(
                StatusCode::PAYLOAD_TOO_LARGE,
                "The form is too large.".into(),
            )
            .into_response()
        }
    };
    let ok = match expected {
        Some(e) if is_multipart(&parts.headers) => {
            multipart_has_token(&parts.headers, bytes.clone(), &e).await
        }
        Some(e) => form_has_token(&bytes, &e),
        None => false,
    };
    if !ok {
        tracing::warn!(path = %parts.uri.path(), "admin form refused: missing or wrong CSRF token");
        return AdminError::Csrf.into_response();
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

/// A signed-in request: who, their session, and the public base of short URLs.
#[derive(Debug, Clone)]
pub struct Authed {
    pub user: String,
    /// The CSRF token every form on the page must carry.
    pub csrf: String,
    /// The session cookie's token (for flashes and sign-out).
    pub token: String,
    /// Public base of short URLs (`X-Shortlink-Base` or the configured one).
    pub base: String,
    /// The user's team, read with the account on every request.
    pub team_id: i64,
    /// The user's role, read with the account on every request.
    pub role: Role,
}

impl Authed {
    /// The API principal the user acts as: what their role allows in
    /// their team, named after the user so logs and `created_by` say who
    /// did it.
    pub fn principal(&self) -> Principal {
        Principal::user(&self.user, self.team_id, self.role)
    }

    /// 403 unless the user's role allows `scope` (a viewer changes no
    /// link; only admins manage keys, users and teams).
    pub fn may(&self, scope: crate::access::Scope) -> Result<(), AdminError> {
        self.principal()
            .require(scope)
            .map_err(|e| AdminError::Status(StatusCode::FORBIDDEN, e.to_string()))
    }
}

/// The public base of short URLs for this request.
pub fn base_for(app: &SharedApp, headers: &HeaderMap) -> String {
    base_url::for_request(headers, &app.config.base_url)
}

impl FromRequestParts<AdminState> for Authed {
    type Rejection = Response;

    async fn from_request_parts(
        parts: &mut Parts,
        admin: &AdminState,
    ) -> Result<Self, Self::Rejection> {
        let to_login = || Redirect::to("/admin/login").into_response();
        let token =
            session::cookie(&parts.headers, session::SESSION_COOKIE).ok_or_else(to_login)?;
        let s: SessionInfo = admin
            .sessions
            .get(token, Instant::now())
            .ok_or_else(to_login)?;
        // A password change (or a removed account) ends the session.
        let account = accounts::find(&admin.app.store, &s.user)
            .await
            .map_err(|e| AdminError::from(e).into_response())?;
        let Some(account) = account.filter(|a| a.version == s.account_version) else {
            admin.sessions.remove(token);
            tracing::info!(user = %s.user, "admin session ended: the account changed");
            return Err(to_login());
        };
        Ok(Authed {
            user: s.user,
            csrf: s.csrf,
            token: token.to_string(),
            base: base_for(&admin.app, &parts.headers),
            team_id: account.team_id,
            role: account.role,
        })
    }
}

/// A urlencoded form as name/value pairs (repeated names kept, in order).
pub struct FormFields(pub Vec<(String, String)>);

impl FormFields {
    /// The first value of `name`, trimmed; empty when absent.
    pub fn get(&self, name: &str) -> String {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.trim().to_string())
            .unwrap_or_default()
    }

    /// The first value of `name` as sent, untrimmed (passwords); empty
    /// when absent.
    pub fn raw(&self, name: &str) -> String {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    }

    /// Every value of `name`.
    pub fn all(&self, name: &str) -> Vec<String> {
        self.0
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.trim().to_string())
            .collect()
    }
}

impl<S: Send + Sync> FromRequest<S> for FormFields {
    type Rejection = Response;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = Bytes::from_request(req, state)
            .await
            .map_err(IntoResponse::into_response)?;
        Ok(FormFields(
            url::form_urlencoded::parse(&bytes).into_owned().collect(),
        ))
    }
}

/// Why an admin page could not be shown.
#[derive(Debug)]
pub enum AdminError {
    /// No such link, key or page.
    NotFound(String),
    /// The form lacked the CSRF token.
    Csrf,
    /// Any other status with a message.
    Status(StatusCode, String),
    /// Storage or another internal failure.
    Internal(String),
}

impl IntoResponse for AdminError {
    fn into_response(self) -> Response {
        let (status, title, message) = match self {
            AdminError::NotFound(m) => (StatusCode::NOT_FOUND, "Not found", m),
            AdminError::Csrf => (
                StatusCode::FORBIDDEN,
                "Form refused",
                "This form did not carry this session's security token (it may be \
                 from an old page, or from another site). Go back, reload the page \
                 and try again."
                    .to_string(),
            ),
            AdminError::Status(s, m) => (s, "Request refused", m),
            AdminError::Internal(m) => {
                tracing::error!(error = %m, "admin page failed");
                (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "Something went wrong",
                    format!("The daemon could not do this: {m}"),
                )
            }
        };
        (status, view::error_page(status, title, &message)).into_response()
    }
}

impl From<StoreError> for AdminError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound(what) => AdminError::NotFound(format!("{what} not found.")),
            e @ (StoreError::InUse(_) | StoreError::Conflict(_)) => {
                AdminError::Status(StatusCode::CONFLICT, e.to_string())
            }
            e => AdminError::Internal(e.to_string()),
        }
    }
}

impl From<LinkError> for AdminError {
    fn from(e: LinkError) -> Self {
        match e {
            LinkError::NotFound(code) => {
                AdminError::NotFound(format!("No link has the code \"{code}\"."))
            }
            LinkError::Store(e) => e.into(),
            e => AdminError::Status(StatusCode::UNPROCESSABLE_ENTITY, e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_tokens() {
        let t = session::random_token();
        assert!(form_has_token(format!("a=1&csrf={t}&b=2").as_bytes(), &t));
        assert!(!form_has_token(b"a=1&b=2", &t));
        assert!(!form_has_token(b"csrf=", &t));
        assert!(!form_has_token(format!("csrf={}", &t[1..]).as_bytes(), &t));
        assert!(!form_has_token(b"csrf=", ""));
    }

    #[tokio::test]
    async fn upload_tokens() {
        let t = session::random_token();
        let mut h = HeaderMap::new();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("multipart/form-data; boundary=XyZ"),
        );
        assert!(is_multipart(&h));
        let body = |token: &str| {
            Bytes::from(format!(
                "--XyZ\r\nContent-Disposition: form-data; name=\"csrf\"\r\n\r\n{token}\r\n\
                 --XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.csv\"\r\n\
                 Content-Type: text/csv\r\n\r\nurl\r\nhttps://e.com/\r\n--XyZ--\r\n"
            ))
        };
        assert!(multipart_has_token(&h, body(&t), &t).await);
        assert!(!multipart_has_token(&h, body("nope"), &t).await);
        assert!(!multipart_has_token(&h, Bytes::from_static(b"garbage"), &t).await);
        let form = HeaderMap::new();
        assert!(!is_multipart(&form));
        assert!(
            !multipart_has_token(&form, body(&t), &t).await,
            "no boundary"
        );
    }
}
