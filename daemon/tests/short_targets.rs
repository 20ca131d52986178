//! A link may not point at a short URL of its own deployment: not at a
//! generated code or a known alias under the configured base or a base
//! nginx passed in `X-Shortlink-Base`, on any path a target comes in by.

mod common;

use common::{http_unix, Daemon};
use serde_json::{json, Value};

async fn daemon() -> Daemon {
    Daemon::start_with(&["--base-url", "https://s.example"]).await
}

/// 422 `target_is_short_link` on `field`, naming the code.
fn assert_loop(what: &str, field: &str, code: &str, (s, v): (u16, Value)) {
    assert_eq!(s, 422, "{what} was accepted: {v}");
    assert_eq!(v["error"]["code"], "target_is_short_link", "{what}: {v}");
    assert_eq!(v["error"]["field"], field, "{what}: {v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("\"{code}\"")),
        "{what}: {message}"
    );
}

async fn create(d: &Daemon, body: Value) -> (u16, Value) {
    d.req("POST", "/api/v1/links", Some(body)).await
}

#[tokio::test]
async fn targets_on_the_configured_base_are_refused() {
    let d = daemon().await;
    let a = d.create(json!({"url": "https://e.com/a"})).await;
    let code = a["code"].as_str().unwrap().to_string();
    // A code no link has yet is refused as well: it will be handed out.
    let unused = d.codec().encode(a["id"].as_u64().unwrap() + 1000);
    let unused = unused.as_str();
    let escaped: String = code.bytes().map(|b| format!("%{b:02X}")).collect();
    for (url, leads_to) in [
        (format!("https://s.example/{code}"), code.as_str()),
        (format!("http://S.EXAMPLE.//{code}?utm=x#top"), &code),
        (format!("https://s.example/{escaped}"), &code),
        (format!("https://s.example/{unused}"), unused),
    ] {
        assert_loop(
            &url,
            "url",
            leads_to,
            create(&d, json!({ "url": url })).await,
        );
        let r = create(
            &d,
            json!({"url": "https://e.com/", "targets": {"android": url}}),
        )
        .await;
        assert_loop(&url, "targets.android", leads_to, r);
    }
    // Aliases: an existing one, and the link's own.
    d.create(json!({"url": "https://e.com/p", "alias": "promo"}))
        .await;
    let r = create(&d, json!({"url": "https://s.example/promo"})).await;
    assert_loop("alias promo", "url", "promo", r);
    let r = create(&d, json!({"url": "https://s.example/me", "alias": "me"})).await;
    assert_loop("own alias", "url", "me", r);
    // Not short URLs: another host, a subdomain, a deeper path, an alias
    // nobody has, the bare base.
    for url in [
        format!("https://other.example/{code}"),
        format!("https://www.s.example/{code}"),
        format!("https://s.example:8443/{code}"),
        format!("http://127.0.0.1:9000/{code}"),
        format!("https://s.example/x/{code}"),
        "https://s.example/nobody-has-this".to_string(),
        "https://s.example/".to_string(),
    ] {
        let (s, v) = create(&d, json!({ "url": url })).await;
        assert_eq!(s, 201, "{url}: {v}");
    }
}

#[tokio::test]
async fn batch_and_import_refuse_short_targets() {
    let d = daemon().await;
    let code = d.create(json!({"url": "https://e.com/a"})).await["code"]
        .as_str()
        .unwrap()
        .to_string();
    let (s, v) = d
        .req(
            "POST",
            "/api/v1/links/batch",
            Some(json!({"links": [
                {"url": "https://e.com/first", "alias": "first"},
                {"url": "https://s.example/first"},
                {"url": format!("https://s.example/{code}")},
                {"url": "https://e.com/ok"},
            ]})),
        )
        .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(
        (v["created"].as_u64(), v["failed"].as_u64()),
        (Some(2), Some(2)),
        "{v}"
    );
    for (i, leads_to) in [(1, "first"), (2, code.as_str())] {
        let item = &v["results"][i];
        assert_eq!(item["status"], 422, "{item}");
        assert_eq!(item["error"]["code"], "target_is_short_link", "{item}");
        assert!(item["error"]["message"]
            .as_str()
            .unwrap()
            .contains(&format!("\"{leads_to}\"")));
    }
    let (s, _, v) = http_unix(
        &d.data_dir().join("control.sock"),
        "POST",
        "/api/v1/import",
        &[],
        Some(
            json!({"rows": [
                [2, format!("https://s.example/{code}"), null, null, null],
                [3, "https://s.example/first", null, null, null],
                [4, "https://s.example/self", "self", null, null],
                [5, "https://e.com/fine", null, null, null],
            ]})
            .to_string()
            .into_bytes(),
        ),
    )
    .await
    .unwrap();
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["imported"], 1, "{v}");
    let lines: Vec<(u64, &str)> = v["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["line"].as_u64().unwrap(), e["field"].as_str().unwrap()))
        .collect();
    assert_eq!(lines, vec![(2, "url"), (3, "url"), (4, "url")], "{v}");
}

#[tokio::test]
async fn bases_nginx_passed_are_served_too() {
    let d = daemon().await;
    let code = d.create(json!({"url": "https://e.com/a"})).await["code"]
        .as_str()
        .unwrap()
        .to_string();
    let url = format!("https://go.example.net/to/{code}");
    // The very request that brings a new base is judged with it.
    let (s, _, v) = d
        .req_with(
            "POST",
            "/api/v1/links",
            &[
                ("x-api-key", &d.admin_key),
                ("x-shortlink-base", "https://Go.Example.NET/to/"),
            ],
            Some(json!({ "url": url })),
        )
        .await;
    assert_loop("new base", "url", &code, (s, v));
    // And remembered for requests that do not carry it.
    assert_loop(
        "known base",
        "url",
        &code,
        create(&d, json!({ "url": url })).await,
    );
    // Outside the base's path it is an ordinary target.
    let (s, v) = create(&d, json!({"url": format!("https://go.example.net/{code}")})).await;
    assert_eq!(s, 201, "{v}");
}

#[tokio::test]
async fn patch_refuses_short_targets() {
    let d = daemon().await;
    let code = d.create(json!({"url": "https://e.com/a"})).await["code"]
        .as_str()
        .unwrap()
        .to_string();
    d.create(json!({"url": "https://e.com/p", "alias": "promo"}))
        .await;
    let other = d.create(json!({"url": "https://s.example/later"})).await;
    let path = format!("/api/v1/links/{}", other["code"].as_str().unwrap());
    let short = format!("https://s.example/{code}");
    let r = d.req("PATCH", &path, Some(json!({ "url": short }))).await;
    assert_loop("patch url", "url", &code, r);
    let r = d
        .req("PATCH", &path, Some(json!({"targets": {"desktop": short}})))
        .await;
    assert_loop("patch targets", "targets.desktop", &code, r);
    let r = d
        .req(
            "PATCH",
            &path,
            Some(json!({"url": "https://s.example/promo"})),
        )
        .await;
    assert_loop("patch to an alias", "url", "promo", r);
    // Taking the alias its own target names would make it a loop.
    let r = d.req("PATCH", &path, Some(json!({"alias": "later"}))).await;
    assert_loop("patch alias", "url", "later", r);
    let (_, got) = d.req("GET", &path, None).await;
    assert_eq!(
        (got["url"].as_str(), got["alias"].as_str()),
        (Some("https://s.example/later"), None),
        "nothing was changed"
    );
    // Another alias is fine.
    let (s, v) = d
        .req("PATCH", &path, Some(json!({"alias": "elsewhere"})))
        .await;
    assert_eq!(s, 200, "{v}");
}
