//! The link checker at the real edge: a link whose target keeps failing
//! its probes is sent to the location's fallback by nginx, and back to its
//! target once a probe finds it healthy again (`checker.fallback_after`).

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use shortlink_e2e::{http_conf, Daemon, Nginx, Scratch, Stack};

/// Answers `/flaky` 503 until `healed`, then 200.
fn target(healed: Arc<AtomicBool>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut s) = conn else { continue };
            let mut buf = [0u8; 2048];
            let _ = s.read(&mut buf);
            let status = if healed.load(Ordering::SeqCst) {
                "200 OK"
            } else {
                "503 Service Unavailable"
            };
            let _ = write!(
                s,
                "HTTP/1.1 {status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
        }
    });
    port
}

fn until(what: &str, within: Duration, mut ok: impl FnMut() -> bool) {
    let started = Instant::now();
    while !ok() {
        assert!(started.elapsed() < within, "{what} within {within:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    println!("{what} after {:?}", started.elapsed());
}

#[test]
fn a_target_that_keeps_failing_sends_visitors_to_the_fallback_until_it_recovers() {
    let healed = Arc::new(AtomicBool::new(false));
    let port = target(healed.clone());
    let scratch = Scratch::new("link-checker");
    let (key, codec) = scratch.key();
    let config = scratch.path("shortlinkd.toml");
    std::fs::write(
        &config,
        "[checker]\nenabled = true\ninterval = 1\nprivate = true\nhost_interval_ms = 0\n\
         timeout = 1\nfallback_after = 2\n",
    )
    .unwrap();
    let daemon = Daemon::start_with_config(&scratch, &key, Some(config));
    let http = http_conf(&key, &daemon, "300ms");
    let nginx = Nginx::start(&scratch, 1, &http);
    let s = Stack {
        nginx,
        daemon,
        codec,
        workers: 1,
        http,
        scratch,
    };
    let url = format!("http://127.0.0.1:{port}/flaky");
    let code = s.daemon.create(json!({"url": url}));
    let path = format!("/fb/{code}");
    let get = || s.nginx.request(b"GET", path.as_bytes(), &[], b"");
    // Served (and cached at the edge) while the checker has not decided.
    let first = get();
    assert!(
        first.header("Location") == Some(url.as_str())
            || first.header("Location") == Some("https://example.com/fallback"),
        "{}",
        first.status
    );
    until(
        "visitors sent to the fallback",
        Duration::from_secs(15),
        || {
            let r = get();
            r.status == 302 && r.header("Location") == Some("https://example.com/fallback")
        },
    );
    healed.store(true, Ordering::SeqCst);
    until(
        "visitors back on the target",
        Duration::from_secs(15),
        || {
            let r = get();
            r.status == 301 && r.header("Location") == Some(url.as_str())
        },
    );
    s.nginx.assert_clean_log();
}
