//! Probes against a real local HTTP server that answers 200, 404, 500,
//! redirects (once, and in a loop), refuses `HEAD`, and never answers.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::probe::{is_private, probe, system_tls, Outcome, ProbeRules};

/// Serves the canned answers until the test ends; the methods it saw.
async fn server() -> (SocketAddr, tokio::sync::mpsc::UnboundedReceiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (seen, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        loop {
            let (mut s, _) = listener.accept().await.unwrap();
            let seen = seen.clone();
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
                    (_, "/ok") => "200 OK\r\n".to_string(),
                    (_, "/gone") => "404 Not Found\r\n".to_string(),
                    (_, "/boom") => "500 Internal Server Error\r\n".to_string(),
                    (_, "/moved") => "302 Found\r\nLocation: /ok\r\n".to_string(),
                    (_, "/moved-dead") => "301 Moved\r\nLocation: /gone\r\n".to_string(),
                    (_, "/loop") => "302 Found\r\nLocation: /loop\r\n".to_string(),
                    ("HEAD", "/nohead") => "405 Method Not Allowed\r\n".to_string(),
                    ("GET", "/nohead") => "200 OK\r\n".to_string(),
                    (_, "/slow") => {
                        tokio::time::sleep(Duration::from_secs(30)).await;
                        return;
                    }
                    _ => "400 Bad Request\r\n".to_string(),
                };
                let reply =
                    format!("HTTP/1.1 {answer}Content-Length: 0\r\nConnection: close\r\n\r\n");
                let _ = s.write_all(reply.as_bytes()).await;
            });
        }
    });
    (addr, rx)
}

fn rules(allow_private: bool) -> ProbeRules {
    ProbeRules {
        timeout: Duration::from_millis(800),
        allow_private,
        tls: system_tls().unwrap(),
    }
}

#[tokio::test]
async fn statuses_redirects_and_timeouts_as_a_visitor_meets_them() {
    let (addr, mut seen) = server().await;
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
    match probe(&url("/slow"), &r).await {
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
    let (addr, mut seen) = server().await;
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
