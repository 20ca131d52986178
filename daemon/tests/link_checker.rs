//! The link checker through the real daemon (on the suite's store): a
//! local HTTP server answers 200, 404, 500, a redirect, and silence; each
//! link's last probe, the failures in a row, the list of failing links and
//! the metrics follow, and a target that recovers counts as healthy again.
//! Private addresses are not probed unless allowed.

mod common;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{eventually, Daemon};
use serde_json::{json, Value};
use shortlink_core::ipc::LookupResult;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Answers by path; `/flaky` answers 503 until `healed` is set.
async fn server(healed: Arc<AtomicBool>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (mut s, _) = listener.accept().await.unwrap();
            let healed = healed.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 1024];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let head = String::from_utf8_lossy(&buf).to_string();
                let path = head.split_whitespace().nth(1).unwrap_or("").to_string();
                let answer = match path.as_str() {
                    "/ok" => "200 OK\r\n",
                    "/gone" => "404 Not Found\r\n",
                    "/boom" => "500 Internal Server Error\r\n",
                    "/moved" => "302 Found\r\nLocation: /ok\r\n",
                    "/flaky" if healed.load(Ordering::SeqCst) => "200 OK\r\n",
                    "/flaky" => "503 Service Unavailable\r\n",
                    "/silent" => {
                        tokio::time::sleep(Duration::from_secs(30)).await;
                        return;
                    }
                    _ => "400 Bad Request\r\n",
                };
                let reply =
                    format!("HTTP/1.1 {answer}Content-Length: 0\r\nConnection: close\r\n\r\n");
                let _ = s.write_all(reply.as_bytes()).await;
            });
        }
    });
    addr
}

async fn check(d: &Daemon, code: &str) -> Value {
    let (s, v) = d
        .req("GET", &format!("/api/v1/links/{code}/check"), None)
        .await;
    assert_eq!(s, 200, "{v}");
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probes_follow_each_target_and_failures_count_in_a_row() {
    let healed = Arc::new(AtomicBool::new(false));
    let addr = server(healed.clone()).await;
    let d = Daemon::start_with(&[
        "--check-links=true",
        "--check-interval",
        "1",
        "--check-private=true",
        "--check-host-interval-ms",
        "0",
        "--check-timeout",
        "1",
        "--check-fallback-after",
        "2",
    ])
    .await;
    let mut codes = std::collections::HashMap::new();
    for path in ["ok", "gone", "boom", "moved", "flaky", "silent"] {
        let v = d
            .create(json!({"url": format!("http://{addr}/{path}")}))
            .await;
        codes.insert(path, v["code"].as_str().unwrap().to_string());
    }
    // Every link probed at least twice: failures in a row reach 2.
    let all_twice = || async {
        for path in ["gone", "boom", "flaky", "silent"] {
            if check(&d, &codes[path]).await["failures"].as_u64() < Some(2) {
                return false;
            }
        }
        true
    };
    assert!(
        eventually(Duration::from_secs(20), all_twice).await,
        "{}",
        d.log()
    );
    let ok = check(&d, &codes["ok"]).await;
    assert_eq!(
        (&ok["status"], &ok["failures"]),
        (&json!(200), &json!(0)),
        "{ok}"
    );
    assert!(ok["checked_at"].is_string(), "{ok}");
    let moved = check(&d, &codes["moved"]).await;
    assert_eq!(
        (&moved["status"], &moved["failures"]),
        (&json!(200), &json!(0)),
        "{moved}"
    );
    let gone = check(&d, &codes["gone"]).await;
    assert_eq!(gone["status"], 404, "{gone}");
    assert_eq!(check(&d, &codes["boom"]).await["status"], 500);
    let silent = check(&d, &codes["silent"]).await;
    assert!(
        silent["error"]
            .as_str()
            .unwrap()
            .contains("no answer within"),
        "{silent}"
    );

    // The failing list: exactly the four, by the admin.
    let (s, list) = d.req("GET", "/api/v1/checks?min_failures=2", None).await;
    assert_eq!(s, 200, "{list}");
    let mut failing: Vec<String> = list["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["code"].as_str().unwrap().to_string())
        .collect();
    failing.sort();
    let mut want: Vec<String> = ["gone", "boom", "flaky", "silent"]
        .iter()
        .map(|p| codes[p].clone())
        .collect();
    want.sort();
    assert_eq!(failing, want, "{list}");

    // Two failures in a row: the edge answers them as gone (the fallback).
    let mut ipc = d.ipc().await;
    for path in ["gone", "flaky"] {
        let (_, link) = d
            .req("GET", &format!("/api/v1/links/{}", codes[path]), None)
            .await;
        assert_eq!(link["broken"], true, "{link}");
        assert_eq!(ipc.lookup(1, &codes[path]).await, LookupResult::Gone);
    }
    assert!(matches!(
        ipc.lookup(2, &codes["ok"]).await,
        LookupResult::Found(_)
    ));

    // A target that recovers is healthy at its next probe.
    healed.store(true, Ordering::SeqCst);
    let recovered = || async { check(&d, &codes["flaky"]).await["failures"] == 0 };
    assert!(
        eventually(Duration::from_secs(10), recovered).await,
        "{}",
        d.log()
    );
    assert_eq!(check(&d, &codes["flaky"]).await["status"], 200);
    let (_, link) = d
        .req("GET", &format!("/api/v1/links/{}", codes["flaky"]), None)
        .await;
    assert_eq!(link["broken"], false, "{link}");
    assert!(matches!(
        ipc.lookup(3, &codes["flaky"]).await,
        LookupResult::Found(_)
    ));
    let metrics = || async {
        let m = d.metrics().await;
        m.contains("shortlinkd_links_failing 3")
            && m.contains("shortlinkd_link_probes_total{result=\"failed\"}")
    };
    assert!(
        eventually(Duration::from_secs(10), metrics).await,
        "{}",
        d.metrics().await
    );
}

#[tokio::test]
async fn private_targets_are_not_probed_unless_allowed() {
    let addr = server(Arc::new(AtomicBool::new(false))).await;
    let d = Daemon::start_with(&["--check-links=true", "--check-interval", "1"]).await;
    let v = d
        .create(json!({"url": format!("http://{addr}/gone")}))
        .await;
    let code = v["code"].as_str().unwrap();
    let probed = || async { check(&d, code).await["checked_at"].is_string() };
    assert!(
        eventually(Duration::from_secs(10), probed).await,
        "{}",
        d.log()
    );
    let c = check(&d, code).await;
    assert_eq!(
        (&c["status"], &c["failures"]),
        (&Value::Null, &json!(0)),
        "{c}"
    );
    assert!(c["error"].as_str().unwrap().contains("private"), "{c}");
    // Without the checker nothing is probed, and the answer says so.
    let quiet = Daemon::start().await;
    let v = quiet.create(json!({"url": "https://example.com/"})).await;
    let c = check(&quiet, v["code"].as_str().unwrap()).await;
    assert_eq!(c["checked_at"], Value::Null, "{c}");
}
