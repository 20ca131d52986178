//! Clicks per visitor country through the API: the link's and the site's
//! stats carry a `countries` breakdown, unknown countries as `--` (on
//! SQLite and, under with-pg, PostgreSQL).

mod common;

use common::Daemon;
use serde_json::json;
use shortlink_core::country::{Country, UNKNOWN};
use shortlink_core::device::DeviceClass;
use shortlink_core::ipc::{BatchId, ClickBatch, ClickCount};

fn row(link_id: u64, country: Country, count: u32) -> ClickCount {
    ClickCount {
        link_id,
        hour: (shortlinkd::timestamp::unix_now() / 3600) as u32,
        device: DeviceClass::Mobile,
        bot: false,
        referrer: None,
        count,
        country,
        variant: 0,
    }
}

#[tokio::test]
async fn link_and_site_stats_count_clicks_per_country() {
    let d = Daemon::start().await;
    let a = d.create(json!({"url": "https://e.com/a"})).await;
    let b = d.create(json!({"url": "https://e.com/b"})).await;
    let (code, a_id, b_id) = (
        a["code"].as_str().unwrap().to_string(),
        a["id"].as_u64().unwrap(),
        b["id"].as_u64().unwrap(),
    );
    let de = Country::parse("DE").unwrap();
    let jp = Country::parse("JP").unwrap();
    let mut c = d.ipc().await;
    c.clicks(
        1,
        ClickBatch {
            batch_id: BatchId([0x5c; 16]),
            clicks: vec![
                row(a_id, de, 3),
                row(a_id, jp, 1),
                row(a_id, UNKNOWN, 2),
                row(b_id, jp, 5),
            ],
        },
    )
    .await;
    let (s, st) = d
        .req("GET", &format!("/api/v1/links/{code}/stats"), None)
        .await;
    assert_eq!(s, 200, "{st}");
    assert_eq!(st["total"], 6);
    assert_eq!(
        st["countries"],
        json!([
            {"country": "DE", "clicks": 3},
            {"country": "--", "clicks": 2},
            {"country": "JP", "clicks": 1},
        ])
    );
    let (s, site) = d.req("GET", "/api/v1/stats", None).await;
    assert_eq!(s, 200, "{site}");
    assert_eq!(
        site["countries"],
        json!([
            {"country": "JP", "clicks": 6},
            {"country": "DE", "clicks": 3},
            {"country": "--", "clicks": 2},
        ])
    );
    // The OpenAPI document describes the breakdown.
    let (_, doc) = d.req("GET", "/api/v1/openapi.json", None).await;
    let schema = &doc["components"]["schemas"]["CountryCount"];
    assert!(schema["properties"]["country"].is_object(), "{schema}");
    assert!(
        doc["components"]["schemas"]["StatsView"]["properties"]["countries"].is_object(),
        "StatsView has countries"
    );
}
