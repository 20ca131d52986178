//! Sign-in and sign-out.

use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use maud::html;

use super::session::{self, LOGIN_COOKIE, SESSION_COOKIE};
use super::view::{self, FieldErrors, Nav};
use super::{base_for, AdminError, AdminState, Authed, FormFields};
use crate::users::{self, ClientAddr, SignInError, UserError, BUSY_RETRY};

/// Lifetime of the sign-in form's CSRF cookie, in seconds.
const LOGIN_COOKIE_AGE: u64 = 3600;

impl From<UserError> for AdminError {
    fn from(e: UserError) -> Self {
        match e {
            UserError::Store(e) => e.into(),
            UserError::Hashing(m) => AdminError::Internal(m),
            UserError::Denied(e) => AdminError::Status(StatusCode::FORBIDDEN, e.to_string()),
            e => AdminError::Status(StatusCode::UNPROCESSABLE_ENTITY, e.to_string()),
        }
    }
}

fn secure(admin: &AdminState, headers: &HeaderMap) -> bool {
    session::is_secure(headers, &base_for(&admin.app, headers))
}

fn page(csrf: &str, name: &str, error: Option<&str>) -> view::Page {
    let errors = FieldErrors::new();
    view::layout(
        "Sign in",
        None,
        Nav::None,
        None,
        html! {
            div.card.narrow {
                h1 { "Sign in" }
                @if let Some(e) = error {
                    p.error role="alert" id="login-error" { (e) }
                }
                form method="post" action="/admin/login" id="login" {
                    input type="hidden" name="csrf" value=(csrf);
                    (view::text_input("User name", "name", name, "text", None, &errors))
                    (view::text_input("Password", "password", "", "password", None, &errors))
                    button.primary type="submit" { "Sign in" }
                }
                p.hint { "Users are added on the server: " code { "shortlinkd user add NAME" } }
            }
        },
    )
}

/// GET `/admin/login`: the form, with a fresh double-submit token.
pub async fn form(State(admin): State<AdminState>, headers: HeaderMap) -> Response {
    if let Some(t) = session::cookie(&headers, SESSION_COOKIE) {
        if admin.sessions.get(t, Instant::now()).is_some() {
            return Redirect::to("/admin/links").into_response();
        }
    }
    let csrf = session::random_token();
    let cookie = session::set_cookie(
        LOGIN_COOKIE,
        &csrf,
        Some(LOGIN_COOKIE_AGE),
        secure(&admin, &headers),
    );
    ([(header::SET_COOKIE, cookie)], page(&csrf, "", None)).into_response()
}

/// `wait` in whole seconds, rounded up, at least one.
fn retry_secs(wait: Duration) -> u64 {
    (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1)
}

/// A sign-in refused for now: 429 with `Retry-After` and the form again
/// with `msg`.
fn too_many(csrf: &str, name: &str, wait: Duration, msg: &str) -> Response {
    (
        StatusCode::TOO_MANY_REQUESTS,
        [(header::RETRY_AFTER, retry_secs(wait).to_string())],
        page(csrf, name, Some(msg)),
    )
        .into_response()
}

/// POST `/admin/login` (its CSRF token was checked by the middleware).
/// `client` is the address the lock-out counts this attempt under.
pub async fn submit(
    State(admin): State<AdminState>,
    client: ClientAddr,
    headers: HeaderMap,
    form: FormFields,
) -> Result<Response, AdminError> {
    let name = form.get("name");
    let password = form
        .0
        .iter()
        .find(|(k, _)| k == "password")
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    let csrf = form.get("csrf");

    let signed_in =
        users::sign_in(&admin.app.store, &admin.throttle, &name, password, &client).await;
    let user = match signed_in {
        Ok(user) => user,
        Err(SignInError::LockedOut(wait)) => {
            let secs = retry_secs(wait);
            let msg = format!("Too many failed sign-ins. Try again in {secs} seconds.");
            return Ok(too_many(&csrf, &name, wait, &msg));
        }
        Err(SignInError::Busy) => {
            let msg = "The server is busy checking other sign-ins. Try again in a second.";
            return Ok(too_many(&csrf, &name, BUSY_RETRY, msg));
        }
        Err(SignInError::Rejected { locked_for }) => {
            let msg = match locked_for {
                Some(d) => format!(
                    "Wrong user name or password. Too many failures: sign-in is locked for {} seconds.",
                    d.as_secs()
                ),
                None => "Wrong user name or password.".to_string(),
            };
            return Ok((StatusCode::UNAUTHORIZED, page(&csrf, &name, Some(&msg))).into_response());
        }
        Err(SignInError::User(e)) => return Err(e.into()),
    };
    let token = admin
        .sessions
        .create(&user.name, user.version, Instant::now());
    let secure = secure(&admin, &headers);
    tracing::info!(user = %user.name, "admin signed in");
    let mut resp = Redirect::to("/admin/links").into_response();
    let h = resp.headers_mut();
    h.append(
        header::SET_COOKIE,
        session::set_cookie(SESSION_COOKIE, &token, None, secure)
            .parse()
            .expect("cookie header"),
    );
    h.append(
        header::SET_COOKIE,
        session::set_cookie(LOGIN_COOKIE, "", Some(0), secure)
            .parse()
            .expect("cookie header"),
    );
    Ok(resp)
}

/// POST `/admin/logout`: ends the session.
pub async fn logout(State(admin): State<AdminState>, headers: HeaderMap, auth: Authed) -> Response {
    admin.sessions.remove(&auth.token);
    tracing::info!(user = %auth.user, "admin signed out");
    let cookie = session::set_cookie(SESSION_COOKIE, "", Some(0), secure(&admin, &headers));
    ([(header::SET_COOKIE, cookie)], Redirect::to("/admin/login")).into_response()
}
