//! Every error of the API is an RFC 9457 problem document
//! (`application/problem+json`) that still carries the older
//! `{"error": {"code", "message", "field"}}` member.

mod common;

use common::{http_unix, Daemon};
use serde_json::{json, Value};

/// Asserts the problem members of one error reply and that they agree with
/// the older `error` member.
fn assert_problem(what: &str, status: u16, headers: &axum::http::HeaderMap, v: &Value, code: &str) {
    assert_eq!(
        headers["content-type"], "application/problem+json",
        "{what}: {v}"
    );
    assert_eq!(v["status"], status, "{what}: {v}");
    assert_eq!(v["code"], code, "{what}: {v}");
    assert_eq!(v["error"]["code"], code, "{what}: {v}");
    assert_eq!(
        v["type"],
        format!("https://shortlink.dev/errors/{code}"),
        "{what}: {v}"
    );
    let title = axum::http::StatusCode::from_u16(status)
        .unwrap()
        .canonical_reason()
        .unwrap();
    assert_eq!(v["title"], title, "{what}: {v}");
    let detail = v["detail"].as_str().unwrap_or_default();
    assert!(!detail.is_empty(), "{what}: {v}");
    assert_eq!(v["error"]["message"], detail, "{what}: {v}");
    assert_eq!(v["field"], v["error"]["field"], "{what}: {v}");
}

#[tokio::test]
async fn errors_are_problem_documents() {
    let d = Daemon::start().await;
    let key = d.admin_key.clone();
    let auth = [("x-api-key", key.as_str())];
    d.create(json!({"url": "https://example.com/a", "alias": "taken"}))
        .await;

    let (s, h, v) = d.req_with("GET", "/api/v1/links", &[], None).await;
    assert_eq!(s, 401, "{v}");
    assert_problem("401", s, &h, &v, v["code"].as_str().unwrap_or("?"));

    let (s, h, v) = d
        .req_with("GET", "/api/v1/links/nosuchalias", &auth, None)
        .await;
    assert_problem("404", s, &h, &v, "not_found");
    assert_eq!(s, 404);

    let (s, h, v) = d.req_with("PUT", "/api/v1/links", &auth, None).await;
    assert_problem("405", s, &h, &v, "method_not_allowed");
    assert_eq!(s, 405);

    let body = json!({"url": "https://example.com/b", "alias": "taken"});
    let (s, h, v) = d.req_with("POST", "/api/v1/links", &auth, Some(body)).await;
    assert_problem("409", s, &h, &v, "alias_taken");
    assert_eq!((s, v["field"].as_str()), (409, Some("alias")));

    let body = json!({"url": "not a url"});
    let (s, h, v) = d.req_with("POST", "/api/v1/links", &auth, Some(body)).await;
    assert_eq!((s, v["field"].as_str()), (422, Some("url")), "{v}");
    assert_problem("422", s, &h, &v, v["code"].as_str().unwrap_or("?"));

    let big = format!(
        "{{\"url\": \"https://example.com/{}\"}}",
        "a".repeat(300_000)
    );
    let (s, h, v) = http_unix(
        &d.api_path(),
        "POST",
        "/api/v1/links",
        &[("x-api-key", &key)],
        Some(big.into_bytes()),
    )
    .await
    .unwrap();
    assert_problem("413", s, &h, &v, "body_too_large");
    assert_eq!(s, 413);
}

#[tokio::test]
async fn successes_stay_plain_json() {
    let d = Daemon::start().await;
    let (s, h, v) = d
        .req_with("GET", "/api/v1/links", &[("x-api-key", &d.admin_key)], None)
        .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(h["content-type"], "application/json");
}
