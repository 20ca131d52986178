//! A link's title: set and returned by the API (create, patch, get,
//! list), refused naming `title` when it is too long, searched by `q`,
//! set with the CLI and shown by `link list`, set in the admin form and
//! shown on the detail page, and carried by `export` into an `import`.
//! Runs on SQLite, and on PostgreSQL under `with-pg`.

mod common;

use common::admin::{send, sign_in};
use common::{stderr, stdout, Daemon};
use serde_json::{json, Value};

#[tokio::test]
async fn the_api_sets_changes_clears_and_searches_titles() {
    let d = Daemon::start().await;
    let made = d
        .create(json!({"url": "https://e.com/spring", "alias": "spring", "title": "  Spring sale 2024 "}))
        .await;
    assert_eq!(made["title"], "Spring sale 2024");
    d.create(json!({"url": "https://e.com/other"})).await;
    let (s, got) = d.req("GET", "/api/v1/links/spring", None).await;
    assert_eq!((s, &got["title"]), (200, &json!("Spring sale 2024")));

    // `q` finds the title (and nothing else matches "sale").
    let (s, list) = d.req("GET", "/api/v1/links?q=sale", None).await;
    assert_eq!(s, 200, "{list}");
    let links = list["links"].as_array().unwrap();
    assert_eq!(links.len(), 1, "{list}");
    assert_eq!(links[0]["title"], "Spring sale 2024");

    let (s, v) = d
        .req(
            "PATCH",
            "/api/v1/links/spring",
            Some(json!({"title": "Autumn"})),
        )
        .await;
    assert_eq!((s, &v["title"]), (200, &json!("Autumn")), "{v}");
    let (_, list) = d.req("GET", "/api/v1/links?q=sale", None).await;
    assert_eq!(list["links"].as_array().unwrap().len(), 0, "{list}");
    // Another edit leaves it be.
    let (_, v) = d
        .req(
            "PATCH",
            "/api/v1/links/spring",
            Some(json!({"tags": ["x"]})),
        )
        .await;
    assert_eq!(v["title"], "Autumn");

    let long = "x".repeat(513);
    let (s, v) = d
        .req(
            "PATCH",
            "/api/v1/links/spring",
            Some(json!({"title": long})),
        )
        .await;
    assert_eq!(s, 422, "{v}");
    assert!(v.to_string().contains("title"), "{v}");
    let (s, v) = d
        .req(
            "POST",
            "/api/v1/links",
            Some(json!({"url": "https://e.com/t", "title": "a\u{7}b"})),
        )
        .await;
    assert_eq!(s, 422, "{v}");
    assert!(v.to_string().contains("control character"), "{v}");

    let (s, v) = d
        .req(
            "PATCH",
            "/api/v1/links/spring",
            Some(json!({"title": null})),
        )
        .await;
    assert_eq!((s, &v["title"]), (200, &Value::Null), "{v}");
}

#[tokio::test]
async fn the_cli_sets_lists_and_exports_titles() {
    let d = Daemon::start().await;
    let out = d.cli(&[
        "link",
        "create",
        "https://e.com/a",
        "--alias",
        "launch",
        "--title",
        "Launch post",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let list = stdout(&d.cli(&["link", "list"]));
    assert!(list.contains("\tLaunch post\n"), "{list}");
    let found = stdout(&d.cli(&["link", "list", "-q", "Launch"]));
    assert_eq!(found.lines().count(), 2, "{found}");

    let out = d.cli(&["export", "-"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let csv = stdout(&out);
    assert!(csv.lines().next().unwrap().contains(",title,"), "{csv}");
    assert!(csv.contains(",Launch post"), "{csv}");

    let out = d.cli(&["link", "update", "launch", "--no-title"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (_, v) = d.req("GET", "/api/v1/links/launch", None).await;
    assert_eq!(v["title"], Value::Null);

    // The export brings the title back into another daemon.
    let other = Daemon::start().await;
    let file = other.data_dir().join("export.csv");
    std::fs::write(&file, &csv).unwrap();
    let out = other.cli(&["import", file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (_, v) = other.req("GET", "/api/v1/links/launch", None).await;
    assert_eq!(v["title"], "Launch post");
}

#[tokio::test]
async fn the_admin_form_sets_and_the_detail_page_shows_the_title() {
    let d = Daemon::start().await;
    let admin = sign_in(&d).await;
    let (s, page) = admin
        .post(
            &d,
            "/admin/links",
            &[
                ("url", "https://ok.example/t"),
                ("alias", "titled"),
                ("title", "Newsletter <May>"),
            ],
        )
        .await;
    assert_eq!(s, 303, "{page}");
    let (_, v) = d.req("GET", "/api/v1/links/titled", None).await;
    assert_eq!(v["title"], "Newsletter <May>");
    let (s, _, detail) = send(
        &d,
        "GET",
        "/admin/links/titled",
        &[("cookie", &admin.cookie)],
        None,
    )
    .await;
    assert_eq!(s, 200);
    let detail = detail.as_str().unwrap();
    assert!(
        detail.contains("id=\"title\">Newsletter &lt;May&gt;"),
        "{detail}"
    );
    // Cleared from the edit form.
    let (s, page) = admin
        .post(
            &d,
            "/admin/links/titled",
            &[
                ("url", "https://ok.example/t"),
                ("alias", "titled"),
                ("title", ""),
            ],
        )
        .await;
    assert_eq!(s, 303, "{page}");
    let (_, v) = d.req("GET", "/api/v1/links/titled", None).await;
    assert_eq!(v["title"], Value::Null);
}
