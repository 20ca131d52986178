//! The links API against a real daemon.

mod common;

use common::{unix, Daemon};
use serde_json::{json, Value};

#[tokio::test]
async fn create_and_read_back() {
    let d = Daemon::start_with(&["--base-url", "https://default.example"]).await;
    let v = d
        .create(
            json!({"url": "https://Example.com/a?b=1", "tags": ["news", "q3"], "redirect": 301}),
        )
        .await;
    let code = v["code"].as_str().unwrap().to_string();
    assert_eq!(code.len(), 6, "default minimum length");
    assert_eq!(v["url"], "https://example.com/a?b=1", "normalized host");
    assert_eq!(v["short_url"], format!("https://default.example/{code}"));
    assert_eq!(v["redirect"], 301);
    assert_eq!(v["state"], "active");
    assert_eq!(
        d.codec().decode(code.as_bytes()).unwrap(),
        v["id"].as_u64().unwrap()
    );

    // X-Shortlink-Base from nginx wins over the configured base.
    let (s, _, got) = d
        .req_with(
            "GET",
            &format!("/api/v1/links/{code}"),
            &[
                ("x-api-key", &d.admin_key),
                ("x-shortlink-base", "https://s.example.net/"),
            ],
            None,
        )
        .await;
    assert_eq!(s, 200);
    assert_eq!(got["short_url"], format!("https://s.example.net/{code}"));
    assert_eq!(got["tags"], json!(["news", "q3"]));
    assert_eq!(got["clicks"], 0);
    // An invalid header falls back to the default.
    let (_, _, got) = d
        .req_with(
            "GET",
            &format!("/api/v1/links/{code}"),
            &[
                ("x-api-key", &d.admin_key),
                ("x-shortlink-base", "javascript:alert(1)"),
            ],
            None,
        )
        .await;
    assert_eq!(got["short_url"], format!("https://default.example/{code}"));

    let (s, e) = d.req("GET", "/api/v1/links/zzzzzz", None).await;
    assert_eq!(s, 404);
    assert_eq!(e["error"]["code"], "not_found");
}

#[tokio::test]
async fn bad_input_names_the_field() {
    let cases: Vec<(Value, u16, &str, &str)> = vec![
        (
            json!({"url": "javascript:alert(1)"}),
            422,
            "invalid_url",
            "url",
        ),
        (json!({"url": "/relative"}), 422, "invalid_url", "url"),
        (
            json!({"url": format!("https://e.com/{}", "a".repeat(3000))}),
            422,
            "invalid_url",
            "url",
        ),
        (json!({}), 422, "invalid_body", "url"),
        (
            json!({"url": "https://e.com", "bogus": 1}),
            422,
            "invalid_body",
            "bogus",
        ),
        (
            json!({"url": "https://e.com", "max_visits": "x"}),
            422,
            "invalid_body",
            "max_visits",
        ),
        (
            json!({"url": "https://e.com", "max_visits": 0}),
            422,
            "invalid_max_visits",
            "max_visits",
        ),
        (
            json!({"url": "https://e.com", "redirect": 303}),
            422,
            "invalid_redirect",
            "redirect",
        ),
        (
            json!({"url": "https://e.com", "expires_at": 1000}),
            422,
            "invalid_expiry",
            "expires_at",
        ),
        (
            json!({"url": "https://e.com", "expires_at": "tomorrow"}),
            422,
            "invalid_expiry",
            "expires_at",
        ),
        (
            json!({"url": "https://e.com", "ttl": 60, "expires_at": 4102444800i64}),
            422,
            "invalid_expiry",
            "ttl",
        ),
        (
            json!({"url": "https://e.com", "renew_on_access": true}),
            422,
            "invalid_expiry",
            "renew_on_access",
        ),
        (
            json!({"url": "https://e.com", "tags": ["a,b"]}),
            422,
            "invalid_tags",
            "tags",
        ),
        (
            json!({"url": "https://e.com", "targets": {"ios": "ftp://x"}}),
            422,
            "invalid_url",
            "targets.ios",
        ),
        (
            json!({"url": "https://e.com", "alias": "has space"}),
            422,
            "invalid_alias",
            "alias",
        ),
        (
            json!({"url": "https://e.com", "alias": "api"}),
            422,
            "alias_reserved",
            "alias",
        ),
        (
            json!({"url": "https://e.com", "alias": "Admin"}),
            422,
            "alias_reserved",
            "alias",
        ),
        (
            json!({"url": "https://e.com", "alias": "metrics"}),
            422,
            "alias_reserved",
            "alias",
        ),
        (
            json!({"url": "https://e.com", "alias": "static"}),
            422,
            "alias_reserved",
            "alias",
        ),
    ];
    let d = Daemon::start_with(&["--reserved-aliases", "static,login"]).await;
    for (body, status, code, field) in cases {
        let (s, v) = d.req("POST", "/api/v1/links", Some(body.clone())).await;
        assert_eq!(s, status, "{body} -> {v}");
        assert_eq!(v["error"]["code"], code, "{body} -> {v}");
        assert_eq!(v["error"]["field"], field, "{body} -> {v}");
        assert!(v["error"]["message"].as_str().unwrap().len() > 5);
    }
    // A generated code can never be taken as an alias.
    let real = d.create(json!({"url": "https://e.com/x"})).await;
    let (s, v) = d
        .req(
            "POST",
            "/api/v1/links",
            Some(json!({"url": "https://e.com", "alias": real["code"]})),
        )
        .await;
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (422, Some("invalid_alias")),
        "{v}"
    );
    // Malformed JSON is a 400.
    let (s, v) = d
        .req_raw(
            "POST",
            "/api/v1/links",
            &[("x-api-key", &d.admin_key)],
            b"{\"url\":".to_vec(),
        )
        .await;
    assert_eq!(s, 400);
    assert_eq!(v["error"]["code"], "invalid_json");
    // Nothing was stored by all those refusals.
    let (_, page) = d.req("GET", "/api/v1/links", None).await;
    assert_eq!(page["links"].as_array().unwrap().len(), 1);
    // Unknown routes answer JSON 404s.
    let (s, v) = d.req("GET", "/api/v1/nope", None).await;
    assert_eq!((s, v["error"]["code"].as_str()), (404, Some("no_route")));
}

#[tokio::test]
async fn aliases_conflict_and_resolve() {
    let d = Daemon::start().await;
    let a = d
        .create(json!({"url": "https://e.com/1", "alias": "launch-2030"}))
        .await;
    assert_eq!(a["code"], "launch-2030");
    assert_eq!(a["alias"], "launch-2030");
    let gen = a["generated_code"].as_str().unwrap();
    assert_ne!(gen, "launch-2030");
    let (s, v) = d
        .req(
            "POST",
            "/api/v1/links",
            Some(json!({"url": "https://e.com/2", "alias": "launch-2030"})),
        )
        .await;
    assert_eq!(s, 409);
    assert_eq!(v["error"]["code"], "alias_taken");
    assert_eq!(v["error"]["field"], "alias");
    // Both the alias and the generated code reach the link.
    for code in ["launch-2030", gen] {
        let (s, v) = d.req("GET", &format!("/api/v1/links/{code}"), None).await;
        assert_eq!(s, 200);
        assert_eq!(v["url"], "https://e.com/1");
    }
    // Aliases are case-sensitive like URL paths.
    let (s, _) = d.req("GET", "/api/v1/links/LAUNCH-2030", None).await;
    assert_eq!(s, 404);
}

#[tokio::test]
async fn dedupe_returns_the_existing_link() {
    let d = Daemon::start().await;
    let body = json!({"url": "https://e.com/same", "tags": ["a"], "dedupe": true});
    let first = d.create(body.clone()).await;
    let (s, second) = d.req("POST", "/api/v1/links", Some(body.clone())).await;
    assert_eq!(s, 200, "dedupe hit answers 200");
    assert_eq!(second["code"], first["code"]);
    // Different options: a new link.
    let other = d
        .create(json!({"url": "https://e.com/same", "tags": ["b"], "dedupe": true}))
        .await;
    assert_ne!(other["code"], first["code"]);
    // Without dedupe: always new.
    let plain = d
        .create(json!({"url": "https://e.com/same", "tags": ["a"]}))
        .await;
    assert_ne!(plain["code"], first["code"]);
    // A disabled link is not reused.
    let (s, _) = d
        .req(
            "PATCH",
            &format!("/api/v1/links/{}", first["code"].as_str().unwrap()),
            Some(json!({"disabled": true})),
        )
        .await;
    assert_eq!(s, 200);
    // The disabled one is skipped; the live plain link has the same URL and
    // options, so dedupe returns it.
    let (s, third) = d.req("POST", "/api/v1/links", Some(body)).await;
    assert_eq!(s, 200);
    assert_eq!(third["code"], plain["code"]);
}

#[tokio::test]
async fn list_paginates_and_filters() {
    let d = Daemon::start().await;
    let mut codes = Vec::new();
    for i in 0..7 {
        let tag = if i % 2 == 0 { "even" } else { "odd" };
        let v = d
            .create(json!({"url": format!("https://e.com/page{i}"), "tags": [tag]}))
            .await;
        codes.push(v["code"].as_str().unwrap().to_string());
    }
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(c) => format!("/api/v1/links?limit=3&cursor={c}"),
            None => "/api/v1/links?limit=3".to_string(),
        };
        let (s, v) = d.req("GET", &path, None).await;
        assert_eq!(s, 200);
        for l in v["links"].as_array().unwrap() {
            seen.push(l["code"].as_str().unwrap().to_string());
        }
        match v["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    codes.reverse();
    assert_eq!(seen, codes, "newest first, each exactly once");
    let (_, v) = d.req("GET", "/api/v1/links?tag=even", None).await;
    assert_eq!(v["links"].as_array().unwrap().len(), 4);
    let (_, v) = d.req("GET", "/api/v1/links?q=page3", None).await;
    let found = v["links"].as_array().unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0]["url"], "https://e.com/page3");
    let (s, v) = d.req("GET", "/api/v1/links?cursor=abc", None).await;
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (400, Some("invalid_cursor"))
    );
    let (s, v) = d.req("GET", "/api/v1/links?limit=0", None).await;
    assert_eq!((s, v["error"]["field"].as_str()), (400, Some("limit")));
    let (s, v) = d.req("GET", "/api/v1/links?limit=x", None).await;
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (400, Some("invalid_query"))
    );
}

#[tokio::test]
async fn patch_and_delete() {
    let d = Daemon::start().await;
    let v = d
        .create(json!({"url": "https://e.com/old", "alias": "promo-1"}))
        .await;
    let gen = v["generated_code"].as_str().unwrap().to_string();
    let (s, p) = d
        .req(
            "PATCH",
            "/api/v1/links/promo-1",
            Some(json!({"url": "https://e.com/new", "alias": "promo-2", "max_visits": 5, "redirect": 307, "targets": {"ios": "https://apps.apple.com/x"}})),
        )
        .await;
    assert_eq!(s, 200, "{p}");
    assert_eq!(p["url"], "https://e.com/new");
    assert_eq!(p["code"], "promo-2");
    assert_eq!(p["max_visits"], 5);
    assert_eq!(p["redirect"], 307);
    assert_eq!(p["targets"]["ios"], "https://apps.apple.com/x");
    let (s, _) = d.req("GET", "/api/v1/links/promo-1", None).await;
    assert_eq!(s, 404, "the old alias is free");
    // null clears.
    let (s, p) = d
        .req(
            "PATCH",
            &format!("/api/v1/links/{gen}"),
            Some(json!({"alias": null, "max_visits": null, "redirect": null})),
        )
        .await;
    assert_eq!(s, 200);
    assert_eq!(p["alias"], Value::Null);
    assert_eq!(p["code"], gen);
    assert_eq!(p["max_visits"], Value::Null);
    // Failures.
    d.create(json!({"url": "https://e.com/other", "alias": "taken-1"}))
        .await;
    let (s, e) = d
        .req(
            "PATCH",
            &format!("/api/v1/links/{gen}"),
            Some(json!({"alias": "taken-1"})),
        )
        .await;
    assert_eq!((s, e["error"]["code"].as_str()), (409, Some("alias_taken")));
    let (s, e) = d
        .req(
            "PATCH",
            &format!("/api/v1/links/{gen}"),
            Some(json!({"url": "nope"})),
        )
        .await;
    assert_eq!((s, e["error"]["field"].as_str()), (422, Some("url")));
    let (_, still) = d.req("GET", &format!("/api/v1/links/{gen}"), None).await;
    assert_eq!(
        still["url"], "https://e.com/new",
        "a refused patch changes nothing"
    );
    let (s, _) = d
        .req(
            "PATCH",
            "/api/v1/links/nosuch",
            Some(json!({"disabled": true})),
        )
        .await;
    assert_eq!(s, 404);
    // Disable shows as state.
    let (_, p) = d
        .req(
            "PATCH",
            &format!("/api/v1/links/{gen}"),
            Some(json!({"disabled": true})),
        )
        .await;
    assert_eq!(p["state"], "disabled");
    // Delete.
    let (s, body) = d.req("DELETE", &format!("/api/v1/links/{gen}"), None).await;
    assert_eq!((s, body), (204, Value::Null));
    let (s, _) = d.req("GET", &format!("/api/v1/links/{gen}"), None).await;
    assert_eq!(s, 404);
    let (s, _) = d.req("DELETE", &format!("/api/v1/links/{gen}"), None).await;
    assert_eq!(s, 404);
}

#[tokio::test]
async fn batch_mixed_good_and_bad() {
    let d = Daemon::start().await;
    d.create(json!({"url": "https://e.com/x", "alias": "exists-1"}))
        .await;
    let (s, v) = d
        .req(
            "POST",
            "/api/v1/links/batch",
            Some(json!({"links": [
                {"url": "https://e.com/1"},
                {"url": "not a url"},
                {"url": "https://e.com/2", "alias": "exists-1"},
                {"url": "https://e.com/3", "alias": "dup-1"},
                {"url": "https://e.com/4", "alias": "dup-1"},
                {"url": 5},
                {"url": "https://e.com/5", "alias": "api"},
                {"url": "https://e.com/6", "tags": ["t"]},
            ]})),
        )
        .await;
    assert_eq!(s, 200, "{v}");
    let statuses: Vec<u64> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_u64().unwrap())
        .collect();
    assert_eq!(statuses, vec![201, 422, 409, 201, 409, 422, 422, 201]);
    let indexes: Vec<u64> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["index"].as_u64().unwrap())
        .collect();
    assert_eq!(indexes, (0..8).collect::<Vec<_>>());
    assert_eq!(
        (v["created"].as_u64(), v["failed"].as_u64()),
        (Some(3), Some(5))
    );
    assert_eq!(v["results"][1]["error"]["field"], "url");
    assert_eq!(v["results"][2]["error"]["code"], "alias_taken");
    assert_eq!(v["results"][6]["error"]["code"], "alias_reserved");
    // An item that does not parse says why, without a position inside it.
    assert_eq!(
        v["results"][5]["error"]["message"],
        "invalid type: integer `5`, expected a string"
    );
    // The good ones are stored and readable.
    for i in [0usize, 3, 7] {
        let code = v["results"][i]["link"]["code"].as_str().unwrap();
        let (s, l) = d.req("GET", &format!("/api/v1/links/{code}"), None).await;
        assert_eq!(s, 200);
        assert_eq!(l["url"], v["results"][i]["link"]["url"]);
    }
    let (_, page) = d.req("GET", "/api/v1/links?limit=100", None).await;
    assert_eq!(page["links"].as_array().unwrap().len(), 4);
}

#[tokio::test]
async fn batch_short_results_answer_code_and_short_url() {
    let d = Daemon::start().await;
    let (s, v) = d
        .req(
            "POST",
            "/api/v1/links/batch?results=short",
            Some(json!({"links": [
                {"url": "https://e.com/s1"},
                {"url": "not a url"},
                {"url": "https://e.com/s2", "alias": "short-two"},
            ]})),
        )
        .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(
        (v["created"].as_u64(), v["failed"].as_u64()),
        (Some(2), Some(1))
    );
    let keys = |i: usize| -> Vec<String> {
        let mut k: Vec<String> = v["results"][i]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        k.sort();
        k
    };
    // A good item: its code and short URL, nothing else; a refused one: the error.
    assert_eq!(keys(0), ["code", "index", "short_url", "status"]);
    assert_eq!(keys(1), ["error", "index", "status"]);
    assert_eq!(v["results"][1]["error"]["field"], "url");
    assert_eq!(v["results"][2]["code"], "short-two");
    for (i, url) in [(0usize, "https://e.com/s1"), (2, "https://e.com/s2")] {
        let item = &v["results"][i];
        assert_eq!(item["status"], 201);
        let code = item["code"].as_str().unwrap();
        let (s, l) = d.req("GET", &format!("/api/v1/links/{code}"), None).await;
        assert_eq!(s, 200);
        // The same short URL and link as the full view shows.
        assert_eq!(
            (&l["url"], &l["short_url"]),
            (&json!(url), &item["short_url"])
        );
    }
    // Nothing taken: 422 with the short items; a value it does not know: 400.
    let (s, v) = d
        .req(
            "POST",
            "/api/v1/links/batch?results=short",
            Some(json!({"links": [{"url": 5}]})),
        )
        .await;
    assert_eq!(
        (s, v["results"][0]["status"].as_u64()),
        (422, Some(422)),
        "{v}"
    );
    let (s, v) = d
        .req(
            "POST",
            "/api/v1/links/batch?results=codes",
            Some(json!({"links": [{"url": "https://e.com/s3"}]})),
        )
        .await;
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (400, Some("invalid_query")),
        "{v}"
    );
    let (_, page) = d.req("GET", "/api/v1/links?limit=100", None).await;
    assert_eq!(
        page["links"].as_array().unwrap().len(),
        2,
        "the refused batch stored nothing"
    );
}
#[tokio::test]
async fn batch_limit_is_ten_thousand() {
    let d = Daemon::start().await;
    let items: Vec<Value> = (0..10_000)
        .map(|i| json!({"url": format!("https://e.com/{i}")}))
        .collect();
    let (s, v) = d
        .req("POST", "/api/v1/links/batch", Some(json!({"links": items})))
        .await;
    assert_eq!(s, 200);
    assert_eq!(v["created"], 10_000);
    let codes: std::collections::HashSet<&str> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["link"]["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes.len(), 10_000, "every code distinct");
    let too_many: Vec<Value> = (0..10_001)
        .map(|_| json!({"url": "https://e.com/"}))
        .collect();
    let (s, v) = d
        .req(
            "POST",
            "/api/v1/links/batch",
            Some(json!({"links": too_many})),
        )
        .await;
    assert_eq!(s, 413);
    assert_eq!(v["error"]["code"], "batch_too_large");
    // A batch of which nothing was taken is refused as a whole (422), with
    // the same per-item results; an empty batch is fine.
    let (s, v) = d
        .req(
            "POST",
            "/api/v1/links/batch",
            Some(json!({"links": [{"url": "not a url"}, {"url": 5}]})),
        )
        .await;
    assert_eq!(s, 422, "{v}");
    assert_eq!(
        (v["created"].as_u64(), v["failed"].as_u64()),
        (Some(0), Some(2))
    );
    assert_eq!(v["results"][1]["error"]["code"], "invalid_body");
    let (s, v) = d
        .req("POST", "/api/v1/links/batch", Some(json!({"links": []})))
        .await;
    assert_eq!((s, v["created"].as_u64()), (200, Some(0)), "{v}");
}

#[tokio::test]
async fn expiry_and_ttl_fields() {
    let d = Daemon::start().await;
    let now = shortlinkd::timestamp::unix_now();
    let v = d
        .create(json!({"url": "https://e.com/", "ttl": 3600}))
        .await;
    let exp = unix(&v["expires_at"]);
    assert!((now + 3599..=now + 3602).contains(&exp), "{exp}");
    let v = d
        .create(json!({"url": "https://e.com/", "expires_at": "2099-01-01T00:00:00Z"}))
        .await;
    assert_eq!(unix(&v["expires_at"]), 4070908800i64);
    let v = d
        .create(json!({"url": "https://e.com/", "ttl": 100, "renew_on_access": true}))
        .await;
    assert_eq!(v["renew_ttl"], 100);
    let v = d
        .create(json!({"url": "https://e.com/", "renew_on_access": 50}))
        .await;
    assert_eq!(v["renew_ttl"], 50);
    assert!(unix(&v["expires_at"]) >= now + 49);
    // A link past its expiry reads as expired (the edge gets 410).
    let v = d.create(json!({"url": "https://e.com/", "ttl": 1})).await;
    let code = v["code"].as_str().unwrap().to_string();
    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
    let (_, v) = d.req("GET", &format!("/api/v1/links/{code}"), None).await;
    assert_eq!(v["state"], "expired");
}

#[tokio::test]
async fn health_and_openapi() {
    let d = Daemon::start().await;
    let (s, _, v) = d.req_with("GET", "/api/v1/health", &[], None).await;
    assert_eq!(s, 200);
    assert_eq!(v["status"], "ok");
    let (_, v) = d.req("GET", "/api/v1/health", None).await;
    assert_eq!(v["key_fingerprint"], d.fingerprint().to_string());
    let (s, doc) = d.req("GET", "/api/v1/openapi.json", None).await;
    assert_eq!(s, 200);
    let paths = doc["paths"].as_object().unwrap();
    for (p, methods) in [
        ("/api/v1/links", &["post", "get"][..]),
        ("/api/v1/links/batch", &["post"]),
        ("/api/v1/links/{code}", &["get", "patch", "delete"]),
        ("/api/v1/links/{code}/stats", &["get"]),
        ("/api/v1/links/{code}/qr", &["get"]),
        ("/api/v1/keys", &["post", "get"]),
        ("/api/v1/keys/{id}", &["delete"]),
        ("/api/v1/apps", &["post", "get"]),
        ("/api/v1/apps/{app_id}", &["delete"]),
        ("/api/v1/users", &["post"]),
        ("/api/v1/users/{name}/password", &["put"]),
        ("/api/v1/health", &["get"]),
        ("/api/v1/openapi.json", &["get"]),
        ("/metrics", &["get"]),
    ] {
        for m in methods {
            assert!(
                paths[p][m].is_object(),
                "{m} {p} missing from the OpenAPI document"
            );
        }
    }
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    for s in [
        "CreateLink",
        "UpdateLink",
        "LinkView",
        "ErrorBody",
        "BatchResponse",
        "StatsView",
    ] {
        assert!(schemas.contains_key(s), "schema {s} missing");
    }
    assert!(paths["/api/v1/links"]["post"]["responses"]["409"].is_object());
    // Errors are documented as the problem documents they are.
    let conflict = &paths["/api/v1/links"]["post"]["responses"]["409"]["content"];
    assert!(
        conflict["application/problem+json"].is_object(),
        "{conflict}"
    );
    assert!(conflict.get("application/json").is_none(), "{conflict}");
    let created = &paths["/api/v1/links"]["post"]["responses"]["201"]["content"];
    assert!(created["application/json"].is_object(), "{created}");
}

/// The served OpenAPI document passes `openapi-spec-validator` (installed
/// by `make deps`), with unique operationIds, query parameters in the
/// query and servers (scripts/openapi-check.py).
#[tokio::test]
async fn the_openapi_document_is_valid() {
    let d = Daemon::start().await;
    let (s, doc) = d.req("GET", "/api/v1/openapi.json", None).await;
    assert_eq!(s, 200);
    let file = d.data_dir().join("openapi.json");
    std::fs::write(&file, doc.to_string()).unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/openapi-check.py");
    let out = std::process::Command::new("python3")
        .arg(script)
        .arg(&file)
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "the OpenAPI document has problems (the validator comes with `make deps`):\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
