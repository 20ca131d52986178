//! API keys, scopes and signed requests.

mod common;

use common::{stdout, unix, Daemon};
use serde_json::json;
use shortlinkd::auth::{sign, signing_string};
use shortlinkd::timestamp::unix_now;

#[tokio::test]
async fn api_keys_and_scopes() {
    let d = Daemon::start().await;
    let body = json!({"url": "https://e.com/"});
    let post = |headers: Vec<(&'static str, String)>| {
        let d = &d;
        let body = body.clone();
        async move {
            let h: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let (s, _, v) = d.req_with("POST", "/api/v1/links", &h, Some(body)).await;
            (s, v["error"]["code"].as_str().unwrap_or("").to_string())
        }
    };
    assert_eq!(post(vec![]).await, (401, "missing_credentials".into()));
    assert_eq!(
        post(vec![("x-api-key", "nonsense".into())]).await,
        (401, "invalid_api_key".into())
    );
    // Right shape and prefix, wrong secret.
    let mut forged = d.admin_key.clone();
    let last = forged.pop().unwrap();
    forged.push(if last == '0' { '1' } else { '0' });
    assert_eq!(
        post(vec![("x-api-key", forged)]).await,
        (401, "invalid_api_key".into())
    );
    let reader = d.key_with("links:read").await;
    assert_eq!(
        post(vec![("x-api-key", reader.clone())]).await,
        (403, "insufficient_scope".into())
    );
    let (s, _, _) = d
        .req_with("GET", "/api/v1/links", &[("x-api-key", &reader)], None)
        .await;
    assert_eq!(s, 200);
    // stats:read cannot read keys or links.
    let stats = d.key_with("stats:read").await;
    let (s, _, v) = d
        .req_with("GET", "/api/v1/keys", &[("x-api-key", &stats)], None)
        .await;
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (403, Some("insufficient_scope"))
    );
    let (s, _, _) = d
        .req_with("GET", "/api/v1/links", &[("x-api-key", &stats)], None)
        .await;
    assert_eq!(s, 403);

    let writer = d.key_with("links:write").await;
    assert_eq!(post(vec![("x-api-key", writer.clone())]).await.0, 201);
    // Revoking through the CLI (via the running daemon) takes effect at once,
    // even though the key was just verified and cached.
    let out = d.cli(&["key", "list"]);
    let id = stdout(&out)
        .lines()
        .find(|l| l.contains("\tlinks:write\t") && l.contains("active"))
        .and_then(|l| l.split('\t').next())
        .unwrap()
        .to_string();
    assert!(d.cli(&["key", "revoke", &id]).status.success());
    assert_eq!(
        post(vec![("x-api-key", writer)]).await,
        (401, "revoked_api_key".into())
    );
    assert!(stdout(&d.cli(&["key", "list"])).contains("revoked"));
    // Health needs nothing; metrics needs a key.
    let (s, _, _) = d.req_with("GET", "/api/v1/health", &[], None).await;
    assert_eq!(s, 200);
    let (s, headers, _) = d.req_with("GET", "/metrics", &[], None).await;
    assert_eq!(s, 401);
    assert_eq!(
        headers.get("www-authenticate").map(|v| v.to_str().unwrap()),
        Some("Bearer realm=\"shortlink\""),
        "a 401 names its scheme"
    );
    let (s, headers, _) = d
        .req_with("GET", "/api/v1/links", &[("x-api-key", "slk_wrong")], None)
        .await;
    assert_eq!(s, 401);
    assert!(headers.contains_key("www-authenticate"));
    // The contract is public: a client is written from it before it has
    // a key.
    let (s, _, doc) = d.req_with("GET", "/api/v1/openapi.json", &[], None).await;
    assert_eq!(s, 200, "{doc}");
    assert!(doc["paths"]["/api/v1/links"].is_object(), "{doc}");
}

/// `Authorization: Bearer <key>` is the same key as `X-Api-Key`, on the API
/// and on `/metrics` (Prometheus's own `authorization` setting); other
/// schemes are refused, never ignored.
#[tokio::test]
async fn a_key_works_as_a_bearer_token() {
    let d = Daemon::start().await;
    let stats = d.key_with("stats:read").await;
    let bearer = format!("Bearer {stats}");
    let (s, _, body) = d
        .req_with("GET", "/metrics", &[("authorization", &bearer)], None)
        .await;
    assert_eq!(s, 200, "{body}");
    let admin = format!("Bearer {}", d.admin_key);
    let (s, _, v) = d
        .req_with(
            "POST",
            "/api/v1/links",
            &[("authorization", &admin)],
            Some(json!({"url": "https://e.com/bearer"})),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    for (header, code) in [
        (format!("Basic {stats}"), "invalid_api_key"),
        ("Bearer".to_string(), "invalid_api_key"),
        (format!("Bearer {stats}x"), "invalid_api_key"),
    ] {
        let (s, _, v) = d
            .req_with("GET", "/api/v1/links", &[("authorization", &header)], None)
            .await;
        assert_eq!(
            (s, v["error"]["code"].as_str()),
            (401, Some(code)),
            "{header}"
        );
    }
    // The scope still decides: a stats key cannot create links.
    let (s, _, _) = d
        .req_with(
            "POST",
            "/api/v1/links",
            &[("authorization", &bearer)],
            Some(json!({"url": "https://e.com/no"})),
        )
        .await;
    assert_eq!(s, 403);
}

/// A request that presents two credentials is refused, whichever of them
/// is valid: a key in both headers, or a key beside a signature's headers
/// (even an empty one). The daemon does not pick one.
#[tokio::test]
async fn two_credentials_at_once_are_refused() {
    let d = Daemon::start().await;
    let bearer = format!("Bearer {}", d.admin_key);
    let key = d.admin_key.as_str();
    let cases: [&[(&str, &str)]; 4] = [
        &[("x-api-key", key), ("authorization", &bearer)],
        &[("authorization", &bearer), ("x-timestamp", "")],
        &[("x-api-key", key), ("x-app-id", "app_1")],
        &[("x-api-key", key), ("x-signature", "00")],
    ];
    for headers in cases {
        let (s, _, v) = d.req_with("GET", "/api/v1/keys", headers, None).await;
        assert_eq!(
            (s, v["code"].as_str()),
            (401, Some("ambiguous_credentials")),
            "{headers:?}: {v}"
        );
    }
    // Either alone is fine.
    for headers in [[("x-api-key", key)], [("authorization", bearer.as_str())]] {
        let (s, _, v) = d.req_with("GET", "/api/v1/keys", &headers, None).await;
        assert_eq!(s, 200, "{v}");
    }
}

#[tokio::test]
async fn keys_api_validates() {
    let d = Daemon::start().await;
    let (s, v) = d
        .req(
            "POST",
            "/api/v1/keys",
            Some(json!({"name": "x", "scopes": ["links:delete"]})),
        )
        .await;
    assert_eq!((s, v["error"]["field"].as_str()), (422, Some("scopes")));
    let (s, v) = d
        .req(
            "POST",
            "/api/v1/keys",
            Some(json!({"name": "", "scopes": ["admin"]})),
        )
        .await;
    assert_eq!((s, v["error"]["field"].as_str()), (422, Some("name")));
    let (s, v) = d
        .req(
            "POST",
            "/api/v1/keys",
            Some(json!({"name": "ci", "scopes": ["links:read"]})),
        )
        .await;
    assert_eq!(s, 201);
    let secret = v["secret"].as_str().unwrap();
    assert!(secret.starts_with("slk_"));
    let (_, list) = d.req("GET", "/api/v1/keys", None).await;
    let text = list.to_string();
    assert!(!text.contains(secret), "secrets are never listed");
    let (s, _) = d.req("DELETE", "/api/v1/keys/9999", None).await;
    assert_eq!(s, 404);
}

struct Signer {
    app_id: String,
    secret: String,
}

impl Signer {
    fn headers(&self, ts: i64, method: &str, path: &str, body: &[u8]) -> Vec<(String, String)> {
        let sig = sign(&self.secret, &signing_string(ts, method, path, body));
        vec![
            ("x-app-id".into(), self.app_id.clone()),
            ("x-timestamp".into(), ts.to_string()),
            ("x-signature".into(), sig),
        ]
    }
}

async fn signed(
    d: &Daemon,
    headers: &[(String, String)],
    method: &str,
    path: &str,
    body: &[u8],
) -> (u16, String) {
    let h: Vec<(&str, &str)> = headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let (s, v) = if method == "GET" {
        let (s, _, v) = d.req_with(method, path, &h, None).await;
        (s, v)
    } else {
        d.req_raw(method, path, &h, body.to_vec()).await
    };
    (s, v["error"]["code"].as_str().unwrap_or("").to_string())
}

#[tokio::test]
async fn signed_requests() {
    let d = Daemon::start().await;
    let out = d.cli(&[
        "app",
        "create",
        "--name",
        "mailer",
        "--scopes",
        "links:write,links:read",
    ]);
    assert!(out.status.success());
    let text = stdout(&out);
    let field = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{k}=")))
            .unwrap()
            .to_string()
    };
    let app = Signer {
        app_id: field("app_id"),
        secret: field("secret"),
    };
    let body = br#"{"url":"https://e.com/signed"}"#;
    let now = unix_now();
    let h = app.headers(now, "POST", "/api/v1/links", body);
    assert_eq!(signed(&d, &h, "POST", "/api/v1/links", body).await.0, 201);
    // The same signature again is a replay.
    assert_eq!(
        signed(&d, &h, "POST", "/api/v1/links", body).await,
        (401, "replayed_signature".into())
    );
    // Outside the 60 s window, either way.
    for ts in [now - 120, now + 120] {
        let h = app.headers(ts, "POST", "/api/v1/links", body);
        assert_eq!(
            signed(&d, &h, "POST", "/api/v1/links", body).await,
            (401, "stale_timestamp".into())
        );
    }
    // Inside the window but a second old is fine.
    let h = app.headers(now - 1, "POST", "/api/v1/links", body);
    assert_eq!(signed(&d, &h, "POST", "/api/v1/links", body).await.0, 201);
    // Tampered body, path or method.
    let h = app.headers(now, "POST", "/api/v1/links", body);
    let other = br#"{"url":"https://evil.example/"}"#;
    assert_eq!(
        signed(&d, &h, "POST", "/api/v1/links", other).await,
        (401, "invalid_signature".into())
    );
    let h = app.headers(now + 1, "GET", "/api/v1/links", b"");
    assert_eq!(
        signed(&d, &h, "GET", "/api/v1/links?limit=1", b"").await.1,
        "invalid_signature"
    );
    // Wrong secret.
    let wrong = Signer {
        app_id: app.app_id.clone(),
        secret: "00".repeat(32),
    };
    let h = wrong.headers(now, "GET", "/api/v1/links", b"");
    assert_eq!(
        signed(&d, &h, "GET", "/api/v1/links", b"").await.1,
        "invalid_signature"
    );
    // Unknown app and missing headers.
    let ghost = Signer {
        app_id: "app_0000000000000000".into(),
        secret: app.secret.clone(),
    };
    let h = ghost.headers(now, "GET", "/api/v1/links", b"");
    assert_eq!(
        signed(&d, &h, "GET", "/api/v1/links", b"").await.1,
        "unknown_app"
    );
    let h = vec![("x-app-id".to_string(), app.app_id.clone())];
    assert_eq!(
        signed(&d, &h, "GET", "/api/v1/links", b"").await.1,
        "missing_credentials"
    );
    // A signed GET with the query signed works; scope is enforced.
    let h = app.headers(now + 2, "GET", "/api/v1/links?limit=1", b"");
    assert_eq!(
        signed(&d, &h, "GET", "/api/v1/links?limit=1", b"").await.0,
        200
    );
    let h = app.headers(now + 3, "GET", "/api/v1/keys", b"");
    assert_eq!(
        signed(&d, &h, "GET", "/api/v1/keys", b"").await,
        (403, "insufficient_scope".into())
    );
    // Revoked apps stop at once.
    assert!(d.cli(&["app", "revoke", &app.app_id]).status.success());
    let h = app.headers(now + 4, "GET", "/api/v1/links", b"");
    assert_eq!(
        signed(&d, &h, "GET", "/api/v1/links", b"").await.1,
        "revoked_app"
    );
    assert!(stdout(&d.cli(&["app", "list"])).contains("revoked"));
}

#[tokio::test]
async fn replay_is_refused_after_a_restart() {
    let mut d = Daemon::start().await;
    let out = d.cli(&["app", "create", "--name", "a", "--scopes", "links:read"]);
    let text = stdout(&out);
    let get = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{k}=")))
            .unwrap()
            .to_string()
    };
    let app = Signer {
        app_id: get("app_id"),
        secret: get("secret"),
    };
    let h = app.headers(unix_now(), "GET", "/api/v1/links", b"");
    assert_eq!(signed(&d, &h, "GET", "/api/v1/links", b"").await.0, 200);
    d.kill9();
    d.spawn().await;
    assert_eq!(
        signed(&d, &h, "GET", "/api/v1/links", b"").await,
        (401, "replayed_signature".into())
    );
}

/// A key with an expiry works until then and is refused after it with
/// `expired_api_key`, even when it was verified (and cached) before; the
/// expiry must be in the future and is shown in the key list. Apps do not
/// take one.
#[tokio::test]
async fn keys_expire() {
    let d = Daemon::start().await;
    let soon = unix_now() + 2;
    let (s, made) = d
        .req(
            "POST",
            "/api/v1/keys",
            Some(json!({"name": "short-lived", "scopes": ["links:read"], "expires_at": soon})),
        )
        .await;
    assert_eq!(s, 201, "{made}");
    assert_eq!(
        made["expires_at"].as_str(),
        shortlinkd::timestamp::format_time(soon).as_deref()
    );
    let secret = made["secret"].as_str().unwrap().to_string();
    let get = || async {
        let (s, _, v) = d
            .req_with(
                "GET",
                "/api/v1/links",
                &[("x-api-key", secret.as_str())],
                None,
            )
            .await;
        (s, v["error"]["code"].as_str().unwrap_or("").to_string())
    };
    assert_eq!(get().await.0, 200);
    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
    assert_eq!(get().await, (401, "expired_api_key".to_string()));
    let (_, list) = d.req("GET", "/api/v1/keys", None).await;
    let listed = list["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["name"] == "short-lived")
        .unwrap()
        .clone();
    assert_eq!(unix(&listed["expires_at"]), soon);
    // RFC 3339 is accepted; the past and apps are refused.
    let (s, v) = d
        .req(
            "POST",
            "/api/v1/keys",
            Some(json!({"name": "y", "scopes": ["links:read"], "expires_at": "2099-01-01T00:00:00Z"})),
        )
        .await;
    assert_eq!((s, unix(&v["expires_at"])), (201, 4_070_908_800i64));
    for (path, when) in [
        ("/api/v1/keys", json!(1)),
        ("/api/v1/apps", json!(unix_now() + 60)),
    ] {
        let (s, v) = d
            .req(
                "POST",
                path,
                Some(json!({"name": "x", "scopes": ["links:read"], "expires_at": when})),
            )
            .await;
        assert_eq!(
            (s, v["error"]["code"].as_str(), v["error"]["field"].as_str()),
            (422, Some("invalid_expiry"), Some("expires_at")),
            "{path}: {v}"
        );
    }
}
