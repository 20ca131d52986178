//! CORS for browser clients: off unless `cors_origins` lists origins; then
//! preflights from those origins (and only those) get the CORS headers.

mod common;

use common::{http_unix, Daemon};

/// A preflight for `POST /api/v1/links` from `origin`: its status and headers.
async fn preflight(d: &Daemon, origin: &str) -> (u16, axum::http::HeaderMap) {
    let (s, h, _) = http_unix(
        &d.api_path(),
        "OPTIONS",
        "/api/v1/links",
        &[
            ("origin", origin),
            ("access-control-request-method", "POST"),
            ("access-control-request-headers", "x-api-key, content-type"),
        ],
        None,
    )
    .await
    .unwrap();
    (s, h)
}

fn header<'a>(h: &'a axum::http::HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

#[tokio::test]
async fn allowed_origins_get_cors_headers_and_others_do_not() {
    let d = Daemon::start_with(&[
        "--cors-origins",
        "https://app.example,http://localhost:3000",
    ])
    .await;
    let (s, h) = preflight(&d, "https://app.example").await;
    assert_eq!(s, 200, "{h:?}");
    assert_eq!(
        header(&h, "access-control-allow-origin"),
        Some("https://app.example")
    );
    let methods = header(&h, "access-control-allow-methods").unwrap_or_default();
    for m in ["GET", "POST", "PATCH", "PUT", "DELETE"] {
        assert!(methods.contains(m), "{methods}");
    }
    let headers = header(&h, "access-control-allow-headers")
        .unwrap_or_default()
        .to_ascii_lowercase();
    for name in [
        "x-api-key",
        "authorization",
        "content-type",
        "x-app-id",
        "x-timestamp",
        "x-signature",
    ] {
        assert!(headers.contains(name), "{headers}");
    }

    let (_, h) = preflight(&d, "https://evil.example").await;
    assert_eq!(header(&h, "access-control-allow-origin"), None, "{h:?}");

    // An actual request from the allowed origin may read Location.
    let (s, h, v) = d
        .req_with(
            "POST",
            "/api/v1/links",
            &[
                ("x-api-key", &d.admin_key),
                ("origin", "http://localhost:3000"),
            ],
            Some(serde_json::json!({"url": "https://example.com/cors"})),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    assert_eq!(
        header(&h, "access-control-allow-origin"),
        Some("http://localhost:3000")
    );
    let exposed = header(&h, "access-control-expose-headers").unwrap_or_default();
    assert!(exposed.to_ascii_lowercase().contains("location"), "{h:?}");
}

#[tokio::test]
async fn no_cors_headers_when_unset() {
    let d = Daemon::start().await;
    let (_, h) = preflight(&d, "https://app.example").await;
    assert_eq!(header(&h, "access-control-allow-origin"), None, "{h:?}");
    assert_eq!(header(&h, "access-control-allow-methods"), None, "{h:?}");
}
