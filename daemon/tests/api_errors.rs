//! Every error the API returns is problem JSON with a stable code: wrong methods,
//! signed requests far outside the time window, visit limits out of range.

mod common;

use common::{stdout, Daemon};
use serde_json::json;
use shortlinkd::auth::{sign, signing_string};
use shortlinkd::timestamp::unix_now;

#[tokio::test]
async fn a_wrong_method_is_json_with_an_allow_header() {
    let d = Daemon::start().await;
    let key = d.admin_key.clone();
    for (method, path, allow) in [
        ("PUT", "/api/v1/links", "GET,HEAD,POST"),
        ("DELETE", "/api/v1/links/batch", "POST"),
        ("POST", "/api/v1/health", "GET,HEAD"),
        ("POST", "/api/v1/links/abc123", "GET,HEAD,PATCH,DELETE"),
    ] {
        let (s, h, v) = d.req_with(method, path, &[("x-api-key", &key)], None).await;
        assert_eq!(s, 405, "{method} {path}: {v}");
        assert_eq!(v["error"]["code"], "method_not_allowed", "{method} {path}");
        let message = v["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(method) && message.contains(path),
            "{message}"
        );
        let mut got: Vec<&str> = h["allow"].to_str().unwrap().split(',').collect();
        got.iter_mut().for_each(|m| *m = m.trim());
        got.sort_unstable();
        let mut want: Vec<&str> = allow.split(',').collect();
        want.sort_unstable();
        assert_eq!(got, want, "{method} {path}");
        assert_eq!(h["content-type"], "application/problem+json");
    }
}

#[tokio::test]
async fn a_timestamp_2_pow_63_seconds_old_is_refused() {
    let d = Daemon::start().await;
    let out = d.cli(&["app", "create", "--name", "far", "--scopes", "links:read"]);
    assert!(out.status.success());
    let text = stdout(&out);
    let field = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{k}=")))
            .unwrap()
            .to_string()
    };
    let (app_id, secret) = (field("app_id"), field("secret"));
    let now = unix_now();
    // now - 2^63: `now - ts` is 2^63, one past i64::MAX.
    for ts in [now.wrapping_sub(i64::MIN), i64::MIN, i64::MAX] {
        let sig = sign(&secret, &signing_string(ts, "GET", "/api/v1/links", b""));
        let ts_text = ts.to_string();
        let (s, _, v) = d
            .req_with(
                "GET",
                "/api/v1/links",
                &[
                    ("x-app-id", &app_id),
                    ("x-timestamp", &ts_text),
                    ("x-signature", &sig),
                ],
                None,
            )
            .await;
        assert_eq!(s, 401, "X-Timestamp {ts}: {v}");
        assert_eq!(v["error"]["code"], "stale_timestamp");
        assert!(v["error"]["message"].as_str().unwrap().contains(&ts_text));
    }
    // The same app signing with the current time still gets in.
    let sig = sign(&secret, &signing_string(now, "GET", "/api/v1/links", b""));
    let now_text = now.to_string();
    let (s, _, v) = d
        .req_with(
            "GET",
            "/api/v1/links",
            &[
                ("x-app-id", &app_id),
                ("x-timestamp", &now_text),
                ("x-signature", &sig),
            ],
            None,
        )
        .await;
    assert_eq!(s, 200, "{v}");
}

#[tokio::test]
async fn max_visits_out_of_range_names_the_range() {
    let d = Daemon::start().await;
    let range = "from 1 to 9223372036854775807";
    let too_big = json!(9_223_372_036_854_775_808u64);
    let beyond_u64: serde_json::Value = serde_json::from_str("18446744073709551616").unwrap();
    for bad in [json!(0), too_big, beyond_u64, json!(-1), json!(1.5)] {
        let (s, v) = d
            .req(
                "POST",
                "/api/v1/links",
                Some(json!({"url": "https://e.com/", "max_visits": bad})),
            )
            .await;
        assert_eq!(s, 422, "max_visits {bad}: {v}");
        assert_eq!(v["error"]["code"], "invalid_max_visits", "{bad}: {v}");
        assert_eq!(v["error"]["field"], "max_visits", "{bad}");
        let message = v["error"]["message"].as_str().unwrap();
        assert!(message.contains(range), "{bad}: {message}");
    }
    let code = d
        .create(json!({"url": "https://e.com/", "max_visits": 9_223_372_036_854_775_807u64}))
        .await["code"]
        .as_str()
        .unwrap()
        .to_string();
    for bad in [json!(0), json!(-5)] {
        let (s, v) = d
            .req(
                "PATCH",
                &format!("/api/v1/links/{code}"),
                Some(json!({ "max_visits": bad })),
            )
            .await;
        assert_eq!(s, 422, "{v}");
        assert_eq!(v["error"]["code"], "invalid_max_visits");
        assert!(v["error"]["message"].as_str().unwrap().contains(range));
    }
}

#[tokio::test]
async fn null_on_a_field_that_cannot_be_cleared_is_refused() {
    let d = Daemon::start().await;
    let code = d
        .create(json!({"url": "https://e.com/keep", "tags": ["t"], "ttl": 3600}))
        .await["code"]
        .as_str()
        .unwrap()
        .to_string();
    let path = format!("/api/v1/links/{code}");
    for field in ["url", "ttl", "renew_on_access", "tags", "disabled"] {
        let (s, v) = d.req("PATCH", &path, Some(json!({ field: null }))).await;
        assert_eq!(s, 422, "{field}: null: {v}");
        assert_eq!(v["error"]["code"], "not_clearable", "{field}");
        assert_eq!(v["error"]["field"], field);
        let message = v["error"]["message"].as_str().unwrap();
        assert!(message.contains(&format!("{field}: ")), "{message}");
    }
    let (_, got) = d.req("GET", &path, None).await;
    assert_eq!(got["url"], "https://e.com/keep");
    assert_eq!(got["tags"], json!(["t"]));
    // The fields that can be cleared still are.
    let (s, v) = d
        .req(
            "PATCH",
            &path,
            Some(json!({"expires_at": null, "max_visits": null, "redirect": null, "targets": null, "alias": null})),
        )
        .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["expires_at"], serde_json::Value::Null);
}

#[tokio::test]
async fn axum_rejections_are_json_too() {
    let d = Daemon::start().await;
    let key = d.admin_key.clone();
    for (method, path, says) in [
        ("DELETE", "/api/v1/keys/abc", "abc"),
        ("GET", "/api/v1/links/%FF%FE", "UTF-8"),
        (
            "GET",
            "/api/v1/links/abc/stats?from=x&to=y&bogus=1",
            "bogus",
        ),
    ] {
        let (s, h, v) = d.req_with(method, path, &[("x-api-key", &key)], None).await;
        assert!((400..500).contains(&s), "{method} {path}: {s} {v}");
        assert_eq!(
            h["content-type"], "application/problem+json",
            "{method} {path}"
        );
        let code = v["error"]["code"].as_str().unwrap_or_default();
        assert!(!code.is_empty(), "{method} {path}: {v}");
        let message = v["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(says), "{method} {path}: {v}");
    }
    let (s, v) = d.req("GET", "/api/v1/links?limit=abc", None).await;
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (400, Some("invalid_query"))
    );
    assert_eq!(v["error"]["field"], "limit", "{v}");
}
