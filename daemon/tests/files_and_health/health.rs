//! `/api/v1/health`: details only with a key; degraded when the database
//! cannot store writes.

use std::time::Duration;

use serde_json::{json, Value};
use shortlink_core::ipc::{Reply, Request};
use shortlink_core::DeploymentKey;

use crate::common::{batch, eventually, stderr, stdout, Daemon};
use crate::serve::{Serve, Tmpfs};

fn fields(v: &Value) -> Vec<String> {
    let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
    k.sort();
    k
}

#[tokio::test]
async fn health_tells_details_only_to_a_valid_key() {
    let d = Daemon::start().await;
    d.create(json!({"url": "https://example.com/x"})).await;

    let (s, _, v) = d.req_with("GET", "/api/v1/health", &[], None).await;
    assert_eq!(s, 200);
    assert_eq!(fields(&v), ["status", "version"], "{v}");
    assert_eq!(v["status"], "ok");
    let fp = d.fingerprint().to_string();
    assert!(!v.to_string().contains(&fp));

    let (s, v) = d.req("GET", "/api/v1/health", None).await;
    assert_eq!(s, 200);
    assert_eq!(v["status"], "ok");
    assert_eq!(v["key_fingerprint"], fp);
    assert_eq!(v["links"], 1);
    assert!(
        v["uptime_seconds"].is_u64() && v["ipc_connections"].is_i64(),
        "{v}"
    );
    assert!(v.get("problem").is_none(), "{v}");

    // A key with the fewest scopes will do; a wrong one is refused.
    let out = d.cli(&["key", "create", "--name", "probe", "--scopes", "stats:read"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let probe = stdout(&out).trim().to_string();
    let (s, _, v) = d
        .req_with("GET", "/api/v1/health", &[("x-api-key", &probe)], None)
        .await;
    assert_eq!((s, v["key_fingerprint"].as_str()), (200, Some(fp.as_str())));
    let (head, last) = d.admin_key.split_at(d.admin_key.len() - 1);
    let wrong = format!("{head}{}", if last == "0" { "1" } else { "0" });
    let (s, _, v) = d
        .req_with("GET", "/api/v1/health", &[("x-api-key", &wrong)], None)
        .await;
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (401, Some("invalid_api_key"))
    );
    assert!(!v.to_string().contains(&fp));
}

#[tokio::test]
async fn a_full_disk_degrades_health_and_every_write_fails_until_space_is_back() {
    let scratch = tempfile::tempdir().unwrap();
    let data = scratch.path().join("data");
    let disk = Tmpfs::mount(&data, "3m");
    DeploymentKey::generate()
        .unwrap()
        .write_new(&data.join("key"))
        .unwrap();
    let s = Serve::start(&data, &scratch.path().join("daemon.log"), &[]).await;
    let (status, v) = s.post_link("https://example.com/before").await;
    assert_eq!(status, 201, "{v}");

    let filler = disk.fill();
    // Small writes may still fit in WAL pages already allocated; big ones
    // soon need new blocks.
    let long = format!("https://example.com/{}", "x".repeat(1800));
    let mut refused = None;
    for i in 0..400 {
        let (status, v) = s.post_link(&format!("{long}{i}")).await;
        if status != 201 {
            refused = Some((status, v));
            break;
        }
    }
    let (status, v) = refused.expect("some write must fail on a full disk");
    assert!(status >= 500, "{status} {v}");
    assert!(
        v["error"]["message"].as_str().unwrap().contains("full"),
        "{v}"
    );
    let (code, v) = s.health(Some(&s.admin_key)).await.unwrap();
    assert_eq!((code, v["status"].as_str()), (503, Some("degraded")), "{v}");
    assert!(v["problem"].as_str().unwrap().contains("full"), "{v}");
    let (code, v) = s.health(None).await.unwrap();
    assert_eq!(
        (code, fields(&v)),
        (503, vec!["status".into(), "version".into()])
    );
    // More failures, still one error line.
    for i in 0..3 {
        let (status, v) = s.post_link(&format!("{long}/again{i}")).await;
        assert!(status >= 500, "{status} {v}");
    }
    // One error line per outage, not per failed write: four writes
    // failed. A small background write (an id lease, say) may still fit
    // in pages the WAL holds and end an outage, which is logged as such.
    let log = s.log();
    let outages = log.matches("the database cannot store writes").count();
    let recoveries = log.matches("the database stores writes again").count();
    assert_eq!(outages, recoveries + 1, "{log}");
    assert!(outages < 4, "{log}");
    assert!(!log.contains("write transaction failed to commit"), "{log}");

    std::fs::remove_file(filler).unwrap();
    let (status, v) = s.post_link("https://example.com/after").await;
    assert_eq!(status, 201, "{v}");
    let (code, v) = s.health(Some(&s.admin_key)).await.unwrap();
    assert_eq!((code, v["status"].as_str()), (200, Some("ok")), "{v}");
    assert!(s.log().contains("the database stores writes again"));
    drop(s);
}

#[tokio::test]
async fn a_deleted_wal_degrades_health_logs_once_and_refuses_writes() {
    let d = Daemon::start_on_sqlite().await;
    let before = d.create(json!({"url": "https://example.com/kept"})).await;
    let wal = d.data_dir().join("shortlink.db-wal");
    assert!(wal.exists());
    std::fs::remove_file(&wal).unwrap();

    let degraded = eventually(Duration::from_secs(5), || async {
        let (s, v) = d.req("GET", "/api/v1/health", None).await;
        s == 503 && v["status"] == "degraded"
    })
    .await;
    assert!(degraded, "health did not notice: {}", d.log());
    let (_, v) = d.req("GET", "/api/v1/health", None).await;
    assert!(
        v["problem"]
            .as_str()
            .unwrap()
            .contains("shortlink.db-wal was deleted"),
        "{v}"
    );
    let (s, _, v) = d.req_with("GET", "/api/v1/health", &[], None).await;
    assert_eq!((s, v["status"].as_str()), (503, Some("degraded")));

    // Writes are refused, not acknowledged into a file nobody will read.
    let (s, v) = d
        .req(
            "POST",
            "/api/v1/links",
            Some(json!({"url": "https://example.com/lost"})),
        )
        .await;
    assert!(s >= 500, "{s} {v}");
    assert!(
        v["error"]["message"].as_str().unwrap().contains("deleted"),
        "{v}"
    );
    let mut ipc = d.ipc().await;
    ipc.send(&Request::Clicks {
        id: 7,
        batch: batch(1, 1, 3, false),
    })
    .await;
    match ipc.recv().await {
        Some(Reply::Error { id: 7, message }) => assert!(message.contains("deleted"), "{message}"),
        other => panic!("expected an error for the click batch, got {other:?}"),
    }
    // Reads still work: redirects go on.
    let code = before["code"].as_str().unwrap();
    let (s, _) = d.req("GET", &format!("/api/v1/links/{code}"), None).await;
    assert_eq!(s, 200);

    let log = d.log();
    assert_eq!(
        log.matches("a database file is gone").count(),
        1,
        "one error line: {log}"
    );
    assert!(log.contains("copied into the database file"), "{log}");

    // A restart is the way back; what was acknowledged before is there.
    let mut d = d;
    assert!(d.sigterm().success());
    d.spawn().await;
    let (s, v) = d.req("GET", "/api/v1/health", None).await;
    assert_eq!((s, v["status"].as_str()), (200, Some("ok")), "{v}");
    let (s, _) = d.req("GET", &format!("/api/v1/links/{code}"), None).await;
    assert_eq!(s, 200);
    d.create(json!({"url": "https://example.com/after-restart"}))
        .await;
}
