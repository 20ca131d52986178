//! Teams and roles through the API of a real daemon (SQLite, or
//! PostgreSQL under `with-pg`): a member sees and changes only their
//! team's links (another team's answers 404), a viewer's key cannot write
//! whatever its scopes, an admin sees every team and filters by one, and a
//! user's change of team or removal reaches their keys.

mod common;

use common::Daemon;
use serde_json::{json, Value};

const PASSWORD: &str = "correct horse battery";
const ALL_SCOPES: [&str; 3] = ["links:write", "links:read", "stats:read"];

/// Adds a user in `team` with `role` and a key for them with `scopes`.
async fn user_key(d: &Daemon, name: &str, team: &str, role: &str, scopes: &[&str]) -> String {
    let body = json!({"name": name, "password": PASSWORD, "team": team, "role": role});
    let (s, v) = d.req("POST", "/api/v1/users", Some(body)).await;
    assert_eq!(s, 201, "{v}");
    assert_eq!(
        (v["team"].as_str(), v["role"].as_str()),
        (Some(team), Some(role))
    );
    let body = json!({"name": format!("{name}'s key"), "scopes": scopes, "user": name});
    let (s, v) = d.req("POST", "/api/v1/keys", Some(body)).await;
    assert_eq!(s, 201, "{v}");
    assert_eq!(v["role"].as_str(), Some(role));
    v["secret"].as_str().unwrap().to_string()
}

/// A request with `key`: status and error code (or the body).
async fn call(
    d: &Daemon,
    key: &str,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let (s, _, v) = d.req_with(method, path, &[("x-api-key", key)], body).await;
    (s, v)
}

fn codes(page: &Value) -> Vec<String> {
    let mut out: Vec<String> = page["links"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["code"].as_str().unwrap().to_string())
        .collect();
    out.sort();
    out
}

async fn teams(d: &Daemon) {
    for name in ["alpha", "beta"] {
        let (s, v) = d
            .req("POST", "/api/v1/teams", Some(json!({"name": name})))
            .await;
        assert_eq!(s, 201, "{v}");
    }
}

#[tokio::test]
async fn a_member_sees_and_changes_only_their_team() {
    let d = Daemon::start().await;
    teams(&d).await;
    let alice = user_key(&d, "alice", "alpha", "member", &ALL_SCOPES).await;
    let bob = user_key(&d, "bob", "beta", "member", &ALL_SCOPES).await;
    for (key, alias) in [(&alice, "a-link"), (&bob, "b-link")] {
        let body = json!({"url": format!("https://e.com/{alias}"), "alias": alias});
        let (s, v) = call(&d, key, "POST", "/api/v1/links", Some(body)).await;
        assert_eq!(s, 201, "{v}");
    }

    let (s, page) = call(&d, &alice, "GET", "/api/v1/links", None).await;
    assert_eq!(
        (s, codes(&page), page["total"].as_u64()),
        (200, vec!["a-link".into()], Some(1))
    );
    // Asking for another team changes nothing for a member.
    let (_, page) = call(&d, &alice, "GET", "/api/v1/links?team=beta", None).await;
    assert_eq!(codes(&page), ["a-link"]);
    let (_, page) = call(&d, &alice, "GET", "/api/v1/links?q=b-link", None).await;
    assert_eq!(
        page["total"].as_u64(),
        Some(0),
        "search finds no other team's link"
    );

    // Every way to reach team beta's link answers 404, as for no link.
    let patch = Some(json!({"url": "https://evil.example/"}));
    for (method, path, body) in [
        ("GET", "/api/v1/links/b-link", None),
        ("PATCH", "/api/v1/links/b-link", patch),
        ("DELETE", "/api/v1/links/b-link", None),
        ("GET", "/api/v1/links/b-link/stats", None),
        ("GET", "/api/v1/links/b-link/qr", None),
    ] {
        let (s, v) = call(&d, &alice, method, path, body).await;
        assert_eq!(
            (s, v["error"]["code"].as_str()),
            (404, Some("not_found")),
            "{method} {path}"
        );
    }
    let (s, v) = d.req("GET", "/api/v1/links/b-link", None).await;
    assert_eq!(
        (s, v["url"].as_str()),
        (200, Some("https://e.com/b-link")),
        "left as it was"
    );

    // Aliases stay global: the edge serves every team's.
    let body = json!({"url": "https://e.com/x", "alias": "b-link"});
    let (s, v) = call(&d, &alice, "POST", "/api/v1/links", Some(body)).await;
    assert_eq!((s, v["error"]["code"].as_str()), (409, Some("alias_taken")));

    // A batch lands in the creator's team, and dedupe never answers
    // another team's link.
    let shared = json!({"url": "https://e.com/shared"});
    let (s, _) = call(&d, &bob, "POST", "/api/v1/links", Some(shared)).await;
    assert_eq!(s, 201);
    let body = json!({"links": [{"url": "https://e.com/shared", "dedupe": true}]});
    let (s, v) = call(&d, &alice, "POST", "/api/v1/links/batch", Some(body)).await;
    assert_eq!(
        (s, v["results"][0]["status"].as_u64()),
        (200, Some(201)),
        "{v}"
    );
    let alpha = team_id(&d, "alpha").await;
    assert_eq!(v["results"][0]["link"]["team_id"].as_i64(), Some(alpha));
    let (_, page) = call(&d, &alice, "GET", "/api/v1/links", None).await;
    assert_eq!(page["total"].as_u64(), Some(2));
    // Site stats count the team's links only; `/api/v1/teams` shows the
    // member's own team.
    let (s, v) = call(&d, &alice, "GET", "/api/v1/stats", None).await;
    assert_eq!(s, 200, "{v}");
    let (_, v) = call(&d, &alice, "GET", "/api/v1/teams", None).await;
    let names: Vec<&str> = v["teams"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["alpha"]);
    // Members cannot manage teams or users.
    let (s, _) = call(
        &d,
        &alice,
        "POST",
        "/api/v1/teams",
        Some(json!({"name": "x"})),
    )
    .await;
    assert_eq!(s, 403);
}

/// The id of the team named `name`.
async fn team_id(d: &Daemon, name: &str) -> i64 {
    let (_, v) = d.req("GET", "/api/v1/teams", None).await;
    v["teams"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .and_then(|t| t["id"].as_i64())
        .unwrap()
}

#[tokio::test]
async fn a_viewer_reads_and_an_admin_sees_every_team() {
    let d = Daemon::start().await;
    teams(&d).await;
    let alice = user_key(&d, "alice", "alpha", "member", &ALL_SCOPES).await;
    // Scopes say write; the role says read only.
    let vic = user_key(&d, "vic", "alpha", "viewer", &ALL_SCOPES).await;
    let ada = user_key(&d, "ada", "beta", "admin", &["links:read"]).await;
    let bob = user_key(&d, "bob", "beta", "member", &ALL_SCOPES).await;
    for (key, alias) in [(&alice, "a-link"), (&bob, "b-link")] {
        let body = json!({"url": format!("https://e.com/{alias}"), "alias": alias});
        let (s, _) = call(&d, key, "POST", "/api/v1/links", Some(body)).await;
        assert_eq!(s, 201);
    }
    let (s, v) = call(&d, &vic, "GET", "/api/v1/links/a-link", None).await;
    assert_eq!((s, v["code"].as_str()), (200, Some("a-link")));
    let (s, _) = call(&d, &vic, "GET", "/api/v1/links/a-link/stats", None).await;
    assert_eq!(s, 200);
    let write = [
        (
            "POST",
            "/api/v1/links",
            Some(json!({"url": "https://e.com/v"})),
        ),
        (
            "PATCH",
            "/api/v1/links/a-link",
            Some(json!({"disabled": true})),
        ),
        ("DELETE", "/api/v1/links/a-link", None),
    ];
    for (method, path, body) in write {
        let (s, v) = call(&d, &vic, method, path, body).await;
        assert_eq!(
            (s, v["error"]["code"].as_str()),
            (403, Some("insufficient_scope")),
            "{method} {path}"
        );
    }

    // An admin's key sees every team, and filters by one.
    let (_, page) = call(&d, &ada, "GET", "/api/v1/links", None).await;
    assert_eq!(codes(&page), ["a-link", "b-link"]);
    let (_, page) = call(&d, &ada, "GET", "/api/v1/links?team=alpha", None).await;
    assert_eq!(codes(&page), ["a-link"]);
    let (s, v) = call(&d, &ada, "GET", "/api/v1/links?team=nope", None).await;
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (404, Some("unknown_team"))
    );
    let (s, v) = call(&d, &ada, "GET", "/api/v1/links/a-link", None).await;
    assert_eq!(
        (s, v["team_id"].as_i64()),
        (200, Some(team_id(&d, "alpha").await))
    );
    // But its scopes still bind it: links:read only.
    let (s, _) = call(&d, &ada, "DELETE", "/api/v1/links/a-link", None).await;
    assert_eq!(s, 403);
}

#[tokio::test]
async fn a_moved_or_removed_user_takes_their_keys_along() {
    let d = Daemon::start().await;
    teams(&d).await;
    let alice = user_key(&d, "alice", "alpha", "member", &ALL_SCOPES).await;
    let bob = user_key(&d, "bob", "beta", "member", &ALL_SCOPES).await;
    let body = json!({"url": "https://e.com/b", "alias": "b-link"});
    assert_eq!(
        call(&d, &bob, "POST", "/api/v1/links", Some(body)).await.0,
        201
    );
    assert_eq!(
        call(&d, &alice, "GET", "/api/v1/links/b-link", None)
            .await
            .0,
        404
    );

    let body = json!({"team": "beta", "role": "viewer"});
    let (s, v) = d
        .req("PUT", "/api/v1/users/alice/membership", Some(body))
        .await;
    assert_eq!(
        (s, v["team"].as_str(), v["role"].as_str()),
        (200, Some("beta"), Some("viewer"))
    );
    assert_eq!(
        call(&d, &alice, "GET", "/api/v1/links/b-link", None)
            .await
            .0,
        200
    );
    let body = json!({"disabled": true});
    let (s, _) = call(&d, &alice, "PATCH", "/api/v1/links/b-link", Some(body)).await;
    assert_eq!(s, 403, "a viewer now");
    let (s, v) = d.req("GET", "/api/v1/users", None).await;
    assert_eq!(s, 200);
    let listed = v["users"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["name"] == "alice")
        .unwrap();
    assert_eq!(
        (listed["team"].as_str(), listed["role"].as_str()),
        (Some("beta"), Some("viewer"))
    );

    // A team with people or links in it stays.
    let (s, v) = d.req("DELETE", "/api/v1/teams/beta", None).await;
    assert_eq!((s, v["error"]["code"].as_str()), (409, Some("in_use")));

    let (s, _) = d.req("DELETE", "/api/v1/users/bob", None).await;
    assert_eq!(s, 204);
    let (s, v) = call(&d, &bob, "GET", "/api/v1/links", None).await;
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (401, Some("revoked_api_key"))
    );

    let (s, _) = d
        .req("POST", "/api/v1/teams", Some(json!({"name": "empty"})))
        .await;
    assert_eq!(s, 201);
    assert_eq!(d.req("DELETE", "/api/v1/teams/empty", None).await.0, 204);
    let (s, v) = d.req("DELETE", "/api/v1/teams/empty", None).await;
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (404, Some("unknown_team"))
    );
}
