//! Clicks per A/B variant through IPC and the API: a link's stats list
//! each of its variants (index, URL, weight) with the clicks the edge sent
//! to it, counted once per batch id; a batch naming a variant past the
//! limit is refused whole, naming the row; the admin link page charts and
//! tabulates them, the CLI prints a `variants:` line and the OpenAPI
//! document describes the breakdown (on SQLite and, under with-pg,
//! PostgreSQL).

mod common;

use common::admin::sign_in;
use common::{stdout, Daemon};
use serde_json::json;
use shortlink_core::country::UNKNOWN;
use shortlink_core::device::DeviceClass;
use shortlink_core::ipc::{BatchId, ClickBatch, ClickCount, Reply, Request};

/// `count` clicks of `link_id` this hour to variant number `variant` (0:
/// none, `i + 1`: variant `i`).
fn row(link_id: u64, variant: u8, bot: bool, count: u32) -> ClickCount {
    ClickCount {
        link_id,
        hour: (shortlinkd::timestamp::unix_now() / 3600) as u32,
        device: DeviceClass::Desktop,
        bot,
        referrer: None,
        count,
        country: UNKNOWN,
        variant,
    }
}

#[tokio::test]
async fn link_stats_count_clicks_per_variant() {
    let d = Daemon::start().await;
    let ab = d
        .create(json!({
            "url": "https://e.com/",
            "alias": "abc",
            "variants": [
                {"url": "https://e.com/a", "weight": 5},
                {"url": "https://e.com/b", "weight": 3},
                {"url": "https://e.com/c", "weight": 2},
            ],
        }))
        .await;
    let plain = d.create(json!({"url": "https://e.com/plain"})).await;
    let (ab_id, plain_id) = (ab["id"].as_u64().unwrap(), plain["id"].as_u64().unwrap());
    let batch = ClickBatch {
        batch_id: BatchId([0x7a; 16]),
        clicks: vec![
            row(ab_id, 1, false, 6),
            row(ab_id, 1, true, 1),
            row(ab_id, 3, false, 4),
            // A click a device or country target took: no variant.
            row(ab_id, 0, false, 2),
            row(plain_id, 0, false, 9),
        ],
    };
    let mut c = d.ipc().await;
    c.clicks(1, batch.clone()).await;
    // The same batch again (a worker's retry) counts nothing more.
    c.clicks(2, batch).await;
    let (s, st) = d.req("GET", "/api/v1/links/abc/stats", None).await;
    assert_eq!(s, 200, "{st}");
    assert_eq!(st["total"], 13);
    assert_eq!(
        st["variants"],
        json!([
            {"index": 0, "url": "https://e.com/a", "weight": 5, "clicks": 7},
            {"index": 1, "url": "https://e.com/b", "weight": 3, "clicks": 0},
            {"index": 2, "url": "https://e.com/c", "weight": 2, "clicks": 4},
        ])
    );
    // A key that may read stats but not links learns the counts, not where
    // the link leads; the site-wide top list hides them too.
    let stats_only = d.key_with("stats:read").await;
    let (s, _, st) = d
        .req_with(
            "GET",
            "/api/v1/links/abc/stats",
            &[("x-api-key", &stats_only)],
            None,
        )
        .await;
    assert_eq!(s, 200, "{st}");
    assert_eq!(
        st["variants"],
        json!([
            {"index": 0, "weight": 5, "clicks": 7},
            {"index": 1, "weight": 3, "clicks": 0},
            {"index": 2, "weight": 2, "clicks": 4},
        ])
    );
    let (s, _, site) = d
        .req_with(
            "GET",
            "/api/v1/stats?top=5",
            &[("x-api-key", &stats_only)],
            None,
        )
        .await;
    assert_eq!(s, 200, "{site}");
    let top = site["top_links"].as_array().unwrap();
    assert_eq!(top.len(), 2, "{site}");
    assert!(top.iter().all(|l| l.get("url").is_none()), "{site}");
    let reader = d.key_with("stats:read,links:read").await;
    let (_, _, site) = d
        .req_with(
            "GET",
            "/api/v1/stats?top=5",
            &[("x-api-key", &reader)],
            None,
        )
        .await;
    let top = site["top_links"].as_array().unwrap();
    assert_eq!(
        top.iter()
            .map(|l| (l["code"].as_str().unwrap(), l["url"].as_str().unwrap()))
            .collect::<Vec<_>>(),
        [
            ("abc", "https://e.com/"),
            (plain["code"].as_str().unwrap(), "https://e.com/plain")
        ],
        "{site}"
    );

    let plain_code = plain["code"].as_str().unwrap();
    let (_, st) = d
        .req("GET", &format!("/api/v1/links/{plain_code}/stats"), None)
        .await;
    assert_eq!(
        (st["total"].clone(), st["variants"].clone()),
        (json!(9), json!([]))
    );

    // A variant number past the limit: the whole batch is refused.
    c.send(&Request::Clicks {
        id: 3,
        batch: ClickBatch {
            batch_id: BatchId([0x7b; 16]),
            clicks: vec![row(ab_id, 2, false, 1), row(ab_id, 9, false, 1)],
        },
    })
    .await;
    loop {
        match c.recv().await {
            Some(Reply::ClicksRefused { id: 3, reason, .. }) => {
                assert!(reason.contains("click row 1: variant 9"), "{reason}");
                break;
            }
            Some(Reply::Event(_)) => continue,
            other => panic!("expected the refusal, got {other:?}"),
        }
    }
    let (_, st) = d.req("GET", "/api/v1/links/abc/stats", None).await;
    assert_eq!(st["variants"][1]["clicks"], 0, "nothing of it counted");

    // The admin link page charts them and lists each with its clicks; a
    // link without variants has no such section.
    let admin = sign_in(&d).await;
    let (s, page) = admin.get(&d, "/admin/links/abc").await;
    assert_eq!(s, 200, "{page}");
    assert!(page.contains("A/B variants, last 30 days"), "{page}");
    assert!(
        page.contains("Variant 1 (https://e.com/a): 7"),
        "chart: {page}"
    );
    assert_eq!(
        page.matches("<tr class=\"variant-clicks\">").count(),
        3,
        "{page}"
    );
    for row in [
        "<td>1</td><td>https://e.com/a</td><td class=\"num\">5 (50%)</td><td class=\"num\">7</td>",
        "<td>2</td><td>https://e.com/b</td><td class=\"num\">3 (30%)</td><td class=\"num\">0</td>",
        "<td>3</td><td>https://e.com/c</td><td class=\"num\">2 (20%)</td><td class=\"num\">4</td>",
    ] {
        assert!(page.contains(row), "{row} in {page}");
    }
    let (_, page) = admin.get(&d, &format!("/admin/links/{plain_code}")).await;
    assert!(page.contains("id=\"breakdown\""), "the plain link's page");
    assert!(
        !page.contains("A/B variants, last 30 days"),
        "no variants section"
    );
    assert!(!page.contains("id=\"variant-clicks\""), "no variants table");

    // The CLI's summary has a line for them.
    let out = stdout(&d.cli(&["stats", "abc"]));
    assert!(
        out.contains("variants:    #1 7 (weight 5), #2 0 (weight 3), #3 4 (weight 2)"),
        "{out}"
    );

    // The OpenAPI document describes the breakdown.
    let (_, doc) = d.req("GET", "/api/v1/openapi.json", None).await;
    let schema = &doc["components"]["schemas"]["VariantCount"];
    for field in ["index", "url", "weight", "clicks"] {
        assert!(schema["properties"][field].is_object(), "{field}: {schema}");
    }
    assert!(
        doc["components"]["schemas"]["StatsView"]["properties"]["variants"].is_object(),
        "StatsView has variants"
    );
}
