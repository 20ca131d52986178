//! What the CLI prints: tables (tab-separated when stdout is not a
//! terminal), `--json` documents, `link list --all` and `stats`.

mod common;

use common::{stderr, stdout, Daemon};
use serde_json::{json, Value};

fn ok(out: &std::process::Output) -> String {
    assert!(out.status.success(), "{}", stderr(out));
    stdout(out)
}

#[tokio::test]
async fn list_pages_short_flags_and_json() {
    let d = Daemon::start().await;
    for i in 0..5 {
        let tags = if i % 2 == 0 {
            json!(["even"])
        } else {
            json!([])
        };
        d.create(json!({"url": format!("https://e.com/{i}"), "tags": tags}))
            .await;
    }
    // One page of two, and a note that there are more.
    let out = d.cli(&["link", "list", "-n", "2"]);
    let text = ok(&out);
    assert_eq!(text.lines().count(), 3, "{text}");
    assert!(
        text.starts_with("CODE\tCLICKS\tSTATE\tURL\tEXPIRES\tTAGS\tTITLE\n"),
        "{text}"
    );
    assert!(
        stderr(&out).contains("2 of 5 links shown"),
        "{}",
        stderr(&out)
    );
    // --all pages through every link.
    let text = ok(&d.cli(&["link", "list", "-n", "2", "--all"]));
    assert_eq!(text.lines().count(), 6, "{text}");
    for i in 0..5 {
        assert!(text.contains(&format!("https://e.com/{i}\t")), "{text}");
    }
    // -t and -q filter; --json is one document with the total.
    let v: Value =
        serde_json::from_str(&ok(&d.cli(&["link", "list", "-t", "even", "--json"]))).unwrap();
    assert_eq!(v["total"], 3);
    assert_eq!(v["links"].as_array().unwrap().len(), 3);
    let v: Value =
        serde_json::from_str(&ok(&d.cli(&["--json", "link", "list", "-q", "e.com/4"]))).unwrap();
    assert_eq!(v["links"][0]["url"], "https://e.com/4");
    assert_eq!(v["total"], 1);
    // Key and app lists as JSON.
    let v: Value = serde_json::from_str(&ok(&d.cli(&["key", "list", "--json"]))).unwrap();
    assert_eq!(v["keys"][0]["name"], "admin");
    let v: Value = serde_json::from_str(&ok(&d.cli(&["app", "list", "--json"]))).unwrap();
    assert_eq!(v["apps"], json!([]));
    let text = ok(&d.cli(&["key", "list"]));
    assert!(
        text.starts_with("ID\tNAME\tPREFIX\tSCOPES\tROLE\tTEAM\tSTATUS\tCREATED\n"),
        "{text}"
    );
}

#[tokio::test]
async fn stats_prints_a_summary_and_series_on_request() {
    let d = Daemon::start().await;
    d.create(json!({"url": "https://e.com/s", "alias": "stat-me"}))
        .await;
    let text = ok(&d.cli(&["stats", "stat-me"]));
    for line in [
        "link:        stat-me",
        "clicks:      0 (0 bots)",
        "last 24 h:   0",
        "all time:    0 (0 bots)",
        "devices:     desktop 0, mobile 0, ios 0, android 0, other 0",
        "referrers:   none",
    ] {
        assert!(text.contains(line), "{line}: {text}");
    }
    assert!(!text.contains("TIME (UTC)"), "{text}");
    let text = ok(&d.cli(&[
        "stats", "stat-me", "--series", "--from", "0", "--to", "7200",
    ]));
    assert!(
        text.contains("TIME (UTC)\tCLICKS\n1970-01-01 00:00\t0\n1970-01-01 01:00\t0\n"),
        "{text}"
    );
    let v: Value = serde_json::from_str(&ok(&d.cli(&["stats", "stat-me", "--json"]))).unwrap();
    assert_eq!(v["code"], "stat-me");
    assert_eq!(v["total"], 0);
    let out = d.cli(&["stats", "missing-link"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("HTTP 404"), "{}", stderr(&out));
}
