//! `import` of the CSV exports of Bitly, Shlink, YOURLS and Kutt, Shlink's
//! import file and YOURLS's `source,target,hits` (sample files in
//! `tests/fixtures/import/`): the format is known by the header,
//! codes that fit our alias rules are kept as aliases, the others are
//! imported without and reported, bad rows are named by line and column,
//! created dates, titles, tags and visit totals come across, one code on
//! two Shlink domains comes in twice, and a second import skips what is
//! there.

mod common;

use std::path::PathBuf;

use common::{stderr, stdout, Daemon};
use serde_json::Value;

fn fixture(name: &str) -> String {
    let p: PathBuf = [
        env!("CARGO_MANIFEST_DIR"),
        "tests",
        "fixtures",
        "import",
        name,
    ]
    .iter()
    .collect();
    p.to_str().unwrap().to_string()
}

/// Unix seconds of an API time, whether the API writes seconds or RFC 3339.
fn secs(v: &Value) -> i64 {
    match v {
        Value::Number(n) => n.as_i64().unwrap(),
        Value::String(s) => {
            time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339)
                .unwrap()
                .unix_timestamp()
        }
        other => panic!("not a time: {other}"),
    }
}

/// Imports `file`; its exit code and stderr.
fn import(d: &Daemon, args: &[&str]) -> (Option<i32>, String) {
    let out = d.cli(&[&["import"], args].concat());
    (out.status.code(), stderr(&out))
}

async fn link(d: &Daemon, code: &str) -> Value {
    let (s, v) = d.req("GET", &format!("/api/v1/links/{code}"), None).await;
    assert_eq!(s, 200, "{code}: {v}");
    v
}

/// The links whose URL contains `q`.
fn find(d: &Daemon, q: &str) -> Vec<Value> {
    let out = d.cli(&["link", "list", "--json", "-q", q]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    v["links"].as_array().unwrap().clone()
}

/// Imports the sample of one format: the summary names the format and
/// the counts, the second import finds every link present.
fn import_twice(d: &Daemon, file: &str, summary: &str, again: &str) -> String {
    let (code, err) = import(d, &[&fixture(file)]);
    assert_eq!(code, Some(2), "a bad row: exit 2: {err}");
    assert!(err.contains(summary), "{err}");
    let (code, second) = import(d, &[&fixture(file)]);
    assert_eq!(code, Some(2), "{second}");
    assert!(second.contains(again), "{second}");
    err
}

#[tokio::test]
async fn shlink_short_urls_export() {
    let d = Daemon::start().await;
    let err = import_twice(
        &d,
        "shlink.csv",
        "3 imported, 0 already present, 1 bad rows, 1 without their code (shlink format)",
        "0 imported, 3 already present, 1 bad rows (shlink format)",
    );
    assert!(
        err.contains("line 5: visits: \"lots\" is not a whole number"),
        "{err}"
    );
    assert!(
        err.contains("line 3: alias: ") && err.contains("imported without the code \"docs/intro\""),
        "{err}"
    );
    let l = link(&d, "launch-2023").await;
    assert_eq!(
        l["url"],
        "https://www.example.com/blog/launch?utm_source=shlink"
    );
    assert_eq!(l["clicks"], 1284);
    assert_eq!(l["title"], "Launch post");
    assert_eq!(l["tags"], serde_json::json!(["blog", "launch"]));
    assert_eq!(secs(&l["created_at"]), 1_681_283_702); // 2023-04-12T07:15:02Z
    assert_eq!(link(&d, "shop_1234").await["clicks"], 0);
    assert_eq!(link(&d, "shop_1234").await["title"], Value::Null);
    let docs = find(&d, "docs.example.com/intro");
    assert_eq!(docs.len(), 1, "{docs:?}");
    assert_eq!(docs[0]["alias"], Value::Null);
    assert_eq!(docs[0]["clicks"], 57);
}

#[tokio::test]
async fn yourls_url_table_export() {
    let d = Daemon::start().await;
    let err = import_twice(
        &d,
        "yourls.csv",
        "3 imported, 0 already present, 1 bad rows, 1 without their code (yourls format)",
        "0 imported, 3 already present, 1 bad rows (yourls format)",
    );
    assert!(
        err.contains("line 3: keyword: ") && err.contains("\"admin\""),
        "{err}"
    );
    assert!(err.contains("line 5: url: "), "{err}");
    // Reserved here: imported without the keyword, counted once.
    let (code, _) = import(&d, &["--format", "yourls", &fixture("yourls.csv")]);
    assert_eq!(code, Some(2));
    assert_eq!(find(&d, "intranet.example.com").len(), 1);
    let l = link(&d, "gh-yourls").await;
    assert_eq!(l["url"], "https://github.com/YOURLS/YOURLS");
    assert_eq!(l["clicks"], 1003);
    assert_eq!(l["title"], "GitHub - YOURLS/YOURLS: Your Own URL Shortener");
    assert_eq!(secs(&l["created_at"]), 1_577_934_245); // 2020-01-02 03:04:05 UTC
    assert_eq!(link(&d, "ggl").await["clicks"], 42);
}

#[tokio::test]
async fn kutt_links_with_api_field_names() {
    let d = Daemon::start().await;
    // A link of ours holds one of the codes: it stays as it is.
    d.create(serde_json::json!({"url": "https://e.com/mine", "alias": "promo-spring"}))
        .await;
    let err = import_twice(
        &d,
        "kutt.csv",
        "5 imported, 0 already present, 2 bad rows, 2 without their code, 2 imported disabled (kutt format)",
        "0 imported, 5 already present, 2 bad rows (kutt format)",
    );
    // Banned or password-protected in Kutt: in, but never an open redirect.
    for (line, code, why) in [
        (7, "banned-one", "`banned` is set (banned in Kutt)"),
        (8, "locked", "`password` is set (password-protected in Kutt"),
    ] {
        assert!(
            err.contains(&format!("line {line}: disabled: imported disabled: {why}")),
            "{err}"
        );
        let l = link(&d, code).await;
        assert_eq!(l["disabled"], true, "{l}");
    }
    assert!(
        err.contains("line 5: created_at: \"last tuesday\" is not a time"),
        "{err}"
    );
    assert!(
        err.contains("line 3: address: ") && err.contains("\"metrics\""),
        "{err}"
    );
    // Refused by the daemon, named by the file's column.
    assert!(err.contains("line 6: target: "), "{err}");
    assert!(
        err.contains("line 2: address: alias \"promo-spring\" is taken by another link"),
        "{err}"
    );
    assert_eq!(link(&d, "promo-spring").await["url"], "https://e.com/mine");
    let l = &find(&d, "shop.example.com/promo")[0];
    assert_eq!(l["alias"], Value::Null);
    assert_eq!(l["clicks"], 318);
    assert_eq!(l["title"], "Spring promo");
    assert_eq!(secs(&l["created_at"]), 1_707_553_800); // 2024-02-10T08:30:00Z
    let docs = link(&d, "docs-v2").await;
    assert_eq!(secs(&docs["expires_at"]), 4_070_908_800); // 2099-01-01
    assert_eq!(find(&d, "grafana.example.com")[0]["alias"], Value::Null);
}

#[tokio::test]
async fn bitly_links_export() {
    let d = Daemon::start().await;
    let err = import_twice(
        &d,
        "bitly.csv",
        "4 imported, 0 already present, 1 bad rows, 1 without their code, 1 imported disabled (bitly format)",
        "0 imported, 4 already present, 1 bad rows (bitly format)",
    );
    assert!(
        err.contains("line 6: disabled: imported disabled: `archived` is set (archived in Bitly)"),
        "{err}"
    );
    assert_eq!(link(&d, "old-promo").await["disabled"], true);
    assert_eq!(link(&d, "about-us").await["disabled"], false);
    assert!(err.contains("line 5: created_at: "), "{err}");
    assert!(
        err.contains("line 4: alias: ") && err.contains("\"api\""),
        "{err}"
    );
    // The custom back-half is the alias when there is one.
    let l = link(&d, "spring-sale").await;
    assert_eq!(l["url"], "https://shop.example.com/spring?utm_source=bitly");
    assert_eq!(l["clicks"], 2211);
    assert_eq!(l["title"], "Spring sale");
    assert_eq!(l["tags"], serde_json::json!(["campaign", "spring"]));
    assert_eq!(secs(&l["created_at"]), 1_646_128_800); // 2022-03-01T10:00:00Z
    assert_eq!(link(&d, "about-us").await["clicks"], 87);
    assert_eq!(find(&d, "developer.example.com")[0]["clicks"], 640);
}

#[tokio::test]
async fn shlink_import_file_with_one_code_on_two_domains() {
    let d = Daemon::start().await;
    // Forced or detected, the same file and the same outcome.
    let (code, err) = import(&d, &["--format", "shlink", &fixture("shlink-import.csv")]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(
            "4 imported, 0 already present, 1 bad rows, 2 under a derived alias (code-domain) \
             (shlink format)"
        ),
        "{err}"
    );
    assert!(err.contains("line 5: Long URL: "), "{err}");
    assert!(
        err.contains(
            "line 3: domain: \"launch\" is on s.example.com too; the row for go.example.net \
             is imported as \"launch-go-example-net\""
        ),
        "{err}"
    );
    assert!(
        err.contains("line 6: domain: ") && err.contains("\"launch-default\""),
        "{err}"
    );
    let first = link(&d, "launch").await;
    assert_eq!(first["url"], "https://www.example.com/blog/launch");
    assert_eq!(first["title"], "Launch post");
    assert_eq!(first["tags"], serde_json::json!(["blog", "launch"]));
    let second = link(&d, "launch-go-example-net").await;
    assert_eq!(second["url"], "https://www.example.net/lancement");
    assert_eq!(second["title"], "Lancement");
    assert_eq!(second["tags"], serde_json::json!(["blog", "fr"]));
    assert_eq!(
        link(&d, "launch-default").await["url"],
        "https://www.example.com/root"
    );
    assert_eq!(link(&d, "start").await["title"], Value::Null);
    let (code, again) = import(&d, &[&fixture("shlink-import.csv")]);
    assert_eq!(code, Some(2), "{again}");
    assert!(
        again.contains("0 imported, 4 already present, 1 bad rows"),
        "{again}"
    );
    // The title is searched by `q`.
    let found = find(&d, "Lancement");
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0]["alias"], "launch-go-example-net");
}

#[tokio::test]
async fn yourls_export_plugin_source_target_hits() {
    let d = Daemon::start().await;
    let (code, err) = import(&d, &["--format", "yourls", &fixture("yourls-export.csv")]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(
            "3 imported, 0 already present, 1 bad rows, 1 without their code (yourls format)"
        ),
        "{err}"
    );
    assert!(
        err.contains("line 5: hits: \"many\" is not a whole number"),
        "{err}"
    );
    assert!(
        err.contains("line 4: source: ") && err.contains("\"admin\""),
        "{err}"
    );
    let yt = link(&d, "yt").await;
    assert_eq!(yt["url"], "https://www.youtube.com/watch?v=dQw4w9WgXcQ");
    assert_eq!(yt["clicks"], 512);
    assert_eq!(link(&d, "blog").await["clicks"], 64);
    assert_eq!(find(&d, "intranet.example.com")[0]["clicks"], 3);
    let (code, again) = import(&d, &[&fixture("yourls-export.csv")]);
    assert_eq!(code, Some(2), "{again}");
    assert!(
        again.contains("0 imported, 3 already present, 1 bad rows (yourls format)"),
        "{again}"
    );
}

#[tokio::test]
async fn a_forced_format_must_match_and_an_unknown_header_is_refused() {
    let d = Daemon::start().await;
    let (code, err) = import(&d, &["--format", "kutt", &fixture("yourls.csv")]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("not a kutt export") && err.contains("`address`"),
        "{err}"
    );
    let file = d.data_dir().join("odd.csv");
    std::fs::write(&file, "name,target_url\nx,https://e.com\n").unwrap();
    let (code, err) = import(&d, &[file.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("names no known format"), "{err}");
    assert_eq!(find(&d, "e.com").len(), 0);
}
