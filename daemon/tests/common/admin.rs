//! A signed-in admin UI session over the daemon's API socket: the session
//! cookie, the forms' CSRF token, and form posts.

use serde_json::Value;

use super::{http_unix, stderr, Daemon};

const PASSWORD: &str = "correct horse battery";

/// A signed-in admin: the session cookie and the forms' CSRF token.
pub struct Admin {
    pub cookie: String,
    pub csrf: String,
}

fn cookie_value(h: &axum::http::HeaderMap, name: &str) -> String {
    h.get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|v| v.strip_prefix(&format!("{name}=")))
        .and_then(|v| v.split(';').next())
        .unwrap_or_else(|| panic!("no {name} cookie in {h:?}"))
        .to_string()
}

pub fn csrf_of(page: &Value) -> String {
    let html = page.as_str().expect("an HTML page");
    let start = html.find("name=\"csrf\" value=\"").expect("a CSRF field") + 19;
    html[start..].split('"').next().unwrap().to_string()
}

pub fn form(fields: &[(&str, &str)]) -> Vec<u8> {
    url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(fields)
        .finish()
        .into_bytes()
}

pub async fn send(
    d: &Daemon,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<Vec<u8>>,
) -> (u16, axum::http::HeaderMap, Value) {
    http_unix(&d.api_path(), method, path, headers, body)
        .await
        .unwrap()
}

pub async fn sign_in(d: &Daemon) -> Admin {
    let out = d.cli_stdin(&["user", "add", "alice"], &format!("{PASSWORD}\n"));
    assert!(out.status.success(), "user add: {}", stderr(&out));
    let (_, h, page) = send(d, "GET", "/admin/login", &[], None).await;
    let login = format!("shortlink_login={}", cookie_value(&h, "shortlink_login"));
    let body = form(&[
        ("csrf", &csrf_of(&page)),
        ("name", "alice"),
        ("password", PASSWORD),
    ]);
    let (s, h, v) = send(d, "POST", "/admin/login", &[("cookie", &login)], Some(body)).await;
    assert_eq!(s, 303, "sign-in: {v}");
    let cookie = format!(
        "shortlink_session={}",
        cookie_value(&h, "shortlink_session")
    );
    let (_, _, page) = send(d, "GET", "/admin/links/new", &[("cookie", &cookie)], None).await;
    Admin {
        csrf: csrf_of(&page),
        cookie,
    }
}

impl Admin {
    /// Gets an admin page; returns the status and the page.
    pub async fn get(&self, d: &Daemon, path: &str) -> (u16, String) {
        let (s, _, v) = send(d, "GET", path, &[("cookie", &self.cookie)], None).await;
        let text = match v {
            Value::String(s) => s,
            other => other.to_string(),
        };
        (s, text)
    }

    /// Posts a link form; returns the status and the page (or redirect).
    pub async fn post(&self, d: &Daemon, path: &str, fields: &[(&str, &str)]) -> (u16, String) {
        let mut all = vec![("csrf", self.csrf.as_str())];
        all.extend_from_slice(fields);
        let (s, h, v) = send(
            d,
            "POST",
            path,
            &[
                ("cookie", &self.cookie),
                ("x-shortlink-base", "https://go.example.net"),
            ],
            Some(form(&all)),
        )
        .await;
        let text = match v {
            Value::String(s) => s.replace("&quot;", "\""),
            other => format!("{other} location={:?}", h.get("location")),
        };
        (s, text)
    }
}
