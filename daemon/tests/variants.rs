//! A link's A/B variants through the API: stored in the order given,
//! weights of 0 or past the limit, too many variants and bad URLs refused
//! naming the variant, replaced and removed by an edit, kept apart by the
//! dedupe hash, and carried to the edge by the lookup.

mod common;

use common::{stderr, Daemon};
use serde_json::{json, Value};
use shortlink_core::ipc::LookupResult;
use shortlink_core::variants::Variant;

#[tokio::test]
async fn variants_are_checked_stored_and_replaced() {
    let d = Daemon::start().await;
    let two = json!([
        {"url": "https://e.com/a", "weight": 3},
        {"url": "https://e.com/b", "weight": 1},
    ]);
    let (s, v) = d
        .req(
            "POST",
            "/api/v1/links",
            Some(json!({"url": "https://e.com/", "alias": "ab", "variants": two})),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    assert_eq!(v["variants"], two);
    let (_, got) = d.req("GET", "/api/v1/links/ab", None).await;
    assert_eq!(got["variants"], two);

    let refused = |body: Value, code: &'static str, says: &'static str| {
        let d = &d;
        async move {
            let (s, v) = d.req("POST", "/api/v1/links", Some(body)).await;
            assert_eq!(s, 422, "{v}");
            let text = v.to_string();
            assert!(text.contains("variants"), "{text}");
            assert!(text.contains(code), "{text}");
            assert!(text.contains(says), "{text}");
        }
    };
    refused(
        json!({"url": "https://e.com/", "variants": [
            {"url": "https://e.com/a", "weight": 1}, {"url": "https://e.com/b", "weight": 0}]}),
        "invalid_weight",
        "variants[1].weight is 0",
    )
    .await;
    refused(
        json!({"url": "https://e.com/", "variants": [{"url": "https://e.com/a", "weight": 65_536}]}),
        "invalid_weight",
        "variants[0].weight is 65536",
    )
    .await;
    refused(
        json!({"url": "https://e.com/", "variants": [{"url": "ftp://e.com/a", "weight": 1}]}),
        "invalid_url",
        "variants[0].url",
    )
    .await;
    let nine: Vec<Value> = (0..9)
        .map(|i| json!({"url": format!("https://e.com/{i}"), "weight": 1}))
        .collect();
    refused(
        json!({"url": "https://e.com/", "variants": nine}),
        "too_many_variants",
        "more than the maximum of 8",
    )
    .await;

    // An edit replaces them; null removes them.
    let one = json!([{"url": "https://e.com/c", "weight": 5}]);
    let (s, v) = d
        .req("PATCH", "/api/v1/links/ab", Some(json!({"variants": one})))
        .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["variants"], one);
    let (s, v) = d
        .req("PATCH", "/api/v1/links/ab", Some(json!({"variants": null})))
        .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["variants"], json!([]));
}

#[tokio::test]
async fn dedupe_tells_links_with_other_variants_apart() {
    let d = Daemon::start().await;
    let make = |variants: Value| {
        let d = &d;
        async move {
            let body = json!({"url": "https://e.com/same", "dedupe": true, "variants": variants});
            let (s, v) = d.req("POST", "/api/v1/links", Some(body)).await;
            assert!(s == 200 || s == 201, "{v}");
            v["id"].clone()
        }
    };
    let a = make(json!([{"url": "https://e.com/a", "weight": 1}])).await;
    let b = make(json!([{"url": "https://e.com/a", "weight": 2}])).await;
    let again = make(json!([{"url": "https://e.com/a", "weight": 1}])).await;
    assert_ne!(a, b);
    assert_eq!(a, again);
}

#[tokio::test]
async fn the_edge_lookup_carries_the_variants() {
    let d = Daemon::start().await;
    d.create(
        json!({"url": "https://e.com/", "alias": "ab-edge", "variants": [
        {"url": "https://e.com/a", "weight": 2}, {"url": "https://e.com/b", "weight": 7}]}),
    )
    .await;
    let mut edge = d.ipc().await;
    let LookupResult::Found(link) = edge.lookup(1, "ab-edge").await else {
        panic!("ab-edge not found");
    };
    assert_eq!(
        link.variants,
        vec![
            Variant {
                url: "https://e.com/a".into(),
                weight: 2
            },
            Variant {
                url: "https://e.com/b".into(),
                weight: 7
            },
        ]
    );
}

#[tokio::test]
async fn the_cli_sets_replaces_and_removes_variants() {
    let d = Daemon::start().await;
    let out = d.cli(&[
        "link",
        "create",
        "https://e.com/cli",
        "--alias",
        "cli-ab",
        "--variant",
        "2=https://e.com/a?x=1",
        "--variant",
        "1=https://e.com/b",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (_, l) = d.req("GET", "/api/v1/links/cli-ab", None).await;
    assert_eq!(
        l["variants"],
        json!([
            {"url": "https://e.com/a?x=1", "weight": 2},
            {"url": "https://e.com/b", "weight": 1},
        ])
    );
    let out = d.cli(&["link", "update", "cli-ab", "--variant", "9=https://e.com/c"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (_, l) = d.req("GET", "/api/v1/links/cli-ab", None).await;
    assert_eq!(
        l["variants"],
        json!([{"url": "https://e.com/c", "weight": 9}])
    );
    let out = d.cli(&["link", "update", "cli-ab", "--no-variants"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (_, l) = d.req("GET", "/api/v1/links/cli-ab", None).await;
    assert_eq!(l["variants"], json!([]));
    let out = d.cli(&[
        "link",
        "create",
        "https://e.com/x",
        "--variant",
        "x=https://e.com/",
    ]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--variant"), "{}", stderr(&out));
    let out = d.cli(&[
        "link",
        "create",
        "https://e.com/x",
        "--variant",
        "0=https://e.com/",
    ]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("variants[0].weight"),
        "{}",
        stderr(&out)
    );
}

#[tokio::test]
async fn the_openapi_document_describes_variants() {
    let d = Daemon::start().await;
    let (s, doc) = d.req("GET", "/api/v1/openapi.json", None).await;
    assert_eq!(s, 200);
    let schemas = &doc["components"]["schemas"];
    let variant = &schemas["VariantInput"];
    assert_eq!(variant["properties"]["weight"]["minimum"], 1, "{variant}");
    assert_eq!(
        variant["properties"]["weight"]["maximum"], 65_535,
        "{variant}"
    );
    for input in ["CreateLink", "UpdateLink"] {
        let field = &schemas[input]["properties"]["variants"];
        assert_eq!(field["maxItems"], 8, "{input}: {field}");
    }
    assert!(schemas["LinkView"]["properties"]["variants"].is_object());
}
