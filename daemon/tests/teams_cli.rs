//! `shortlinkd team`, `user --team --role`, `user set` and `key create
//! --user` against a real daemon (SQLite, or PostgreSQL under `with-pg`).

mod common;

use common::{stderr, stdout, Daemon};
use serde_json::json;

const PASSWORD: &str = "correct horse battery";

fn ok(d: &Daemon, args: &[&str]) -> String {
    let out = d.cli(args);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    stdout(&out)
}

#[tokio::test]
async fn teams_users_and_keys_from_the_cli() {
    let d = Daemon::start().await;
    let id: i64 = ok(&d, &["team", "create", "alpha"]).trim().parse().unwrap();
    assert!(id > 1, "the default team is 1");
    let out = d.cli(&["team", "create", "alpha"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("already taken"), "{}", stderr(&out));
    let list = ok(&d, &["team", "list"]);
    assert!(list.contains("default") && list.contains("alpha"), "{list}");

    let out = d.cli_stdin(
        &["user", "add", "ann", "--team", "alpha", "--role", "viewer"],
        &format!("{PASSWORD}\n"),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let out = d.cli_stdin(
        &["user", "add", "x", "--role", "boss"],
        &format!("{PASSWORD}\n"),
    );
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("unknown role \"boss\""),
        "{}",
        stderr(&out)
    );
    let users = ok(&d, &["user", "list"]);
    let ann = users
        .lines()
        .find(|l| l.contains("ann"))
        .unwrap()
        .to_string();
    assert!(ann.contains("alpha") && ann.contains("viewer"), "{users}");

    // A key made for ann is capped by her role, whatever its scopes.
    let key = ok(
        &d,
        &[
            "key",
            "create",
            "--name",
            "ann-ci",
            "--scopes",
            "links:write,links:read",
            "--user",
            "ann",
        ],
    );
    let key = key.trim();
    let keys = ok(&d, &["key", "list"]);
    let row = keys
        .lines()
        .find(|l| l.contains("ann-ci"))
        .unwrap()
        .to_string();
    assert!(
        row.contains("viewer") && row.contains(&id.to_string()),
        "{keys}"
    );
    let body = Some(json!({"url": "https://e.com/"}));
    let (s, _, _) = d
        .req_with("POST", "/api/v1/links", &[("x-api-key", key)], body.clone())
        .await;
    assert_eq!(s, 403);
    let out = d.cli(&[
        "key",
        "create",
        "--name",
        "k",
        "--scopes",
        "links:read",
        "--user",
        "nobody",
    ]);
    assert!(
        stderr(&out).contains("no user \"nobody\""),
        "{}",
        stderr(&out)
    );

    let said = ok(
        &d,
        &["user", "set", "ann", "--team", "alpha", "--role", "member"],
    );
    assert!(said.is_empty());
    let (s, _, v) = d
        .req_with("POST", "/api/v1/links", &[("x-api-key", key)], body)
        .await;
    assert_eq!(
        (s, v["team_id"].as_i64()),
        (201, Some(id)),
        "a member now: {v}"
    );

    let out = d.cli(&["team", "delete", "alpha"]);
    assert!(!out.status.success(), "ann and her link are in it");
    ok(&d, &["team", "create", "empty"]);
    ok(&d, &["team", "delete", "empty"]);
    assert!(!ok(&d, &["team", "list"]).contains("empty"));
}
