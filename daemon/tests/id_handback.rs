//! Ids across restarts and the longest code (on SQLite and, under
//! with-pg, PostgreSQL): a clean shutdown hands the ids it leased and never
//! used back, so the next start goes on where the last one stopped; a
//! killed daemon loses its leases but never hands an id out twice; once
//! every code up to `max_length` is taken, creates are refused with a
//! clear error instead of growing longer codes.

mod common;

use common::Daemon;
use serde_json::json;
use shortlink_core::Codec;

/// The id of a new link.
async fn create_id(d: &Daemon, i: usize) -> u64 {
    let v = d
        .create(json!({ "url": format!("https://example.com/ids/{i}") }))
        .await;
    let code = v["code"].as_str().expect("code");
    d.codec().decode(code.as_bytes()).expect("a generated code")
}

#[tokio::test]
async fn a_clean_restart_wastes_no_ids_and_a_kill_reuses_none() {
    let mut d = Daemon::start_with(&["--segment-size", "50"]).await;
    let mut ids = Vec::new();
    for i in 0..5 {
        ids.push(create_id(&d, i).await);
    }
    for round in 0..3 {
        d.restart_with(&[]).await;
        let next = create_id(&d, 100 + round).await;
        assert_eq!(
            next,
            ids.last().unwrap() + 1,
            "after clean restart {round}, ids so far {ids:?}: {}",
            d.log()
        );
        ids.push(next);
    }
    assert!(d.log().contains("handed unused ids back"), "{}", d.log());
    // A killed daemon cannot hand anything back: its leases are skipped,
    // never handed out again.
    d.kill9();
    d.spawn().await;
    let after_kill = create_id(&d, 200).await;
    assert!(
        after_kill > ids.last().unwrap() + 1,
        "{after_kill} after {ids:?}"
    );
    assert!(!ids.contains(&after_kill));
}

#[tokio::test]
async fn codes_stop_at_max_length_with_a_clear_error() {
    let mut d = Daemon::start_with(&[
        "--min-length",
        "2",
        "--max-length",
        "2",
        "--segment-size",
        "7",
    ])
    .await;
    // Id 0 is never handed out.
    let first = Codec::first_id_of_length(2).max(1);
    let available = Codec::first_id_of_length(3) - first;
    let mut seen = std::collections::HashSet::new();
    for i in 0..available as usize {
        let (status, v) = d
            .req(
                "POST",
                "/api/v1/links",
                Some(json!({ "url": format!("https://example.com/short/{i}") })),
            )
            .await;
        let missing: Vec<u64> = (first..Codec::first_id_of_length(3))
            .filter(|id| !seen.contains(d.codec().encode(*id).as_str()))
            .collect();
        assert_eq!(
            status,
            201,
            "link {i} of {available}: {v}, not handed out {missing:?}\n{}",
            d.log()
        );
        let code = v["code"].as_str().unwrap().to_string();
        assert_eq!(code.len(), 2, "{code}");
        assert!(seen.insert(code));
        // A restart in the middle hands its spare ids back.
        if i == 20 {
            d.restart_with(&[]).await;
        }
    }
    let (status, body) = d
        .req(
            "POST",
            "/api/v1/links",
            Some(json!({"url": "https://example.com/one-too-many"})),
        )
        .await;
    assert_eq!(status, 507, "{body}");
    assert_eq!(body["error"]["code"], "codes_used_up", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("max_length"),
        "{body}"
    );
    // Every link has an id, named ones too.
    let (status, body) = d
        .req(
            "POST",
            "/api/v1/links",
            Some(json!({"url": "https://example.com/named", "alias": "named-one"})),
        )
        .await;
    assert_eq!(status, 507, "{body}");
    // What was made is all there.
    let (status, list) = d
        .req("GET", &format!("/api/v1/links?limit={available}"), None)
        .await;
    assert_eq!(status, 200, "{list}");
    assert_eq!(
        list["links"].as_array().map(Vec::len),
        Some(available as usize),
        "{list}"
    );
    // Raising the setting lets creates go on, with longer codes.
    d.restart_setting("--max-length", "3").await;
    let v = d.create(json!({"url": "https://example.com/longer"})).await;
    assert_eq!(v["code"].as_str().unwrap().len(), 3, "{v}");
}

#[test]
fn max_length_below_min_length_is_refused_naming_the_setting() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_shortlinkd"))
        .args(["serve", "--data-dir"])
        .arg(dir.path())
        .args(["--min-length", "5", "--max-length", "4"])
        .env_remove("SHORTLINKD_CONFIG")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("max_length"), "{err}");
}
