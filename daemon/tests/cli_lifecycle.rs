//! `link update`, `link disable`/`enable` and `key revoke` by prefix,
//! through the running daemon.

mod common;

use common::{stderr, stdout, unix, Daemon};
use serde_json::{json, Value};

fn ok(out: &std::process::Output) -> String {
    assert!(out.status.success(), "{}", stderr(out));
    stdout(out)
}

fn get(d: &Daemon, code: &str) -> Value {
    serde_json::from_str(&ok(&d.cli(&["link", "get", code]))).unwrap()
}

#[tokio::test]
async fn link_update_changes_only_what_is_given() {
    let d = Daemon::start().await;
    ok(&d.cli(&[
        "link",
        "create",
        "https://e.com/a",
        "--alias",
        "upd",
        "--tag",
        "old",
    ]));
    ok(&d.cli(&[
        "link",
        "update",
        "upd",
        "--url",
        "https://e.com/b",
        "--ios",
        "https://apps.apple.com/x",
        "--redirect",
        "308",
        "--expires",
        "2099-01-01T00:00:00Z",
        "--max-visits",
        "5",
        "-t",
        "x",
        "--tag",
        "y",
    ]));
    let v = get(&d, "upd");
    assert_eq!(v["url"], "https://e.com/b");
    assert_eq!(v["targets"]["ios"], "https://apps.apple.com/x");
    assert_eq!(v["redirect"], 308);
    assert_eq!(unix(&v["expires_at"]), 4070908800i64);
    assert_eq!(v["max_visits"], 5);
    assert_eq!(v["tags"], json!(["x", "y"]));

    // Another target keeps the first; unix seconds work for --expires.
    ok(&d.cli(&[
        "link",
        "update",
        "upd",
        "--android",
        "https://play.google.com/x",
        "--expires",
        "4102444800",
    ]));
    let v = get(&d, "upd");
    assert_eq!(v["targets"]["ios"], "https://apps.apple.com/x");
    assert_eq!(v["targets"]["android"], "https://play.google.com/x");
    assert_eq!(unix(&v["expires_at"]), 4102444800i64);
    assert_eq!(v["tags"], json!(["x", "y"]), "tags untouched");

    // Clearing.
    ok(&d.cli(&[
        "link",
        "update",
        "upd",
        "--no-expiry",
        "--no-max-visits",
        "--ios",
        "",
    ]));
    let v = get(&d, "upd");
    assert!(v.get("expires_at").is_none_or(Value::is_null), "{v}");
    assert!(v.get("max_visits").is_none_or(Value::is_null), "{v}");
    assert!(v["targets"].get("ios").is_none_or(Value::is_null), "{v}");
    assert_eq!(v["targets"]["android"], "https://play.google.com/x");
    assert_eq!(v["url"], "https://e.com/b");

    // Errors name what was wrong.
    let out = d.cli(&["link", "update", "upd"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("nothing to change"),
        "{}",
        stderr(&out)
    );
    let out = d.cli(&["link", "update", "upd", "--expires", "soon"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--expires"), "{}", stderr(&out));
    let out = d.cli(&["link", "update", "upd", "--redirect", "200"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("redirect"), "{}", stderr(&out));
    let out = d.cli(&["link", "update", "nope", "--url", "https://e.com/c"]);
    assert!(stderr(&out).contains("HTTP 404"), "{}", stderr(&out));
    let out = d.cli(&["link", "update", "upd", "--expires", "1", "--no-expiry"]);
    assert!(!out.status.success(), "conflicting flags are refused");
}

#[tokio::test]
async fn disable_and_enable_switch_the_link() {
    let d = Daemon::start().await;
    ok(&d.cli(&["link", "create", "https://e.com/s", "--alias", "switch-me"]));
    let out = d.cli(&["link", "disable", "switch-me"]);
    ok(&out);
    assert!(
        stderr(&out).contains("disabled switch-me"),
        "{}",
        stderr(&out)
    );
    let (_, v) = d.req("GET", "/api/v1/links/switch-me", None).await;
    assert_eq!(
        (v["disabled"].clone(), v["state"].clone()),
        (json!(true), json!("disabled"))
    );
    let v: Value =
        serde_json::from_str(&ok(&d.cli(&["--json", "link", "enable", "switch-me"]))).unwrap();
    assert_eq!(v["state"], "active");
    let (_, v) = d.req("GET", "/api/v1/links/switch-me", None).await;
    assert_eq!(v["disabled"], false);
}

#[tokio::test]
async fn key_revoke_by_id_or_prefix() {
    let d = Daemon::start().await;
    let mut secrets = Vec::new();
    for name in ["one", "two"] {
        let out = d.cli(&["key", "create", "--name", name, "--scopes", "links:read"]);
        secrets.push(ok(&out).trim().to_string());
    }
    let keys: Value = serde_json::from_str(&ok(&d.cli(&["key", "list", "--json"]))).unwrap();
    let keys = keys["keys"].as_array().unwrap().clone();
    let find = |name: &str| keys.iter().find(|k| k["name"] == name).unwrap().clone();
    let one = find("one");
    let prefix = format!("slk_{}", one["prefix"].as_str().unwrap());
    assert!(secrets[0].starts_with(&prefix), "{prefix} {}", secrets[0]);
    let out = d.cli(&["key", "revoke", &prefix]);
    ok(&out);
    assert!(stderr(&out).contains(&format!("revoked key {}", one["id"])));
    // By id, and a prefix that matches nothing.
    let two = find("two");
    ok(&d.cli(&["key", "revoke", &two["id"].to_string()]));
    let out = d.cli(&["key", "revoke", "slk_zzzzzzzz"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("no key has the prefix"),
        "{}",
        stderr(&out)
    );
    let keys: Value = serde_json::from_str(&ok(&d.cli(&["key", "list", "--json"]))).unwrap();
    let revoked: Vec<&str> = keys["keys"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|k| !k["revoked_at"].is_null())
        .map(|k| k["name"].as_str().unwrap())
        .collect();
    assert_eq!(revoked.len(), 2, "{keys}");
    assert!(revoked.contains(&"one") && revoked.contains(&"two"));
    // The admin key still works.
    let (s, _) = d.req("GET", "/api/v1/links", None).await;
    assert_eq!(s, 200);
}
