//! nginx's conventions for the location settings: `shortlink_redirect`,
//! `shortlink_fallback`, `shortlink_cache_control`, `shortlink_clicks` and
//! `shortlink_forward_query`
//! stand at `http{}`, `server{}` or `location{}` level and are inherited the
//! usual way, the innermost level that sets one winning.

use std::time::{Duration, Instant};

use serde_json::json;
use shortlink_e2e::Stack;

#[test]
fn settings_inherit_from_http_and_server_and_locations_override_them() {
    let s = Stack::start_edited("inherit", 1, "300ms", |http| {
        http.replacen(
            "    server {",
            "    shortlink_redirect 307;\n    shortlink_cache_control \"max-age=7\";\n    shortlink_clicks off;\n    shortlink_forward_query on;\n    server {\n        shortlink_fallback https://example.com/from-server;",
            1,
        )
        .replacen(
            "        location /admin/ {",
            "        location /counted/ {\n            shortlink on;\n            shortlink_clicks on;\n            shortlink_forward_query off;\n        }\n        location /admin/ {",
            1,
        )
    });
    let code = s
        .daemon
        .create(json!({"url": "https://example.com/target"}));
    let get = |path: &str| s.nginx.get(path.as_bytes());

    // Inherited from http{}: status and Cache-Control; from server{}: the fallback.
    let r = get(&format!("/{code}"));
    assert_eq!(
        (r.status, r.header("Location"), r.header("Cache-Control")),
        (307, Some("https://example.com/target"), Some("max-age=7"))
    );
    let r = get("/zzzzzz");
    assert_eq!(
        (r.status, r.header("Location")),
        (302, Some("https://example.com/from-server"))
    );
    // A location's own settings win (see /fb/ in the stack's conf).
    let r = get(&format!("/fb/{code}"));
    assert_eq!(
        (r.status, r.header("Cache-Control")),
        (301, Some("private, max-age=90"))
    );
    assert_eq!(
        get("/fb/zzzzzz").header("Location"),
        Some("https://example.com/fallback")
    );

    // Clicks: off from http{}, back on in /counted/.
    for _ in 0..3 {
        assert_eq!(get(&format!("/{code}")).status, 307);
    }
    for _ in 0..4 {
        assert_eq!(get(&format!("/counted/{code}")).status, 307);
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while s.daemon.clicks(&code) < 4 {
        assert!(
            Instant::now() < deadline,
            "clicks of /counted/ never arrived"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(s.daemon.clicks(&code), 4, "only /counted/ counts");

    // The query string: forwarded from http{}, not in /counted/.
    assert_eq!(
        get(&format!("/{code}?utm_source=x")).header("Location"),
        Some("https://example.com/target?utm_source=x")
    );
    assert_eq!(
        get(&format!("/counted/{code}?utm_source=x")).header("Location"),
        Some("https://example.com/target")
    );
    s.nginx.assert_clean_log();
}
