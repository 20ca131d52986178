//! `/metrics`: latency histograms, build info and process figures beside
//! the counters, with bounded label values.

mod common;

use common::Daemon;
use serde_json::json;
use shortlink_core::ipc::LookupResult;

/// The value of the sample whose series is exactly `series`.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

#[tokio::test]
async fn histograms_build_info_and_process_figures() {
    let d = Daemon::start().await;
    let v = d.create(json!({"url": "https://e.com/m"})).await;
    let code = v["generated_code"].as_str().unwrap().to_string();
    for _ in 0..3 {
        let (s, _) = d.req("GET", &format!("/api/v1/links/{code}"), None).await;
        assert_eq!(s, 200);
    }
    let mut c = d.ipc().await;
    assert!(matches!(c.lookup(1, &code).await, LookupResult::Found(_)));
    let unknown = d
        .codec()
        .encode(shortlink_core::Codec::first_id_of_length(9) + 3);
    assert_eq!(c.lookup(2, unknown.as_str()).await, LookupResult::NotFound);

    let text = d.metrics().await;
    let count =
        |series: &str| sample(&text, series).unwrap_or_else(|| panic!("{series} in\n{text}"));
    // The route pattern, never the code itself.
    assert_eq!(
        count("shortlinkd_http_request_duration_seconds_count{method=\"GET\",route=\"/api/v1/links/{code}\"}"),
        3.0
    );
    assert!(!text.contains(&format!("route=\"/api/v1/links/{code}\"")));
    assert!(count("shortlinkd_http_request_duration_seconds_count{method=\"POST\",route=\"/api/v1/links\"}") >= 1.0);
    // The created link was cached by the daemon; the unknown code was not.
    assert_eq!(
        count("shortlinkd_ipc_lookup_duration_seconds_count{source=\"cache\"}"),
        1.0
    );
    assert_eq!(
        count("shortlinkd_ipc_lookup_duration_seconds_count{source=\"store\"}"),
        1.0
    );
    let build = format!(
        "shortlinkd_build_info{{version=\"{}\",protocol=\"{}\"}}",
        env!("CARGO_PKG_VERSION"),
        shortlink_core::ipc::PROTOCOL_VERSION
    );
    assert_eq!(count(&build), 1.0);
    assert!(count("process_resident_memory_bytes") > 1e6);
    assert!(count("process_open_fds") >= 3.0);
    assert!(count("process_cpu_seconds_total") > 0.0);
    assert!(text.ends_with("# EOF\n"), "one OpenMetrics document");
}

/// A client's mistake (an alias taken, a link that does not exist) is not
/// a store failure: `shortlinkd_store_write_errors_total` stays at zero.
#[tokio::test]
async fn client_mistakes_are_not_store_write_errors() {
    let d = Daemon::start().await;
    d.create(json!({"url": "https://e.com/a", "alias": "taken"}))
        .await;
    for _ in 0..3 {
        let (s, _) = d
            .req(
                "POST",
                "/api/v1/links",
                Some(json!({"url": "https://e.com/b", "alias": "taken"})),
            )
            .await;
        assert_eq!(s, 409);
    }
    let other = d.create(json!({"url": "https://e.com/c"})).await;
    let code = other["generated_code"].as_str().unwrap();
    let (s, _) = d
        .req(
            "PATCH",
            &format!("/api/v1/links/{code}"),
            Some(json!({"alias": "taken"})),
        )
        .await;
    assert_eq!(s, 409);
    // Revoking a key that does not exist; adding a user twice.
    let (s, _) = d.req("DELETE", "/api/v1/keys/999999", None).await;
    assert_eq!(s, 404);
    let user = json!({"name": "ann", "password": "a long enough password"});
    let (s, v) = d.req("POST", "/api/v1/users", Some(user.clone())).await;
    assert_eq!(s, 201, "{v}");
    let (s, _) = d.req("POST", "/api/v1/users", Some(user)).await;
    assert_eq!(s, 409);
    assert_eq!(d.metric("shortlinkd_store_write_errors_total").await, 0.0);
    assert!(d.metric("shortlinkd_store_writes_total").await >= 5.0);
}
