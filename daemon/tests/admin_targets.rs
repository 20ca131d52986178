//! The admin UI's link forms judge targets like the API: a blocked host in
//! any spelling, and a short URL of this deployment, are refused next to
//! the field, on create and on edit. They also carry the link's own
//! `forward_query`, which the detail page shows.

mod common;

use common::admin::{send, sign_in};
use common::Daemon;
use serde_json::{json, Value};

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
