//! What API users of other shorteners expect: `201` with `Location`, list
//! totals, search by generated code, QR codes through the API.

mod common;

use common::Daemon;
use serde_json::json;

#[tokio::test]
async fn created_links_have_a_location_and_lists_a_total() {
    let d = Daemon::start().await;
    let key = d.admin_key.clone();
    let auth = [("x-api-key", key.as_str())];
    let (s, h, v) = d
        .req_with(
            "POST",
            "/api/v1/links",
            &auth,
            Some(json!({"url": "https://e.com/one", "alias": "first-link"})),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    let gen = v["generated_code"].as_str().unwrap().to_string();
    let location = h["location"].to_str().unwrap().to_string();
    assert_eq!(location, format!("/api/v1/links/{gen}"));
    let (s, again) = d.req("GET", &location, None).await;
    assert_eq!((s, &again["url"]), (200, &json!("https://e.com/one")));
    // dedupe finding an existing link is 200, with no Location.
    let body = json!({"url": "https://e.com/dup", "dedupe": true});
    let (s, _, _) = d
        .req_with("POST", "/api/v1/links", &auth, Some(body.clone()))
        .await;
    assert_eq!(s, 201);
    let (s, h, _) = d.req_with("POST", "/api/v1/links", &auth, Some(body)).await;
    assert_eq!((s, h.get("location")), (200, None));
    let third = d.create(json!({"url": "https://e.com/three"})).await;

    let (s, page) = d.req("GET", "/api/v1/links?limit=2", None).await;
    assert_eq!(s, 200);
    assert_eq!(page["links"].as_array().unwrap().len(), 2);
    assert_eq!(page["total"], 3);
    assert!(page["next_cursor"].is_string());
    // A generated code finds its link (the admin UI's search too), as
    // does a piece of an alias or URL; the total follows the filter.
    let code3 = third["generated_code"].as_str().unwrap();
    let (_, found) = d
        .req("GET", &format!("/api/v1/links?q={code3}"), None)
        .await;
    assert_eq!(found["total"], 1, "{found}");
    assert_eq!(found["links"][0]["url"], "https://e.com/three");
    let (_, found) = d.req("GET", "/api/v1/links?q=first", None).await;
    assert_eq!(
        (found["total"].as_u64(), found["links"][0]["alias"].as_str()),
        (Some(1), Some("first-link"))
    );
    let (_, none) = d.req("GET", "/api/v1/links?q=nothing-like-it", None).await;
    assert_eq!(
        (
            none["total"].as_u64(),
            none["links"].as_array().map(Vec::len)
        ),
        (Some(0), Some(0))
    );
}

#[tokio::test]
async fn qr_codes_through_the_api() {
    let d = Daemon::start().await;
    let key = d.admin_key.clone();
    let auth = [("x-api-key", key.as_str())];
    d.create(json!({"url": "https://e.com/qr", "alias": "qr-link"}))
        .await;
    let (s, h, svg) = d
        .req_with("GET", "/api/v1/links/qr-link/qr", &auth, None)
        .await;
    assert_eq!(s, 200);
    assert_eq!(h["content-type"], "image/svg+xml");
    assert!(svg.as_str().unwrap().starts_with("<svg"), "{svg}");
    let (s, h, png) = d
        .req_with(
            "GET",
            "/api/v1/links/qr-link/qr?format=png&scale=2",
            &auth,
            None,
        )
        .await;
    assert_eq!((s, h["content-type"].to_str().unwrap()), (200, "image/png"));
    assert!(png.as_str().unwrap().contains("PNG"));
    for (query, status, code) in [
        ("?scale=0", 400, "invalid_query"),
        ("?scale=41", 400, "invalid_query"),
        ("?format=gif", 400, "invalid_query"),
    ] {
        let (s, v) = d
            .req("GET", &format!("/api/v1/links/qr-link/qr{query}"), None)
            .await;
        assert_eq!(
            (s, v["error"]["code"].as_str()),
            (status, Some(code)),
            "{query}: {v}"
        );
    }
    // A long short URL (a 500-character base) at a large scale would be a
    // huge image: refused, naming the scale, and not shown in the message;
    // a smaller scale is drawn.
    let base = format!("https://s.example.com/{}", "p".repeat(480));
    let long_base = [
        ("x-api-key", key.as_str()),
        ("x-shortlink-base", base.as_str()),
    ];
    let png = |scale: u32| format!("/api/v1/links/qr-link/qr?format=png&scale={scale}");
    let (s, _, v) = d.req_with("GET", &png(40), &long_base, None).await;
    let field = v.get("error").and_then(|e| e["field"].as_str());
    assert_eq!((s, field), (400, Some("scale")));
    let (s, _, _) = d.req_with("GET", &png(8), &long_base, None).await;
    assert_eq!(s, 200);
    let (s, v) = d.req("GET", "/api/v1/links/no-such-link/qr", None).await;
    assert_eq!((s, v["error"]["code"].as_str()), (404, Some("not_found")));
    // links:read is needed.
    let (s, _, _) = d
        .req_with("GET", "/api/v1/links/qr-link/qr", &[], None)
        .await;
    assert_eq!(s, 401);
}

/// `GET /api/v1/stats`: every link's clicks over a range, with the most
/// clicked links; the same before and after the fold writes them to the
/// tables.
#[tokio::test]
async fn site_wide_stats_total_series_and_top_links() {
    let d = Daemon::start().await;
    let mut links = Vec::new();
    for name in ["a", "b", "c"] {
        let v = d
            .create(json!({ "url": format!("https://e.com/{name}") }))
            .await;
        links.push((
            v["id"].as_u64().unwrap(),
            v["code"].as_str().unwrap().to_string(),
        ));
    }
    let mut c = d.ipc().await;
    c.clicks(1, common::batch(1, links[0].0, 5, false)).await;
    c.clicks(2, common::batch(2, links[1].0, 3, false)).await;
    c.clicks(3, common::batch(3, links[2].0, 1, true)).await;
    let check = |v: &serde_json::Value| {
        assert_eq!(
            (v["total"].as_i64(), v["bots"].as_i64()),
            (Some(9), Some(1)),
            "{v}"
        );
        let series: i64 = v["series"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["clicks"].as_i64().unwrap())
            .sum();
        assert_eq!(series, 9);
        let top: Vec<(&str, i64)> = v["top_links"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| (l["code"].as_str().unwrap(), l["clicks"].as_i64().unwrap()))
            .collect();
        assert_eq!(top, [(links[0].1.as_str(), 5), (links[1].1.as_str(), 3)]);
    };
    let (s, pending) = d.req("GET", "/api/v1/stats?top=2", None).await;
    assert_eq!(s, 200, "{pending}");
    check(&pending);
    assert!(
        common::eventually(
            shortlinkd::stats::FOLD_ALL_EVERY + shortlinkd::stats::FOLD_EVERY * 3,
            || async { d.metric("shortlinkd_clicks_total").await == 9.0 }
        )
        .await
    );
    let (_, folded) = d
        .req("GET", "/api/v1/stats?top=2&granularity=day", None)
        .await;
    check(&folded);
    let (s, v) = d.req("GET", "/api/v1/stats?top=101", None).await;
    assert_eq!((s, v["error"]["field"].as_str()), (400, Some("top")));
    let (s, v) = d.req("GET", "/api/v1/stats?from=100&to=50", None).await;
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (422, Some("invalid_range"))
    );
    // Times past what a reply can write are the caller's mistake, named.
    let link_stats = format!("/api/v1/links/{}/stats", links[0].1);
    for (query, field) in [
        ("to=253402300800", "to"),
        ("from=-99999999999999&to=100", "from"),
        ("to=9223372036854775807", "to"),
        ("from=9223372036854775807", "from"),
    ] {
        for path in ["/api/v1/stats", link_stats.as_str()] {
            let (s, v) = d.req("GET", &format!("{path}?{query}"), None).await;
            assert_eq!(
                (s, v["error"]["code"].as_str(), v["error"]["field"].as_str()),
                (422, Some("invalid_range"), Some(field)),
                "{path}?{query}: {v}"
            );
        }
    }
    let (s, v) = d
        .req("GET", "/api/v1/stats?to=9999-12-30T00:00:00Z", None)
        .await;
    assert_eq!(s, 200, "the last writable day is a range's end: {v}");
}
