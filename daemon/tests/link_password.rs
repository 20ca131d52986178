//! Password-protected links through the API: the password is write-only
//! (stored as an argon2id hash that no read, list or export shows; views
//! say `protected`), an empty one is refused naming the field, an edit
//! replaces it and `null` removes it, and reading a link needs
//! `links:read`. Runs on SQLite and, under `with-pg`, on PostgreSQL.

mod common;

use common::Daemon;
use serde_json::{json, Value};

/// No reply, list or export carries the password or its hash.
fn assert_no_secret(text: &str, password: &str) {
    assert!(!text.contains(password), "the password leaked: {text}");
    assert!(!text.contains("$argon2"), "the hash leaked: {text}");
    assert!(!text.contains("password_hash"), "{text}");
}

#[tokio::test]
async fn a_password_is_stored_hashed_and_never_shown() {
    let d = Daemon::start().await;
    let v = d
        .create(json!({"url": "https://e.com/secret", "alias": "pw", "password": "open sesame"}))
        .await;
    assert_eq!(v["protected"], json!(true), "{v}");
    assert_no_secret(&v.to_string(), "open sesame");
    let (s, got) = d.req("GET", "/api/v1/links/pw", None).await;
    assert_eq!((s, &got["protected"]), (200, &json!(true)), "{got}");
    assert_no_secret(&got.to_string(), "open sesame");
    let (_, list) = d.req("GET", "/api/v1/links", None).await;
    assert_no_secret(&list.to_string(), "open sesame");
    let plain = d.create(json!({"url": "https://e.com/open"})).await;
    assert_eq!(plain["protected"], json!(false));

    // Export carries no hash either.
    let file = d.data_dir().join("export.csv");
    let out = d.cli(&["export", file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    assert_no_secret(&std::fs::read_to_string(&file).unwrap(), "open sesame");

    // The edit replaces it, null removes it, leaving it out keeps it.
    let (s, v) = d
        .req("PATCH", "/api/v1/links/pw", Some(json!({"tags": ["x"]})))
        .await;
    assert_eq!((s, &v["protected"]), (200, &json!(true)), "{v}");
    let (s, v) = d
        .req(
            "PATCH",
            "/api/v1/links/pw",
            Some(json!({"password": "new one"})),
        )
        .await;
    assert_eq!((s, &v["protected"]), (200, &json!(true)), "{v}");
    assert_no_secret(&v.to_string(), "new one");
    let (s, v) = d
        .req("PATCH", "/api/v1/links/pw", Some(json!({"password": null})))
        .await;
    assert_eq!((s, &v["protected"]), (200, &json!(false)), "{v}");
    let (_, v) = d.req("GET", "/api/v1/links/pw", None).await;
    assert_eq!(v["protected"], json!(false));
}

#[tokio::test]
async fn an_empty_password_is_refused_naming_the_field() {
    let d = Daemon::start().await;
    let check = |v: &Value| {
        assert_eq!(v["error"]["field"], json!("password"), "{v}");
        assert_eq!(v["error"]["code"], json!("invalid_password"), "{v}");
        assert!(v.to_string().contains("password is empty"), "{v}");
    };
    let (s, v) = d
        .req(
            "POST",
            "/api/v1/links",
            Some(json!({"url": "https://e.com/", "password": ""})),
        )
        .await;
    assert_eq!(s, 422, "{v}");
    check(&v);
    d.create(json!({"url": "https://e.com/", "alias": "e1"}))
        .await;
    let (s, v) = d
        .req("PATCH", "/api/v1/links/e1", Some(json!({"password": ""})))
        .await;
    assert_eq!(s, 422, "{v}");
    check(&v);
    let (_, v) = d.req("GET", "/api/v1/links/e1", None).await;
    assert_eq!(
        v["protected"],
        json!(false),
        "a refused edit changed nothing"
    );
    let (s, v) = d
        .req(
            "POST",
            "/api/v1/links/batch",
            Some(json!({"links": [{"url": "https://e.com/a", "password": ""},
                                  {"url": "https://e.com/b", "password": "fine"}]})),
        )
        .await;
    assert!(s == 200 || s == 207, "{s} {v}");
    let text = v.to_string();
    assert!(text.contains("invalid_password"), "{text}");
    assert!(text.contains("\"protected\":true"), "{text}");
}

#[tokio::test]
async fn protected_links_are_never_deduplicated_and_reads_need_links_read() {
    let d = Daemon::start().await;
    let open = d
        .create(json!({"url": "https://e.com/same", "dedupe": true}))
        .await;
    let locked = d
        .create(json!({"url": "https://e.com/same", "dedupe": true, "password": "pw1"}))
        .await;
    assert_ne!(open["id"], locked["id"], "a protected link is a new link");
    assert_eq!(locked["protected"], json!(true));
    let writer = d.key_with("links:write").await;
    let path = format!("/api/v1/links/{}", locked["code"].as_str().unwrap());
    let (s, _, v) = d
        .req_with("GET", &path, &[("x-api-key", &writer)], None)
        .await;
    assert_eq!(s, 403, "{v}");
    assert!(v.to_string().contains("links:read"), "{v}");
    let reader = d.key_with("links:read").await;
    let (s, _, v) = d
        .req_with("GET", &path, &[("x-api-key", &reader)], None)
        .await;
    assert_eq!((s, &v["protected"]), (200, &json!(true)), "{v}");
    assert_no_secret(&v.to_string(), "pw1");
}

#[tokio::test]
async fn the_cli_takes_the_password_from_a_file_or_stdin_never_the_command_line() {
    let d = Daemon::start().await;
    let file = d.data_dir().join("pw.txt");
    std::fs::write(&file, "from a file\nignored second line\n").unwrap();
    let out = d.cli(&[
        "link",
        "create",
        "https://e.com/cli",
        "--alias",
        "clipw",
        "--password-file",
        file.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let (_, v) = d.req("GET", "/api/v1/links/clipw", None).await;
    assert_eq!(v["protected"], json!(true), "{v}");
    let out = d.cli(&["link", "update", "clipw", "--no-password"]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let (_, v) = d.req("GET", "/api/v1/links/clipw", None).await;
    assert_eq!(v["protected"], json!(false), "{v}");
    let out = d.cli_stdin(
        &["link", "update", "clipw", "--password-file", "-"],
        "typed in\n",
    );
    assert!(out.status.success(), "{}", common::stderr(&out));
    let (_, v) = d.req("GET", "/api/v1/links/clipw", None).await;
    assert_eq!(v["protected"], json!(true), "{v}");
    // No option takes the password itself.
    let out = d.cli(&["link", "create", "https://e.com/x", "--password", "hunter2"]);
    assert!(!out.status.success());
    let empty = d.data_dir().join("empty.txt");
    std::fs::write(&empty, "\n").unwrap();
    let out = d.cli(&[
        "link",
        "create",
        "https://e.com/y",
        "--password-file",
        empty.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(
        common::stderr(&out).contains("first line is empty"),
        "{}",
        common::stderr(&out)
    );
}

#[tokio::test]
async fn the_openapi_document_states_the_password_rules() {
    let d = Daemon::start().await;
    let (s, doc) = d.req("GET", "/api/v1/openapi.json", None).await;
    assert_eq!(s, 200);
    for shape in ["CreateLink", "UpdateLink"] {
        let p = &doc["components"]["schemas"][shape]["properties"]["password"];
        assert_eq!(p["writeOnly"], json!(true), "{shape}: {p}");
        assert_eq!(p["minLength"], json!(1), "{shape}: {p}");
        assert_eq!(p["maxLength"], json!(1024), "{shape}: {p}");
        let pattern = p["pattern"].as_str().unwrap_or_default();
        assert!(pattern.contains("\\u0000-\\u001F"), "{shape}: {p}");
    }
    let view = &doc["components"]["schemas"]["LinkView"]["properties"];
    assert_eq!(view["protected"]["type"], json!("boolean"), "{view}");
    assert!(view.get("password").is_none() && view.get("password_hash").is_none());
}
