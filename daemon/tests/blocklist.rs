//! The blocklist file through the real daemon (on the suite's store): read
//! at start and again when it changes, its hosts flag the stored links (a
//! takedown record listing them), and with `blocklist_disable` switch them
//! off and refuse new ones; bad lines are reported by number.

mod common;

use std::time::Duration;

use common::{eventually, Daemon};
use serde_json::{json, Value};

async fn takedowns(d: &Daemon) -> Vec<Value> {
    let (s, v) = d.req("GET", "/api/v1/takedowns", None).await;
    assert_eq!(s, 200, "{v}");
    v["takedowns"].as_array().unwrap().clone()
}

#[tokio::test]
async fn the_file_flags_then_disables_the_links_it_lists() {
    let files = tempfile::tempdir().unwrap();
    let file = files.path().join("unsafe-hosts.txt");
    std::fs::write(&file, "# nothing yet\n").unwrap();
    let path = file.to_str().unwrap();
    let mut d = Daemon::start_with(&["--blocklist-file", path]).await;
    let phish = d
        .create(json!({"url": "https://login.phish.example/x"}))
        .await;
    d.create(json!({"url": "https://ads.example/banner"})).await;
    let fine = d.create(json!({"url": "https://fine.example/"})).await;
    assert!(
        takedowns(&d).await.is_empty(),
        "an empty list records nothing"
    );

    // A changed file is read again: the listed links are flagged, not off.
    std::fs::write(
        &file,
        "0.0.0.0 phish.example\n||ads.example^\nnot a host line\n",
    )
    .unwrap();
    assert!(
        eventually(Duration::from_secs(15), || async {
            !takedowns(&d).await.is_empty()
        })
        .await,
        "the changed file was never applied: {}",
        d.log()
    );
    let t = &takedowns(&d).await[0];
    assert_eq!(
        (&t["kind"], &t["matched"], &t["disabled"], &t["created_by"]),
        (
            &json!("blocklist"),
            &json!(2),
            &json!(0),
            &json!("blocklist")
        ),
        "{t}"
    );
    assert!(
        d.log().contains("line 3"),
        "the bad line is named: {}",
        d.log()
    );
    let (s, page) = d
        .req("GET", &format!("/api/v1/takedowns/{}/links", t["id"]), None)
        .await;
    assert_eq!(s, 200, "{page}");
    let listed: Vec<(&str, bool)> = page["links"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["url"].as_str().unwrap(),
                l["switched_off"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(listed.len(), 2, "{page}");
    assert!(
        listed.iter().all(|(u, off)| !off && !u.contains("fine")),
        "{page}"
    );
    let code = phish["code"].as_str().unwrap();
    let (_, got) = d.req("GET", &format!("/api/v1/links/{code}"), None).await;
    assert_eq!(got["taken_down"], false, "flag mode leaves it on: {got}");

    // With blocklist_disable the same file switches them off, and a new
    // link to a listed host is refused.
    d.restart_with(&["--blocklist-disable=true"]).await;
    assert!(
        eventually(Duration::from_secs(15), || async {
            takedowns(&d).await.len() == 2
        })
        .await,
        "{}",
        d.log()
    );
    let t = &takedowns(&d).await[0];
    assert_eq!(
        (&t["matched"], &t["disabled"]),
        (&json!(2), &json!(2)),
        "{t}"
    );
    let (_, got) = d.req("GET", &format!("/api/v1/links/{code}"), None).await;
    assert_eq!(got["taken_down"], true, "{got}");
    let fine_code = fine["code"].as_str().unwrap();
    let (_, got) = d
        .req("GET", &format!("/api/v1/links/{fine_code}"), None)
        .await;
    assert_eq!(got["taken_down"], false, "{got}");
    let (s, e) = d
        .req(
            "POST",
            "/api/v1/links",
            Some(json!({"url": "https://new.phish.example/"})),
        )
        .await;
    assert_eq!((s, e["code"].as_str()), (422, Some("invalid_url")), "{e}");
    assert!(e["detail"].as_str().unwrap().contains("blocklist"), "{e}");
    // Started again with the same file: applied already.
    d.restart_with(&[]).await;
    let said = || async { d.log().contains("these contents were applied already") };
    assert!(
        eventually(Duration::from_secs(10), said).await,
        "{}",
        d.log()
    );
    assert_eq!(takedowns(&d).await.len(), 2);
}
