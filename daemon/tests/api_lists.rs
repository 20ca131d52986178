//! `GET /api/v1/links`: sorting, tag/state/time filters, stable cursors,
//! and a `total` that follows the filters.

mod common;

use common::Daemon;
use serde_json::{json, Value};

/// The codes of every page of `query`, following `next_cursor`, and the
/// `total` of the first page.
async fn pages(d: &Daemon, query: &str) -> (Vec<Vec<String>>, u64) {
    let (mut out, mut total, mut cursor) = (Vec::new(), None, None::<String>);
    loop {
        let path = match &cursor {
            Some(c) => format!("/api/v1/links?{query}&cursor={c}"),
            None => format!("/api/v1/links?{query}"),
        };
        let (s, v) = d.req("GET", &path, None).await;
        assert_eq!(s, 200, "{path}: {v}");
        total.get_or_insert(v["total"].as_u64().unwrap());
        let codes: Vec<String> = v["links"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["code"].as_str().unwrap().to_string())
            .collect();
        if !codes.is_empty() {
            out.push(codes);
        }
        match v["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => return (out, total.unwrap()),
        }
    }
}

fn flat(p: &[Vec<String>]) -> Vec<&str> {
    p.iter().flatten().map(String::as_str).collect()
}

/// Links a..e in creation order: a and c expire (c first), d is
/// disabled, tags x/y/z.
async fn seed(d: &Daemon) {
    for (alias, tags, extra) in [
        ("a", json!(["x"]), json!({"expires_at": 4_000_000_000i64})),
        ("b", json!(["x", "y"]), json!({})),
        ("c", json!(["y"]), json!({"expires_at": 3_000_000_000i64})),
        ("d", json!([]), json!({"disabled": true})),
        ("e", json!(["z"]), json!({})),
    ] {
        let mut body =
            json!({"url": format!("https://example.com/{alias}"), "alias": alias, "tags": tags});
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        d.create(body.clone()).await;
        if body.get("disabled").is_some() {
            let (s, v) = d
                .req(
                    "PATCH",
                    &format!("/api/v1/links/{alias}"),
                    Some(json!({"disabled": true})),
                )
                .await;
            assert_eq!(s, 200, "{v}");
        }
    }
}

#[tokio::test]
async fn sorts_page_stably_in_both_orders() {
    let d = Daemon::start().await;
    seed(&d).await;
    let (p, total) = pages(&d, "limit=2").await;
    assert_eq!((flat(&p), total), (vec!["e", "d", "c", "b", "a"], 5));
    let (p, _) = pages(&d, "limit=2&sort=created&order=asc").await;
    assert_eq!(flat(&p), vec!["a", "b", "c", "d", "e"]);
    let (p, _) = pages(&d, "limit=2&sort=expires&order=asc").await;
    assert_eq!(flat(&p), vec!["c", "a", "b", "d", "e"]);
    let (p, _) = pages(&d, "limit=2&sort=expires").await;
    assert_eq!(flat(&p), vec!["e", "d", "b", "a", "c"]);
    // No clicks yet: ties fall back to id order.
    let (p, _) = pages(&d, "limit=3&sort=clicks&order=desc").await;
    assert_eq!(p.len(), 2);
    assert_eq!(flat(&p), vec!["e", "d", "c", "b", "a"]);
}

/// The order by clicks is the order of the counts the page shows, every
/// acknowledged click included, not of what the last fold stored.
#[tokio::test]
async fn the_clicks_order_counts_every_acknowledged_click() {
    let d = Daemon::start().await;
    seed(&d).await;
    let (_, v) = d.req("GET", "/api/v1/links/b", None).await;
    let b = v["id"].as_u64().unwrap();
    let (_, v) = d.req("GET", "/api/v1/links/c", None).await;
    let c = v["id"].as_u64().unwrap();
    let mut ipc = d.ipc().await;
    ipc.clicks(1, common::batch(1, b, 5, false)).await;
    ipc.clicks(2, common::batch(2, c, 2, false)).await;
    let (s, v) = d
        .req("GET", "/api/v1/links?sort=clicks&order=desc&limit=3", None)
        .await;
    assert_eq!(s, 200, "{v}");
    let shown: Vec<(&str, i64)> = v["links"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| (l["code"].as_str().unwrap(), l["clicks"].as_i64().unwrap()))
        .collect();
    assert_eq!(shown, [("b", 5), ("c", 2), ("e", 0)]);
    let (p, _) = pages(&d, "limit=2&sort=clicks&order=asc").await;
    assert_eq!(flat(&p), vec!["a", "d", "e", "c", "b"]);
}

#[tokio::test]
async fn filters_narrow_the_page_and_the_total() {
    let d = Daemon::start().await;
    seed(&d).await;
    for (query, want) in [
        ("tag=x", vec!["b", "a"]),
        ("tag=x&tag=z", vec!["e", "b", "a"]),
        ("tag=x,y", vec!["c", "b", "a"]),
        ("tag=x,y&tags_mode=all", vec!["b"]),
        ("tag=x&tag=y&tags_mode=all", vec!["b"]),
        ("state=disabled", vec!["d"]),
        ("state=active", vec!["e", "c", "b", "a"]),
        ("state=expired", vec![]),
        (
            "created_after=2000-01-01T00:00:00Z",
            vec!["e", "d", "c", "b", "a"],
        ),
        ("created_before=946684800", vec![]),
        ("state=active&tag=y&sort=expires&order=asc", vec!["c", "b"]),
    ] {
        let (p, total) = pages(&d, &format!("limit=1&{query}")).await;
        assert_eq!(flat(&p), want, "{query}");
        assert_eq!(total, want.len() as u64, "{query}");
    }
}

#[tokio::test]
async fn bad_list_queries_name_the_parameter() {
    let d = Daemon::start().await;
    seed(&d).await;
    let (_, v) = d
        .req("GET", "/api/v1/links?limit=2&sort=clicks", None)
        .await;
    let cursor = v["next_cursor"].as_str().unwrap().to_string();
    let too_many_tags = format!(
        "tag={}",
        (0..101)
            .map(|i| format!("t{i}"))
            .collect::<Vec<_>>()
            .join(",")
    );
    for (query, code, field) in [
        ("sort=name", "invalid_query", "sort"),
        ("order=up", "invalid_query", "order"),
        ("state=gone", "invalid_query", "state"),
        ("tags_mode=some", "invalid_query", "tags_mode"),
        ("created_after=yesterday", "invalid_query", "created_after"),
        ("bogus=1", "invalid_query", "bogus"),
        (&too_many_tags as &str, "invalid_query", "tag"),
        (
            &format!("cursor={cursor}") as &str,
            "invalid_cursor",
            "cursor",
        ),
        (
            &format!("cursor={cursor}&sort=clicks&order=asc"),
            "invalid_cursor",
            "cursor",
        ),
    ] {
        let (s, v): (u16, Value) = d.req("GET", &format!("/api/v1/links?{query}"), None).await;
        assert_eq!(s, 400, "{query}: {v}");
        assert_eq!(v["error"]["code"], code, "{query}: {v}");
        assert_eq!(v["error"]["field"], field, "{query}: {v}");
    }
    let (_, v) = d.req("GET", "/api/v1/links?bogus=1", None).await;
    let detail = v["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains("bogus") && detail.contains("sort") && detail.contains("limit"),
        "an unknown parameter lists every known one: {v}"
    );
}

#[tokio::test]
async fn the_openapi_document_describes_every_list_parameter() {
    let d = Daemon::start().await;
    let (s, doc) = d.req("GET", "/api/v1/openapi.json", None).await;
    assert_eq!(s, 200);
    let params = doc["paths"]["/api/v1/links"]["get"]["parameters"]
        .as_array()
        .unwrap();
    let find = |name: &str| {
        params
            .iter()
            .find(|p| p["name"] == name)
            .unwrap_or_else(|| panic!("no parameter {name}"))
    };
    for name in [
        "limit",
        "cursor",
        "q",
        "tag",
        "sort",
        "order",
        "tags_mode",
        "state",
        "created_after",
        "created_before",
    ] {
        let p = find(name);
        assert_eq!(p["in"], "query", "{p}");
        assert!(
            !p["description"].as_str().unwrap_or_default().is_empty(),
            "{p}"
        );
    }
    assert_eq!(find("tag")["schema"]["type"], "array", "{}", find("tag"));
    let sorts = &find("sort")["schema"];
    assert!(sorts.to_string().contains("expires"), "{sorts}");
}
