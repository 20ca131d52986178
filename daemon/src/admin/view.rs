//! The page frame and small pieces every admin page uses.

use std::collections::HashMap;

use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use maud::{html, Markup, PreEscaped, DOCTYPE};

use super::session::Flash;
use super::Authed;

/// Field name → message, shown next to the field.
pub type FieldErrors = HashMap<String, String>;

/// A finished page.
pub struct Page(pub Markup);

impl IntoResponse for Page {
    fn into_response(self) -> Response {
        Html(self.0.into_string()).into_response()
    }
}

/// Which navigation entry is current.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nav {
    Dashboard,
    Links,
    New,
    Keys,
    Users,
    Takedowns,
    Teams,
    Webhooks,
    None,
}

/// The frame: head, navigation with the user and sign-out, the one-time
/// flash, then `body`.
pub fn layout(
    title: &str,
    auth: Option<&Authed>,
    nav: Nav,
    flash: Option<&Flash>,
    body: Markup,
) -> Page {
    Page(html! {
        (DOCTYPE)
        html lang="en" {
            (head(title, true))
            body {
                header.top {
                    a.brand href="/admin/links" { "shortlink" }
                    @if let Some(a) = auth {
                        nav {
                            a.current[nav == Nav::Dashboard] href="/admin/dashboard" id="nav-dashboard" { "Dashboard" }
                            a.current[nav == Nav::Links] href="/admin/links" { "Links" }
                            @if a.role != crate::access::Role::Viewer {
                                a.current[nav == Nav::New] href="/admin/links/new" { "New link" }
                            }
                            a.current[nav == Nav::Webhooks] href="/admin/webhooks" id="nav-webhooks" { "Webhooks" }
                            @if a.role == crate::access::Role::Admin {
                                a.current[nav == Nav::Keys] href="/admin/keys" { "API keys" }
                                a.current[nav == Nav::Users] href="/admin/users" id="nav-users" { "Users" }
                                a.current[nav == Nav::Teams] href="/admin/teams" id="nav-teams" { "Teams" }
                                a.current[nav == Nav::Takedowns] href="/admin/takedowns" id="nav-takedowns" { "Takedowns" }
                            }
                        }
                        form.signout method="post" action="/admin/logout" {
                            (csrf_field(a))
                            span.user { (a.user) }
                            button.link type="submit" id="sign-out" { "Sign out" }
                        }
                    }
                }
                main {
                    @if let Some(f) = flash {
                        div.flash role="status" id="flash" {
                            p { (f.title) }
                            @if let Some(secret) = &f.secret {
                                p.hint { "Copy it now: it is not stored and will not be shown again." }
                                div.copyrow {
                                    input.secret id="secret" type="text" readonly value=(secret);
                                    button type="button" data-copy="#secret" { "Copy" }
                                }
                            }
                        }
                    }
                    (body)
                }
            }
        }
    })
}

/// Every page's `<head>`: one place for the viewport meta that lets a
/// phone lay the page out at its own width, and the stylesheet. Error
/// pages carry no script.
fn head(title: &str, script: bool) -> Markup {
    html! {
        head {
            meta charset="utf-8";
            meta name="viewport" content="width=device-width, initial-scale=1";
            title { (title) " · shortlink admin" }
            link rel="stylesheet" href="/admin/assets/admin.css";
            @if script { script src="/admin/assets/admin.js" defer {} }
        }
    }
}

/// The hidden CSRF field every form carries.
pub fn csrf_field(a: &Authed) -> Markup {
    html! { input type="hidden" name="csrf" value=(a.csrf); }
}

/// The error message under a field, if it has one.
pub fn field_error(errors: &FieldErrors, field: &str) -> Markup {
    html! {
        @if let Some(m) = errors.get(field) {
            p.field-error id={ "err-" (field.replace('.', "-")) } { (m) }
        }
    }
}

/// A labelled text input with its error.
pub fn text_input(
    label: &str,
    name: &str,
    value: &str,
    kind: &str,
    hint: Option<&str>,
    errors: &FieldErrors,
) -> Markup {
    let id = format!("f-{}", name.replace('.', "-"));
    html! {
        div.field.invalid[errors.contains_key(name)] {
            label for=(id) { (label) }
            input id=(id) name=(name) type=(kind) value=(value)
                aria-invalid=[errors.contains_key(name).then_some("true")];
            @if let Some(h) = hint { p.hint { (h) } }
            (field_error(errors, name))
        }
    }
}

/// A page for errors, with a way back.
pub fn error_page(status: StatusCode, title: &str, message: &str) -> Html<String> {
    let page = html! {
        (DOCTYPE)
        html lang="en" {
            (head(title, false))
            body {
                header.top { a.brand href="/admin/links" { "shortlink" } }
                main {
                    h1 { (title) }
                    p.error id="error" { (message) }
                    p.hint { "HTTP " (status.as_u16()) }
                    p { a href="/admin/links" { "Back to the links" } }
                }
            }
        }
    };
    Html(page.into_string())
}

/// `2026-01-31 14:05 UTC`.
pub fn time(t: i64) -> String {
    match time::OffsetDateTime::from_unix_timestamp(t) {
        Ok(d) => format!(
            "{:04}-{:02}-{:02} {:02}:{:02} UTC",
            d.year(),
            d.month() as u8,
            d.day(),
            d.hour(),
            d.minute()
        ),
        Err(_) => t.to_string(),
    }
}

/// The value of a `datetime-local` input (UTC): `2026-01-31T14:05`.
pub fn datetime_local(t: i64) -> String {
    match time::OffsetDateTime::from_unix_timestamp(t) {
        Ok(d) => format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}",
            d.year(),
            d.month() as u8,
            d.day(),
            d.hour(),
            d.minute()
        ),
        Err(_) => String::new(),
    }
}

/// Turns a `datetime-local` value (taken as UTC) into RFC 3339, leaving
/// anything else (RFC 3339 with an offset, Unix seconds) for the link rules
/// to judge.
pub fn local_to_rfc3339(v: &str) -> String {
    let v = v.trim();
    let b = v.as_bytes();
    let looks_local = b.len() >= 16
        && b.get(10) == Some(&b'T')
        && !v.ends_with('Z')
        && !v[11..].contains(['+', '-']);
    match (looks_local, b.len()) {
        (true, 16) => format!("{v}:00Z"),
        (true, _) => format!("{v}Z"),
        _ => v.to_string(),
    }
}

/// A state badge: active, taken down, disabled, expired or exhausted. The
/// class keeps the state's name (`state-taken_down`); the text reads as words.
pub fn state_badge(state: &str) -> Markup {
    html! { span class={ "badge state-" (state) } { (state.replace('_', " ")) } }
}

/// An SVG made on the server, placed inline.
pub fn raw_svg(svg: String) -> Markup {
    PreEscaped(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn badges_and_heads() {
        assert_eq!(
            state_badge("taken_down").into_string(),
            r#"<span class="badge state-taken_down">taken down</span>"#
        );
        let page = error_page(StatusCode::NOT_FOUND, "Not found", "gone").0;
        assert!(page
            .contains(r#"<meta name="viewport" content="width=device-width, initial-scale=1">"#));
        assert!(!page.contains("admin.js"));
    }

    #[test]
    fn times() {
        assert_eq!(time(0), "1970-01-01 00:00 UTC");
        assert_eq!(datetime_local(1_900_000_000), "2030-03-17T17:46");
        assert_eq!(local_to_rfc3339("2030-03-17T17:46"), "2030-03-17T17:46:00Z");
        assert_eq!(
            local_to_rfc3339("2030-03-17T17:46:10"),
            "2030-03-17T17:46:10Z"
        );
        assert_eq!(
            local_to_rfc3339("2030-03-17T17:46:00+02:00"),
            "2030-03-17T17:46:00+02:00"
        );
        assert_eq!(local_to_rfc3339("1900000000"), "1900000000");
        assert_eq!(
            crate::links::parse_time(&local_to_rfc3339(&datetime_local(1_900_000_000))),
            Ok(1_899_999_960)
        );
    }
}
