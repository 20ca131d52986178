//! A link's own `forward_query` (unset, `true`, `false`) through every way
//! in and out: the API (create, batch, edit, read, list), the CLI, the
//! export and import file, and the edge lookup that carries it to nginx
//! with the link's creation time.

mod common;

use common::{stderr, stdout, Daemon};
use serde_json::{json, Value};
use shortlink_core::ipc::LookupResult;

#[tokio::test]
async fn the_api_keeps_the_three_states_and_edits_them() {
    let d = Daemon::start().await;
    let on = d
        .create(json!({"url": "https://e.com/on", "alias": "fq-on", "forward_query": true}))
        .await;
    assert_eq!(on["forward_query"], true, "{on}");
    let off = d
        .create(json!({"url": "https://e.com/off", "alias": "fq-off", "forward_query": false}))
        .await;
    assert_eq!(off["forward_query"], false);
    let unset = d
        .create(json!({"url": "https://e.com/unset", "alias": "fq-unset"}))
        .await;
    assert_eq!(unset["forward_query"], Value::Null);
    let null = d
        .create(json!({"url": "https://e.com/null", "forward_query": null}))
        .await;
    assert_eq!(null["forward_query"], Value::Null);

    let (s, got) = d.req("GET", "/api/v1/links/fq-off", None).await;
    assert_eq!((s, &got["forward_query"]), (200, &json!(false)));
    let (_, page) = d.req("GET", "/api/v1/links?limit=10", None).await;
    let listed: Vec<(Value, Value)> = page["links"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| (l["url"].clone(), l["forward_query"].clone()))
        .collect();
    assert!(listed.contains(&(json!("https://e.com/on"), json!(true))));
    assert!(listed.contains(&(json!("https://e.com/off"), json!(false))));
    assert!(listed.contains(&(json!("https://e.com/unset"), Value::Null)));

    // Edits: a value, then null hands the choice back to the location;
    // an edit without the field keeps it.
    let (s, p) = d
        .req(
            "PATCH",
            "/api/v1/links/fq-unset",
            Some(json!({"forward_query": false})),
        )
        .await;
    assert_eq!((s, &p["forward_query"]), (200, &json!(false)), "{p}");
    let (_, p) = d
        .req(
            "PATCH",
            "/api/v1/links/fq-unset",
            Some(json!({"url": "https://e.com/moved"})),
        )
        .await;
    assert_eq!(p["forward_query"], false, "an absent field is kept");
    let (_, p) = d
        .req(
            "PATCH",
            "/api/v1/links/fq-unset",
            Some(json!({"forward_query": null})),
        )
        .await;
    assert_eq!(p["forward_query"], Value::Null);

    // Not a boolean: refused with the field named, nothing stored.
    let (s, e) = d
        .req(
            "POST",
            "/api/v1/links",
            Some(json!({"url": "https://e.com/x", "forward_query": "yes"})),
        )
        .await;
    assert_eq!(s, 422, "{e}");
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("forward_query"),
        "{e}"
    );
    let (s, e) = d
        .req(
            "PATCH",
            "/api/v1/links/fq-on",
            Some(json!({"forward_query": 1})),
        )
        .await;
    assert_eq!(s, 422, "{e}");

    // A batch carries it per item.
    let (s, v) = d
        .req(
            "POST",
            "/api/v1/links/batch",
            Some(json!({"links": [
                {"url": "https://e.com/b1", "forward_query": true},
                {"url": "https://e.com/b2"},
            ]})),
        )
        .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["results"][0]["link"]["forward_query"], true);
    assert_eq!(v["results"][1]["link"]["forward_query"], Value::Null);

    // dedupe: the same URL with another choice is another link.
    let a = d
        .create(json!({"url": "https://e.com/d", "dedupe": true}))
        .await;
    let b = d
        .create(json!({"url": "https://e.com/d", "dedupe": true, "forward_query": true}))
        .await;
    let (s, c) = d
        .req(
            "POST",
            "/api/v1/links",
            Some(json!({"url": "https://e.com/d", "dedupe": true})),
        )
        .await;
    assert_eq!(s, 200, "the existing link: {c}");
    assert_ne!(a["id"], b["id"]);
    assert_eq!(a["id"], c["id"]);
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

#[tokio::test]
async fn the_edge_lookup_carries_the_choice_and_the_creation_time() {
    let d = Daemon::start().await;
    let before = now();
    d.create(json!({"url": "https://e.com/on", "alias": "edge-on", "forward_query": true}))
        .await;
    d.create(json!({"url": "https://e.com/off", "alias": "edge-off", "forward_query": false}))
        .await;
    d.create(json!({"url": "https://e.com/unset", "alias": "edge-unset"}))
        .await;
    let mut edge = d.ipc().await;
    for (i, (code, want)) in [
        ("edge-on", Some(true)),
        ("edge-off", Some(false)),
        ("edge-unset", None),
    ]
    .into_iter()
    .enumerate()
    {
        let LookupResult::Found(link) = edge.lookup(i as u32 + 1, code).await else {
            panic!("{code} not found");
        };
        assert_eq!(link.forward_query, want, "{code}");
        assert!(
            (before..=now() + 1).contains(&link.created_at),
            "{code}: created_at {}",
            link.created_at
        );
    }
}

#[tokio::test]
async fn the_cli_sets_it_and_the_export_file_carries_it() {
    let d = Daemon::start().await;
    let out = d.cli(&[
        "link",
        "create",
        "https://e.com/cli",
        "--alias",
        "cli-fq",
        "--forward-query",
        "on",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (_, l) = d.req("GET", "/api/v1/links/cli-fq", None).await;
    assert_eq!(l["forward_query"], true);
    let out = d.cli(&["link", "update", "cli-fq", "--forward-query", "off"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (_, l) = d.req("GET", "/api/v1/links/cli-fq", None).await;
    assert_eq!(l["forward_query"], false);
    d.create(json!({"url": "https://e.com/plain", "alias": "cli-plain"}))
        .await;
    let out = d.cli(&[
        "link",
        "create",
        "https://e.com/x",
        "--forward-query",
        "maybe",
    ]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--forward-query"), "{}", stderr(&out));

    let out = d.cli(&["export", "-"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let csv_text = stdout(&out);
    assert!(
        csv_text
            .lines()
            .next()
            .unwrap()
            .contains(",forward_query,country_targets,protected,variants,check,"),
        "{csv_text}"
    );

    let other = Daemon::start().await;
    let file = other.data_dir().join("export.csv");
    std::fs::write(&file, &csv_text).unwrap();
    let out = other.cli(&["import", file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (_, l) = other.req("GET", "/api/v1/links/cli-fq", None).await;
    assert_eq!(l["forward_query"], false, "{l}");
    let (_, l) = other.req("GET", "/api/v1/links/cli-plain", None).await;
    assert_eq!(l["forward_query"], Value::Null, "{l}");

    // A cell that is no yes/no is a bad row naming the column.
    let bad = other.data_dir().join("bad.csv");
    std::fs::write(
        &bad,
        "url,alias,forward_query\nhttps://e.com/y,bad-fq,sometimes\n",
    )
    .unwrap();
    let out = other.cli(&["import", bad.to_str().unwrap()]);
    let text = format!("{}{}", stdout(&out), stderr(&out));
    assert!(
        text.contains("forward_query") && text.contains("sometimes"),
        "{text}"
    );
    let (s, _) = other.req("GET", "/api/v1/links/bad-fq", None).await;
    assert_eq!(s, 404);
}
