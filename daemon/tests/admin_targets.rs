//! The admin UI's link forms judge targets like the API: a blocked host in
//! any spelling, and a short URL of this deployment, are refused next to
//! the field, on create and on edit. They also carry the link's own
//! `forward_query`, which the detail page shows.

mod common;

use common::{http_unix, stderr, Daemon};
use serde_json::{json, Value};

const PASSWORD: &str = "correct horse battery";

/// A signed-in admin: the session cookie and the forms' CSRF token.
struct Admin {
    cookie: String,
    csrf: String,
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

fn csrf_of(page: &Value) -> String {
    let html = page.as_str().expect("an HTML page");
    let start = html.find("name=\"csrf\" value=\"").expect("a CSRF field") + 19;
    html[start..].split('"').next().unwrap().to_string()
}

fn form(fields: &[(&str, &str)]) -> Vec<u8> {
    url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(fields)
        .finish()
        .into_bytes()
}

async fn send(
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

async fn sign_in(d: &Daemon) -> Admin {
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
    /// Posts a link form; returns the status and the page (or redirect).
    async fn post(&self, d: &Daemon, path: &str, fields: &[(&str, &str)]) -> (u16, String) {
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

#[tokio::test]
async fn admin_forms_refuse_blocked_hosts_and_short_links() {
    let d = Daemon::start_with(&["--block-hosts", "evil.com"]).await;
    let admin = sign_in(&d).await;
    let short = d.create(json!({"url": "https://e.com/a"})).await["code"]
        .as_str()
        .unwrap()
        .to_string();
    let loop_url = format!("https://GO.example.net./{short}");
    for (field, url, says) in [
        (
            "url",
            "https://evil.com./",
            "\"evil.com\" is in the list of blocked",
        ),
        (
            "url",
            "https://user@A.EVIL.com:443/",
            "\"a.evil.com\" is in the list of blocked",
        ),
        (
            "targets.ios",
            "https://%65vil.com/",
            "\"evil.com\" is in the list of blocked",
        ),
        (
            "url",
            loop_url.as_str(),
            "is a short link of this deployment",
        ),
        (
            "targets.android",
            loop_url.as_str(),
            "is a short link of this deployment",
        ),
    ] {
        let url_field = if field == "url" {
            url
        } else {
            "https://ok.example/"
        };
        let mut fields = vec![("url", url_field)];
        if field != "url" {
            fields.push((field, url));
        }
        let (s, page) = admin.post(&d, "/admin/links", &fields).await;
        assert_eq!(s, 422, "admin create {field}={url}: {page}");
        assert!(page.contains(says), "admin create {field}={url}: {page}");
    }
    // Edit: the same refusals on an existing link, which stays as it was.
    let kept = d.create(json!({"url": "https://ok.example/kept"})).await;
    let code = kept["code"].as_str().unwrap();
    let path = format!("/admin/links/{code}");
    for (url, says) in [
        (
            "https://EVIL.COM./x",
            "\"evil.com\" is in the list of blocked",
        ),
        (loop_url.as_str(), "is a short link of this deployment"),
    ] {
        let (s, page) = admin.post(&d, &path, &[("url", url)]).await;
        assert_eq!(s, 422, "admin edit url={url}: {page}");
        assert!(page.contains(says), "admin edit url={url}: {page}");
    }
    let (_, got) = d.req("GET", &format!("/api/v1/links/{code}"), None).await;
    assert_eq!(got["url"], "https://ok.example/kept");
    // A good edit goes through.
    let (s, page) = admin
        .post(&d, &path, &[("url", "https://ok.example/new")])
        .await;
    assert_eq!(s, 303, "{page}");
}

#[tokio::test]
async fn admin_forms_set_and_show_forward_query() {
    let d = Daemon::start().await;
    let admin = sign_in(&d).await;
    let (s, page) = admin
        .post(
            &d,
            "/admin/links",
            &[
                ("url", "https://ok.example/fq"),
                ("alias", "admin-fq"),
                ("forward_query", "on"),
            ],
        )
        .await;
    assert_eq!(s, 303, "{page}");
    let (_, got) = d.req("GET", "/api/v1/links/admin-fq", None).await;
    assert_eq!(got["forward_query"], true);
    let get = |path: String| {
        let cookie = admin.cookie.clone();
        let d = &d;
        async move {
            let (s, _, v) = send(d, "GET", &path, &[("cookie", &cookie)], None).await;
            assert_eq!(s, 200, "{path}: {v}");
            v.as_str().unwrap().to_string()
        }
    };
    let detail = get("/admin/links/admin-fq".into()).await;
    assert!(
        detail.contains("id=\"forward-query\">appended to the target"),
        "{detail}"
    );
    assert!(
        detail.contains("<option value=\"on\" selected>"),
        "the edit form shows the stored choice: {detail}"
    );
    // Off, then back to nginx's choice; a made-up value is refused.
    let path = "/admin/links/admin-fq";
    let fields = |f: &'static str| {
        [
            ("url", "https://ok.example/fq"),
            ("alias", "admin-fq"),
            ("forward_query", f),
        ]
    };
    let (s, page) = admin.post(&d, path, &fields("off")).await;
    assert_eq!(s, 303, "{page}");
    let (_, got) = d.req("GET", "/api/v1/links/admin-fq", None).await;
    assert_eq!(got["forward_query"], false);
    let (s, page) = admin.post(&d, path, &fields("")).await;
    assert_eq!(s, 303, "{page}");
    let (_, got) = d.req("GET", "/api/v1/links/admin-fq", None).await;
    assert_eq!(got["forward_query"], Value::Null);
    assert!(get("/admin/links/admin-fq".into())
        .await
        .contains("nginx default (shortlink_forward_query)"));
    let (s, page) = admin.post(&d, path, &fields("sometimes")).await;
    assert_eq!(s, 422, "{page}");
    assert!(
        page.contains("forward_query must be on, off or empty"),
        "{page}"
    );
}

#[tokio::test]
async fn admin_forms_set_replace_and_remove_a_link_password() {
    let d = Daemon::start().await;
    let admin = sign_in(&d).await;
    // A refused password is reported next to its field and not shown back.
    let (s, page) = admin
        .post(
            &d,
            "/admin/links",
            &[("url", "https://ok.example/pw"), ("password", "tab\there")],
        )
        .await;
    assert_eq!(s, 422, "{page}");
    assert!(
        page.contains("password holds a control character"),
        "{page}"
    );
    assert!(
        !page.contains("tab\there") && !page.contains("tab&#9;here"),
        "{page}"
    );
    let (s, page) = admin
        .post(
            &d,
            "/admin/links",
            &[
                ("url", "https://ok.example/pw"),
                ("alias", "admin-pw"),
                ("password", "s3cret words"),
            ],
        )
        .await;
    assert_eq!(s, 303, "{page}");
    let (_, got) = d.req("GET", "/api/v1/links/admin-pw", None).await;
    assert_eq!(got["protected"], true, "{got}");
    let (_, _, edit) = send(
        &d,
        "GET",
        "/admin/links/admin-pw",
        &[("cookie", &admin.cookie)],
        None,
    )
    .await;
    let edit = edit.as_str().unwrap_or_default().to_string();
    assert!(edit.contains("This link is protected"), "{edit}");
    assert!(edit.contains("name=\"remove_password\""), "{edit}");
    assert!(!edit.contains("s3cret"), "{edit}");
    // Saving the form without a new password keeps it; the box removes it.
    let (s, page) = admin
        .post(
            &d,
            "/admin/links/admin-pw",
            &[("url", "https://ok.example/pw2"), ("alias", "admin-pw")],
        )
        .await;
    assert_eq!(s, 303, "{page}");
    let (_, got) = d.req("GET", "/api/v1/links/admin-pw", None).await;
    assert_eq!(
        (&got["protected"], &got["url"]),
        (&json!(true), &json!("https://ok.example/pw2"))
    );
    let (s, page) = admin
        .post(
            &d,
            "/admin/links/admin-pw",
            &[
                ("url", "https://ok.example/pw2"),
                ("alias", "admin-pw"),
                ("remove_password", "1"),
            ],
        )
        .await;
    assert_eq!(s, 303, "{page}");
    let (_, got) = d.req("GET", "/api/v1/links/admin-pw", None).await;
    assert_eq!(got["protected"], false, "{got}");
}

#[tokio::test]
async fn admin_forms_set_and_show_variants() {
    let d = Daemon::start().await;
    let admin = sign_in(&d).await;
    let path = "/admin/links";
    let fields = |v: &'static str| {
        [
            ("url", "https://ok.example/ab"),
            ("alias", "admin-ab"),
            ("variants", v),
        ]
    };
    let (s, page) = admin
        .post(
            &d,
            path,
            &fields("3=https://ok.example/a\n1=https://ok.example/b"),
        )
        .await;
    assert_eq!(s, 303, "{page}");
    let (_, got) = d.req("GET", "/api/v1/links/admin-ab", None).await;
    assert_eq!(
        got["variants"],
        json!([
            {"url": "https://ok.example/a", "weight": 3},
            {"url": "https://ok.example/b", "weight": 1},
        ])
    );
    let (s, _, detail) = send(
        &d,
        "GET",
        "/admin/links/admin-ab",
        &[("cookie", &admin.cookie)],
        None,
    )
    .await;
    assert_eq!(s, 200);
    let detail = detail.as_str().unwrap();
    assert!(
        detail.contains("Variant 1 (weight 3)") && detail.contains("3=https://ok.example/a"),
        "{detail}"
    );
    // A weight of 0 is refused next to the field; a bad line too.
    let edit = "/admin/links/admin-ab";
    let (s, page) = admin
        .post(&d, edit, &fields("0=https://ok.example/a"))
        .await;
    assert_ne!(s, 303);
    assert!(page.contains("variants[0].weight is 0"), "{page}");
    let (s, page) = admin.post(&d, edit, &fields("https://ok.example/a")).await;
    assert_ne!(s, 303);
    assert!(page.contains("is not WEIGHT=URL"), "{page}");
    // An empty field removes them.
    let (s, page) = admin.post(&d, edit, &fields("")).await;
    assert_eq!(s, 303, "{page}");
    let (_, got) = d.req("GET", "/api/v1/links/admin-ab", None).await;
    assert_eq!(got["variants"], json!([]));
}
