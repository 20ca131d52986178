//! The link checker through the real daemon (on the suite's store): a
//! local HTTP server answers 200, 404, 500, a redirect, and silence; each
//! link's last probe, the failures in a row, the list of failing links and
//! the metrics follow, and a target that recovers counts as healthy again.
//! Private addresses are not probed unless allowed. Single probes first
//! (`checker::probe`): statuses, redirects, a loop, a refused `HEAD`,
//! silence, nothing listening.

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
use tokio::sync::mpsc::UnboundedReceiver;

use shortlinkd::checker::probe::{is_private, probe, system_tls, Outcome, ProbeRules};

/// A target server: answers by path (`/flaky` 503 until `healed` is set,
/// `/nohead` refuses `HEAD`, `/silent` never answers); every request's
/// method and path go to the receiver.
async fn server(healed: Arc<AtomicBool>) -> (SocketAddr, UnboundedReceiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (seen, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        loop {
            let (mut s, _) = listener.accept().await.unwrap();
            let (healed, seen) = (healed.clone(), seen.clone());
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
                let mut words = head.split_whitespace();
                let (method, path) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
                let _ = seen.send(format!("{method} {path}"));
                let answer = match (method, path) {
                    (_, "/ok") => "200 OK\r\n",
                    (_, "/gone") => "404 Not Found\r\n",
                    (_, "/boom") => "500 Internal Server Error\r\n",
                    (_, "/moved") => "302 Found\r\nLocation: /ok\r\n",
                    (_, "/moved-dead") => "301 Moved\r\nLocation: /gone\r\n",
                    (_, "/loop") => "302 Found\r\nLocation: /loop\r\n",
                    ("HEAD", "/nohead") => "405 Method Not Allowed\r\n",
                    (_, "/nohead") => "200 OK\r\n",
                    (_, "/flaky") if healed.load(Ordering::SeqCst) => "200 OK\r\n",
                    (_, "/flaky") => "503 Service Unavailable\r\n",
                    (_, "/silent") => {
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
    (addr, rx)
}

/// A daemon whose checker probes every link each second, loopback
/// targets included, with `extra` flags.
async fn fast_checker(extra: &[&str]) -> Daemon {
    let mut args = vec![
        "--check-links=true",
        "--check-interval",
        "1",
        "--check-private=true",
        "--check-host-interval-ms",
        "0",
        "--check-timeout",
        "1",
    ];
    args.extend_from_slice(extra);
    Daemon::start_with(&args).await
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
    let (addr, _) = server(healed.clone()).await;
    let d = fast_checker(&["--check-fallback-after", "2"]).await;
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
    let (addr, _) = server(Arc::new(AtomicBool::new(false))).await;
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

// One probe at a time, as the sweep makes them.

fn rules(allow_private: bool) -> ProbeRules {
    ProbeRules {
        timeout: Duration::from_millis(800),
        allow_private,
        tls: system_tls().unwrap(),
    }
}

#[tokio::test]
async fn statuses_redirects_and_timeouts_as_a_visitor_meets_them() {
    let (addr, mut seen) = server(Arc::new(AtomicBool::new(false))).await;
    let url = |p: &str| format!("http://{addr}{p}");
    let r = rules(true);
    assert_eq!(probe(&url("/ok"), &r).await, Outcome::Status(200));
    assert_eq!(probe(&url("/gone"), &r).await, Outcome::Status(404));
    assert_eq!(probe(&url("/boom"), &r).await, Outcome::Status(500));
    assert_eq!(probe(&url("/moved"), &r).await, Outcome::Status(200));
    assert_eq!(probe(&url("/moved-dead"), &r).await, Outcome::Status(404));
    assert!(probe(&url("/gone"), &r).await.is_failure());
    assert!(!probe(&url("/moved"), &r).await.is_failure());
    match probe(&url("/loop"), &r).await {
        Outcome::Failed(why) => assert!(why.contains("redirects"), "{why}"),
        other => panic!("a redirect loop: {other:?}"),
    }
    let started = std::time::Instant::now();
    match probe(&url("/silent"), &r).await {
        Outcome::Failed(why) => assert!(why.contains("no answer within"), "{why}"),
        other => panic!("a server that never answers: {other:?}"),
    }
    assert!(started.elapsed() < Duration::from_secs(2));
    // HEAD first; GET only where HEAD is refused.
    while seen.try_recv().is_ok() {}
    assert_eq!(probe(&url("/nohead"), &r).await, Outcome::Status(200));
    let mut methods = Vec::new();
    while let Ok(m) = seen.try_recv() {
        methods.push(m);
    }
    assert_eq!(methods, ["HEAD /nohead", "GET /nohead"]);
    // Nothing listening.
    let closed = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let gone = closed.local_addr().unwrap();
    drop(closed);
    match probe(&format!("http://{gone}/"), &r).await {
        Outcome::Failed(why) => assert!(why.contains("cannot connect"), "{why}"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn private_addresses_are_not_probed_unless_allowed() {
    let (addr, mut seen) = server(Arc::new(AtomicBool::new(false))).await;
    let r = rules(false);
    match probe(&format!("http://{addr}/ok"), &r).await {
        Outcome::Skipped(why) => assert!(why.contains("private"), "{why}"),
        other => panic!("loopback probed: {other:?}"),
    }
    match probe(&format!("http://localhost:{}/ok", addr.port()), &r).await {
        Outcome::Skipped(_) => {}
        other => panic!("a name of loopback probed: {other:?}"),
    }
    assert!(seen.try_recv().is_err(), "the server was reached");
    for ip in [
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "127.0.0.1",
        "169.254.169.254",
        "100.64.0.1",
        "0.0.0.0",
        "::1",
        "fe80::1",
        "fd00::1",
        "::ffff:10.0.0.1",
    ] {
        assert!(is_private(ip.parse().unwrap()), "{ip}");
    }
    for ip in ["93.184.216.34", "2606:4700::1111", "100.128.0.1"] {
        assert!(!is_private(ip.parse().unwrap()), "{ip}");
    }
}

/// A link's own `check`: `off` is never probed, `report` never sends its
/// visitors to the fallback, `fallback` does after 3 failures although
/// the site sets no number, and an edit takes effect at once (a broken
/// link switched to `report` is answered again).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_links_own_check_wins_over_the_site() {
    let (addr, mut seen) = server(Arc::new(AtomicBool::new(false))).await;
    let d = fast_checker(&[]).await;
    let mut codes = std::collections::HashMap::new();
    for (path, check) in [
        ("never", json!("off")),
        ("gone", json!("fallback")),
        ("boom", json!("report")),
        ("moved-dead", Value::Null),
    ] {
        let v = d
            .create(json!({"url": format!("http://{addr}/{path}"), "check": check}))
            .await;
        assert_eq!(v["check"], check, "{v}");
        codes.insert(path, v["code"].as_str().unwrap().to_string());
    }
    let failed_thrice = || async {
        for path in ["gone", "boom", "moved-dead"] {
            if check(&d, &codes[path]).await["failures"].as_u64() < Some(3) {
                return false;
            }
        }
        true
    };
    assert!(
        eventually(Duration::from_secs(30), failed_thrice).await,
        "{}",
        d.log()
    );
    let link = |path: &'static str| {
        let d = &d;
        let code = codes[path].clone();
        async move {
            let (s, v) = d.req("GET", &format!("/api/v1/links/{code}"), None).await;
            assert_eq!(s, 200, "{v}");
            v
        }
    };
    assert_eq!(link("gone").await["broken"], true);
    assert_eq!(link("boom").await["broken"], false);
    assert_eq!(link("moved-dead").await["broken"], false);
    let never = check(&d, &codes["never"]).await;
    assert!(never["checked_at"].is_null(), "{never}");
    let mut paths = Vec::new();
    while let Ok(p) = seen.try_recv() {
        paths.push(p);
    }
    assert!(!paths.iter().any(|p| p.ends_with("/never")), "{paths:?}");
    let mut ipc = d.ipc().await;
    assert_eq!(ipc.lookup(1, &codes["gone"]).await, LookupResult::Gone);
    assert!(matches!(
        ipc.lookup(2, &codes["boom"]).await,
        LookupResult::Found(_)
    ));

    // Switched to `report`: answered again at once; `off` back to the
    // site's settings: probed.
    let set_check = |path: &'static str, check: Value| {
        let d = &d;
        let code = codes[path].clone();
        async move {
            let body = json!({ "check": check });
            let (s, v) = d
                .req("PATCH", &format!("/api/v1/links/{code}"), Some(body))
                .await;
            assert_eq!(s, 200, "{v}");
            v
        }
    };
    let v = set_check("gone", json!("report")).await;
    assert_eq!(
        (&v["broken"], &v["check"]),
        (&json!(false), &json!("report")),
        "{v}"
    );
    assert!(matches!(
        ipc.lookup(3, &codes["gone"]).await,
        LookupResult::Found(_)
    ));
    let v = set_check("never", Value::Null).await;
    assert_eq!(v["check"], Value::Null, "{v}");
    let probed = || async { !check(&d, &codes["never"]).await["checked_at"].is_null() };
    assert!(
        eventually(Duration::from_secs(10), probed).await,
        "{}",
        d.log()
    );

    // Anything else is refused, naming the field.
    let (s, v) = d
        .req(
            "POST",
            "/api/v1/links",
            Some(json!({"url": "https://example.com/", "check": "sometimes"})),
        )
        .await;
    assert!(s == 400 || s == 422, "{s} {v}");
    assert!(v.to_string().contains("check"), "{v}");

    // The CLI sets it and hands it back to the site; the export carries it.
    let out = d.cli(&["link", "update", &codes["boom"], "--check", "off"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = link("boom").await;
    assert_eq!(v["check"], "off", "{v}");
    let out = d.cli(&["export", "-"]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let header: Vec<&str> = text.lines().next().unwrap().split(',').collect();
    let col = header.iter().position(|h| *h == "check").unwrap();
    let row = text
        .lines()
        .find(|l| l.starts_with(&format!("{},", codes["boom"])))
        .unwrap();
    assert_eq!(row.split(',').nth(col), Some("off"), "{text}");
    let out = d.cli(&["link", "update", &codes["boom"], "--check", "site"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = link("boom").await;
    assert!(v["check"].is_null(), "{v}");
    let out = d.cli(&["link", "create", "https://example.com/", "--check", "never"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--check"));
}
