//! Takedowns through the real daemon (on the suite's store: SQLite, or
//! PostgreSQL under `with-pg`): a host's links and a creator's switched
//! off in one call and told to the edge, the record, the undo, the errors,
//! the CLI, and allow/block lists that changed applied to stored links at
//! start-up.

mod common;

use std::time::Duration;

use common::{stderr, stdout, Daemon};
use serde_json::{json, Value};
use shortlink_core::ipc::{Event, LookupResult, Reply};

fn found(r: &LookupResult) -> bool {
    matches!(r, LookupResult::Found(_))
}

/// The invalidations pushed to a subscribed worker until `want` arrived.
async fn invalidated(ipc: &mut common::Ipc, want: usize) -> Vec<String> {
    let mut codes = Vec::new();
    while codes.len() < want {
        match ipc.recv_timeout(Duration::from_secs(5)).await {
            Ok(Some(Reply::Event(Event::Invalidate { code }))) => codes.push(code),
            Ok(Some(_)) => {}
            other => panic!("expected {want} invalidations, got {codes:?} then {other:?}"),
        }
    }
    codes.sort();
    codes
}

#[tokio::test]
async fn a_host_takedown_reaches_the_edge_and_its_undo_brings_the_links_back() {
    let d = Daemon::start().await;
    let a = d
        .create(json!({"url": "https://evil.example/1", "alias": "ev1"}))
        .await;
    let b = d.create(json!({"url": "https://x.Evil.example/2"})).await;
    let good = d
        .create(json!({"url": "https://notevil.example/?to=evil.example"}))
        .await;
    let code = |v: &Value| v["code"].as_str().unwrap().to_string();
    let mut ipc = d.ipc().await;
    ipc.subscribe(1).await;
    for c in [code(&a), "ev1".into(), code(&b), code(&good)] {
        assert!(found(&ipc.lookup(2, &c).await), "{c}");
    }

    let (s, t) = d
        .req(
            "POST",
            "/api/v1/takedowns",
            Some(json!({"host": "*.EVIL.example.", "reason": "phishing kit"})),
        )
        .await;
    assert_eq!(s, 201, "{t}");
    assert_eq!(
        (&t["kind"], &t["selector"], &t["matched"], &t["disabled"]),
        (&json!("host"), &json!("evil.example"), &json!(2), &json!(2)),
        "{t}"
    );
    assert!(t["created_by"].as_str().unwrap().starts_with("key:"), "{t}");
    assert_eq!(t["undone_at"], Value::Null);
    // The subscribed worker was told before the reply: both generated
    // codes and the alias.
    let told = invalidated(&mut ipc, 3).await;
    assert!(
        told.contains(&"ev1".into()) && told.contains(&code(&b)),
        "{told:?}"
    );
    for c in [code(&a), "ev1".into(), code(&b)] {
        assert_eq!(ipc.lookup(3, &c).await, LookupResult::Gone, "{c}");
    }
    assert!(found(&ipc.lookup(4, &code(&good)).await));
    let (_, link) = d.req("GET", "/api/v1/links/ev1", None).await;
    assert_eq!(link["taken_down"], true, "{link}");

    let id = t["id"].as_i64().unwrap();
    let (s, listed) = d.req("GET", "/api/v1/takedowns", None).await;
    assert_eq!(s, 200);
    assert_eq!(listed["takedowns"][0]["id"], id, "{listed}");
    let (s, one) = d.req("GET", &format!("/api/v1/takedowns/{id}"), None).await;
    assert_eq!((s, &one["reason"]), (200, &json!("phishing kit")));

    let (s, u) = d
        .req("POST", &format!("/api/v1/takedowns/{id}/undo"), None)
        .await;
    assert_eq!((s, &u["restored"]), (200, &json!(2)), "{u}");
    assert!(u["undone_at"].is_string(), "{u}");
    assert_eq!(invalidated(&mut ipc, 3).await, told);
    for c in [code(&a), "ev1".into(), code(&b)] {
        assert!(found(&ipc.lookup(5, &c).await), "{c}");
    }
    let (s, again) = d
        .req("POST", &format!("/api/v1/takedowns/{id}/undo"), None)
        .await;
    assert_eq!(
        (s, &again["code"]),
        (409, &json!("already_undone")),
        "{again}"
    );
}

#[tokio::test]
async fn bad_takedowns_are_refused_with_the_field_named() {
    let d = Daemon::start().await;
    let cases = [
        (
            json!({"host": "a.example", "creator": "cli", "reason": "x"}),
            "invalid_target",
        ),
        (json!({"reason": "x"}), "invalid_target"),
        (
            json!({"host": "a.example/path", "reason": "x"}),
            "invalid_host",
        ),
        (json!({"creator": "bob", "reason": "x"}), "invalid_creator"),
        (
            json!({"host": "a.example", "reason": "  "}),
            "invalid_reason",
        ),
    ];
    for (body, want) in cases {
        let (s, e) = d.req("POST", "/api/v1/takedowns", Some(body.clone())).await;
        assert_eq!((s, e["code"].as_str()), (422, Some(want)), "{body}: {e}");
    }
    let (_, e) = d
        .req(
            "POST",
            "/api/v1/takedowns",
            Some(json!({"host": "a.example/path", "reason": "x"})),
        )
        .await;
    assert!(
        e["detail"].as_str().unwrap().contains("a.example/path"),
        "{e}"
    );
    let (s, _) = d.req("GET", "/api/v1/takedowns/999", None).await;
    assert_eq!(s, 404);
    let (s, _) = d.req("POST", "/api/v1/takedowns/999/undo", None).await;
    assert_eq!(s, 404);
    let (s, e) = d.req("GET", "/api/v1/takedowns?limit=0", None).await;
    assert_eq!((s, e["code"].as_str()), (400, Some("invalid_query")), "{e}");
    // Only an admin takes links down.
    let out = d.cli(&[
        "key",
        "create",
        "--name",
        "w",
        "--scopes",
        "links:write,links:read",
    ]);
    let writer = stdout(&out).trim().to_string();
    let (s, _, e) = d
        .req_with(
            "POST",
            "/api/v1/takedowns",
            &[("x-api-key", &writer)],
            Some(json!({"host": "a.example", "reason": "x"})),
        )
        .await;
    assert_eq!(s, 403, "{e}");
    let (s, _, _) = d
        .req_with("GET", "/api/v1/takedowns", &[("x-api-key", &writer)], None)
        .await;
    assert_eq!(s, 403);
}

#[tokio::test]
async fn a_creator_takedown_takes_only_that_creators_links_from_the_cli() {
    let d = Daemon::start().await;
    let out = d.cli(&[
        "key",
        "create",
        "--name",
        "spammer",
        "--scopes",
        "links:write",
    ]);
    let spammer = stdout(&out).trim().to_string();
    let (_, keys) = d.req("GET", "/api/v1/keys", None).await;
    let key_id = keys["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["name"] == "spammer")
        .unwrap()["id"]
        .clone();
    for i in 0..3 {
        let (s, _, v) = d
            .req_with(
                "POST",
                "/api/v1/links",
                &[("x-api-key", &spammer)],
                Some(json!({"url": format!("https://spam{i}.example/")})),
            )
            .await;
        assert_eq!(s, 201, "{v}");
    }
    let mine = d.create(json!({"url": "https://mine.example/"})).await;
    let creator = format!("key:{key_id}");
    let out = d.cli(&["takedown", "creator", &creator, "--reason", "spam run"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("3 links matched, 3 switched off"),
        "{}",
        stderr(&out)
    );
    let (_, page) = d.req("GET", "/api/v1/links?limit=10", None).await;
    for l in page["links"].as_array().unwrap() {
        let spam = l["url"].as_str().unwrap().contains("spam");
        assert_eq!(l["taken_down"], spam, "{l}");
    }
    assert_eq!(mine["taken_down"], false);

    let out = d.cli(&["takedown", "list"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains(&creator) && stdout(&out).contains("spam run"));
    let out = d.cli(&["--json", "takedown", "list"]);
    let list: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let id = list["takedowns"][0]["id"].as_i64().unwrap();
    let out = d.cli(&["takedown", "undo", &id.to_string()]);
    assert!(
        stderr(&out).contains("3 links switched back on"),
        "{}",
        stderr(&out)
    );
    let out = d.cli(&["takedown", "undo", &id.to_string()]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("undone already"), "{}", stderr(&out));
    let out = d.cli(&["takedown", "host", "bad/host", "--reason", "x"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("bad/host"), "{}", stderr(&out));
}

#[tokio::test]
async fn changed_lists_switch_off_the_stored_links_they_refuse_at_start() {
    let mut d = Daemon::start().await;
    let evil = d.create(json!({"url": "https://cdn.evil.example/x"})).await;
    let fine = d.create(json!({"url": "https://fine.example/"})).await;
    let code = |v: &Value| v["code"].as_str().unwrap().to_string();
    // No lists yet: nothing recorded.
    let (_, list) = d.req("GET", "/api/v1/takedowns", None).await;
    assert_eq!(list["takedowns"], json!([]));

    d.restart_with(&["--block-hosts", "evil.example"]).await;
    let (_, list) = d.req("GET", "/api/v1/takedowns", None).await;
    let t = &list["takedowns"][0];
    assert_eq!(
        (&t["kind"], &t["created_by"], &t["disabled"]),
        (&json!("config"), &json!("config"), &json!(1)),
        "{list}"
    );
    assert!(
        d.log().contains("the allow/block lists changed"),
        "{}",
        d.log()
    );
    let (_, got) = d
        .req("GET", &format!("/api/v1/links/{}", code(&evil)), None)
        .await;
    assert_eq!(got["taken_down"], true, "{got}");
    let (_, got) = d
        .req("GET", &format!("/api/v1/links/{}", code(&fine)), None)
        .await;
    assert_eq!(got["taken_down"], false, "{got}");

    // The same lists again: applied already, nothing new recorded.
    d.restart_with(&[]).await;
    let (_, list) = d.req("GET", "/api/v1/takedowns", None).await;
    assert_eq!(list["takedowns"].as_array().unwrap().len(), 1, "{list}");
}

#[tokio::test]
async fn the_admin_page_takes_down_lists_and_undoes() {
    let d = Daemon::start().await;
    let admin = common::admin::sign_in(&d).await;
    let link = d
        .create(json!({"url": "https://phish.example/login"}))
        .await;
    let path = format!("/api/v1/links/{}", link["code"].as_str().unwrap());

    let (s, page) = admin
        .post(
            &d,
            "/admin/takedowns",
            &[("kind", "host"), ("value", "bad host"), ("reason", "kit")],
        )
        .await;
    assert_eq!(s, 422);
    assert!(
        page.contains("bad host"),
        "the refusal names the value: {page}"
    );

    let (s, _) = admin
        .post(
            &d,
            "/admin/takedowns",
            &[
                ("kind", "host"),
                ("value", "phish.example"),
                ("reason", "phishing kit"),
            ],
        )
        .await;
    assert_eq!(s, 303);
    assert_eq!(d.req("GET", &path, None).await.1["taken_down"], true);
    let (s, _, page) = common::admin::send(
        &d,
        "GET",
        "/admin/takedowns",
        &[("cookie", &admin.cookie)],
        None,
    )
    .await;
    let page = page.as_str().unwrap().to_string();
    assert_eq!(s, 200);
    assert!(
        page.contains("1 links switched off"),
        "the flash says it: {page}"
    );
    assert!(page.contains("phishing kit") && page.contains("user:alice"));
    let (_, list) = d.req("GET", "/api/v1/takedowns", None).await;
    let id = list["takedowns"][0]["id"].as_i64().unwrap();
    let (s, _) = admin
        .post(&d, &format!("/admin/takedowns/{id}/undo"), &[])
        .await;
    assert_eq!(s, 303);
    assert_eq!(d.req("GET", &path, None).await.1["taken_down"], false);
}

#[tokio::test]
async fn a_users_takedown_covers_the_links_of_their_keys() {
    let d = Daemon::start().await;
    let out = d.cli_stdin(
        &["user", "add", "bob", "--role", "member"],
        "a long password\n",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let out = d.cli(&[
        "key",
        "create",
        "--name",
        "bob-ci",
        "--scopes",
        "links:write",
        "--user",
        "bob",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let bobs = stdout(&out).trim().to_string();
    for i in 0..2 {
        let (s, _, v) = d
            .req_with(
                "POST",
                "/api/v1/links",
                &[("x-api-key", &bobs)],
                Some(json!({"url": format!("https://bob{i}.example/")})),
            )
            .await;
        assert_eq!(s, 201, "{v}");
    }
    d.create(json!({"url": "https://other.example/"})).await;
    let (s, t) = d
        .req(
            "POST",
            "/api/v1/takedowns",
            Some(json!({"creator": "user:bob", "reason": "account compromised"})),
        )
        .await;
    assert_eq!(s, 201, "{t}");
    assert_eq!(
        (&t["matched"], &t["disabled"]),
        (&json!(2), &json!(2)),
        "{t}"
    );
}

/// A takedown is a state of its own: neither the link's owner nor an
/// admin switches it back on with an edit (409, the edge still answers
/// gone), a new link to the host is refused while it is in force, and its
/// undo lifts it without switching on what the owner had switched off.
#[tokio::test]
async fn only_the_undo_lifts_a_takedown() {
    let d = Daemon::start().await;
    let (s, v) = d
        .req("POST", "/api/v1/teams", Some(json!({"name": "alpha"})))
        .await;
    assert_eq!(s, 201, "{v}");
    let body = json!({"name": "mia", "password": "correct horse battery",
                      "team": "alpha", "role": "member"});
    let (s, v) = d.req("POST", "/api/v1/users", Some(body)).await;
    assert_eq!(s, 201, "{v}");
    let body = json!({"name": "mia's key", "scopes": ["links:write", "links:read"], "user": "mia"});
    let (s, v) = d.req("POST", "/api/v1/keys", Some(body)).await;
    assert_eq!(s, 201, "{v}");
    let member = v["secret"].as_str().unwrap().to_string();
    let as_member = |method: &'static str, path: String, body: Option<Value>| {
        let (d, member) = (&d, member.clone());
        async move {
            let (s, _, v) = d
                .req_with(method, &path, &[("x-api-key", &member)], body)
                .await;
            (s, v)
        }
    };
    let (s, v) = as_member(
        "POST",
        "/api/v1/links".into(),
        Some(json!({"url": "https://bad.example/m", "alias": "mia-bad"})),
    )
    .await;
    assert_eq!(s, 201, "{v}");
    let (s, v) = as_member(
        "POST",
        "/api/v1/links".into(),
        Some(json!({"url": "https://bad.example/off", "alias": "mia-off", "disabled": true})),
    )
    .await;
    assert_eq!(s, 201, "{v}");
    let (s, t) = d
        .req(
            "POST",
            "/api/v1/takedowns",
            Some(json!({"host": "bad.example", "reason": "phishing"})),
        )
        .await;
    assert_eq!(s, 201, "{t}");
    let mut ipc = d.ipc().await;

    let enable = json!({"disabled": false});
    let (s, v) = as_member(
        "PATCH",
        "/api/v1/links/mia-bad".into(),
        Some(enable.clone()),
    )
    .await;
    assert_eq!(
        (s, v["error"]["code"].as_str(), v["error"]["field"].as_str()),
        (409, Some("taken_down"), Some("disabled")),
        "{v}"
    );
    let (s, v) = d
        .req("PATCH", "/api/v1/links/mia-bad", Some(enable.clone()))
        .await;
    assert_eq!(s, 409, "an admin's edit does not lift it either: {v}");
    assert_eq!(ipc.lookup(1, "mia-bad").await, LookupResult::Gone);
    let (_, link) = d.req("GET", "/api/v1/links/mia-bad", None).await;
    assert_eq!(
        (&link["state"], &link["taken_down"]),
        (&json!("taken_down"), &json!(true))
    );

    for body in [
        json!({"url": "https://www.bad.example/new"}),
        json!({"url": "https://ok.example/", "targets": {"ios": "https://bad.example/app"}}),
    ] {
        let (s, v) = as_member("POST", "/api/v1/links".into(), Some(body.clone())).await;
        assert_eq!(
            (s, v["error"]["code"].as_str()),
            (422, Some("host_taken_down")),
            "{body}: {v}"
        );
    }
    let (s, v) = as_member(
        "PATCH",
        "/api/v1/links/mia-off".into(),
        Some(json!({"url": "https://bad.example/moved"})),
    )
    .await;
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (422, Some("host_taken_down")),
        "{v}"
    );

    let id = t["id"].as_i64().unwrap();
    let (s, v) = d
        .req("POST", &format!("/api/v1/takedowns/{id}/undo"), None)
        .await;
    assert_eq!(s, 200, "{v}");
    assert!(found(&ipc.lookup(2, "mia-bad").await));
    let (_, off) = d.req("GET", "/api/v1/links/mia-off", None).await;
    assert_eq!(
        (&off["state"], &off["disabled"], &off["taken_down"]),
        (&json!("disabled"), &json!(true), &json!(false)),
        "the owner's switch-off stays: {off}"
    );
    let (s, v) = as_member(
        "POST",
        "/api/v1/links".into(),
        Some(json!({"url": "https://www.bad.example/new"})),
    )
    .await;
    assert_eq!(s, 201, "{v}");
    let (s, v) = as_member("PATCH", "/api/v1/links/mia-off".into(), Some(enable)).await;
    assert_eq!((s, &v["state"]), (200, &json!("active")), "{v}");
}
