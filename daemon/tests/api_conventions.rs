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
    let (s, v) = d.req("GET", "/api/v1/links/no-such-link/qr", None).await;
    assert_eq!((s, v["error"]["code"].as_str()), (404, Some("not_found")));
    // links:read is needed.
    let (s, _, _) = d
        .req_with("GET", "/api/v1/links/qr-link/qr", &[], None)
        .await;
    assert_eq!(s, 401);
}
