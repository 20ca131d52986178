//! `export -` from one daemon, `import` into another: the data survives,
//! generated codes and click totals included, and a second import of the
//! same file skips what is already there.

mod common;

use common::{batch, stderr, stdout, unix, Daemon};
use serde_json::{json, Value};

fn links(d: &Daemon) -> Vec<Value> {
    let out = d.cli(&["link", "list", "--all", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        v["total"].as_u64().unwrap() as usize,
        v["links"].as_array().unwrap().len()
    );
    v["links"].as_array().unwrap().clone()
}

#[tokio::test]
async fn export_then_import_keeps_the_links_and_reimport_skips_them() {
    let a = Daemon::start().await;
    let clicked = a
        .create(json!({"url": "https://e.com/1", "alias": "round-one", "tags": ["news", "x"]}))
        .await;
    a.create(json!({"url": "https://e.com/2", "expires_at": "2099-01-01T00:00:00Z"}))
        .await;
    a.create(json!({
        "url": "https://e.com/apps",
        "alias": "round-apps",
        "redirect": 308,
        "max_visits": 9,
        "targets": {"ios": "https://apps.apple.com/x", "desktop": "https://e.com/desk"},
    }))
    .await;
    a.create(json!({"url": "https://e.com/off", "alias": "round-off", "disabled": true}))
        .await;
    // The same URL twice: two links, both must arrive.
    a.create(json!({"url": "https://e.com/3"})).await;
    let plain = a.create(json!({"url": "https://e.com/3"})).await;
    // Clicks through the edge's path: humans on one, bots on both.
    let mut edge = a.ipc().await;
    let id = |v: &Value| v["id"].as_u64().unwrap();
    edge.clicks(1, batch(1, id(&clicked), 5, false)).await;
    edge.clicks(2, batch(2, id(&clicked), 2, true)).await;
    edge.clicks(3, batch(3, id(&plain), 3, true)).await;
    let (_, v) = a.req("GET", "/api/v1/links/round-one", None).await;
    assert_eq!(
        (v["clicks"].as_i64(), v["bot_clicks"].as_i64()),
        (Some(7), Some(2)),
        "{v}"
    );

    let out = a.cli(&["export", "-"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let csv_text = stdout(&out);
    assert!(csv_text.starts_with("code,url,alias"), "{csv_text}");
    assert_eq!(csv_text.lines().count(), 7, "{csv_text}");

    let b = Daemon::start().await;
    let file = b.data_dir().join("export.csv");
    std::fs::write(&file, &csv_text).unwrap();
    let path = file.to_str().unwrap();
    let out = b.cli(&["import", path]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("6 imported, 0 already present, 0 bad rows"),
        "{}",
        stderr(&out)
    );
    let key = |l: &Value| {
        (
            l["url"].clone(),
            l["alias"].clone(),
            l["expires_at"].clone(),
            l["tags"].clone(),
            l["state"].clone(),
            l["redirect"].clone(),
            l["max_visits"].clone(),
            l["targets"].clone(),
            l["created_at"].clone(),
            l["generated_code"].clone(),
            l["clicks"].clone(),
            l["bot_clicks"].clone(),
        )
    };
    let mut want: Vec<_> = links(&a).iter().map(key).collect();
    let mut got: Vec<_> = links(&b).iter().map(key).collect();
    want.sort_by_key(|k| format!("{k:?}"));
    got.sort_by_key(|k| format!("{k:?}"));
    assert_eq!(got, want);
    // Later creates in the new store never take an imported code.
    let fresh = b.create(json!({"url": "https://e.com/after"})).await;
    let codes: Vec<Value> = links(&a)
        .iter()
        .map(|l| l["generated_code"].clone())
        .collect();
    assert!(!codes.contains(&fresh["generated_code"]), "{fresh}");

    // Again: nothing new, and the counts say so.
    let out = b.cli(&["import", path]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("0 imported, 6 already present, 0 bad rows"),
        "{}",
        stderr(&out)
    );
    assert_eq!(links(&b).len(), 7);
    // --json reports the same counts as one document.
    let out = b.cli(&["--json", "import", path]);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        v,
        json!({"format": "shortlink", "imported": 0, "present": 6, "bad": 0,
               "without_code": 0, "new_code": 0, "disabled": 0, "kept_otherwise": 0,
               "no_such_team": 0, "derived_alias": 0})
    );

    // Creation times come across; a future one or a bad status is refused
    // by line.
    std::fs::write(
        &file,
        "url,alias,created_at,redirect\n\
         https://e.com/old,round-old,2020-01-01T00:00:00Z,\n\
         https://e.com/new,,2999-01-01T00:00:00Z,\n\
         https://e.com/bad,,,3xx\n",
    )
    .unwrap();
    let out = b.cli(&["import", path]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("line 3: created_at: "), "{err}");
    assert!(err.contains("line 4: redirect: "), "{err}");
    assert!(
        err.contains("1 imported, 0 already present, 2 bad rows"),
        "{err}"
    );
    let (_, v) = b.req("GET", "/api/v1/links/round-old", None).await;
    assert_eq!(unix(&v["created_at"]), 1577836800i64);
}
