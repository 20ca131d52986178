//! Redirects through the real nginx, the real module and the real daemon.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use serde_json::json;
use shortlink_core::Codec;
use shortlink_e2e::Stack;

fn stack(name: &str, workers: u32) -> Stack {
    Stack::start(name, workers)
}

#[test]
fn miss_then_hit_negative_invalid_and_methods() {
    let s = stack("hit-miss", 1);
    let code = s.daemon.create(json!({"url": "https://example.com/a?b=1"}));

    let r = s.nginx.get(format!("/{code}").as_bytes());
    assert_eq!(r.status, 302, "{}", r.body_text());
    assert_eq!(r.header("Location"), Some("https://example.com/a?b=1"));
    assert_eq!(r.header("X-Cache"), Some("MISS"));
    assert_eq!(r.header("X-Target"), Some("https://example.com/a?b=1"));

    let r = s.nginx.get(format!("/{code}?utm=x").as_bytes());
    assert_eq!(r.status, 302);
    assert_eq!(r.header("X-Cache"), Some("HIT"));
    assert_eq!(r.header("Location"), Some("https://example.com/a?b=1"));

    // A valid code nobody created: asked once, then answered from the zone.
    let unknown = s.codec.encode(Codec::first_id_of_length(9) + 5);
    let r = s.nginx.get(format!("/{unknown}").as_bytes());
    assert_eq!((r.status, r.header("X-Cache")), (404, Some("MISS")));
    let r = s.nginx.get(format!("/{unknown}").as_bytes());
    assert_eq!((r.status, r.header("X-Cache")), (404, Some("NEGATIVE")));

    // Invalid codes never reach the daemon.
    let before = s.daemon.metric("shortlinkd_ipc_lookups_total");
    assert!(before >= 2.0, "lookups so far: {before}");
    for i in 0..50 {
        let r = s.nginx.get(format!("/zz{i}.-x").as_bytes());
        assert_eq!((r.status, r.header("X-Cache")), (404, Some("INVALID")));
    }
    let mut wrong = code.clone().into_bytes();
    let last = wrong.len() - 1;
    for c in (b'0'..=b'z').filter(u8::is_ascii_alphanumeric) {
        wrong[last] = c;
        if s.codec.decode(&wrong).is_err() {
            break;
        }
    }
    let r = s.nginx.get(&[b"/".as_slice(), &wrong].concat());
    assert_eq!((r.status, r.header("X-Cache")), (404, Some("INVALID")));
    assert_eq!(s.daemon.metric("shortlinkd_ipc_lookups_total"), before);

    // HEAD: the redirect, no body; other methods: 405 with Allow.
    let r = s
        .nginx
        .request(b"HEAD", format!("/{code}").as_bytes(), &[], b"");
    assert_eq!(r.status, 302);
    assert!(r.body.is_empty());
    let r = s
        .nginx
        .request(b"POST", format!("/{code}").as_bytes(), &[], b"x=1");
    assert_eq!(r.status, 405);
    assert_eq!(r.header("Allow"), Some("GET, HEAD"));

    // Fallback location: unknown codes go to the fallback, links use 301 and Cache-Control.
    let r = s.nginx.get(format!("/fb/{unknown}").as_bytes());
    assert_eq!(r.status, 302);
    assert_eq!(r.header("Location"), Some("https://example.com/fallback"));
    let r = s.nginx.get(format!("/fb/{code}").as_bytes());
    assert_eq!(r.status, 301);
    assert_eq!(r.header("Cache-Control"), Some("private, max-age=90"));
    s.nginx.assert_clean_log();
}

#[test]
fn two_workers_share_one_zone() {
    let s = stack("two-workers", 2);
    let code = s
        .daemon
        .create(json!({"url": "https://example.com/shared"}));
    let first = s.nginx.get(format!("/{code}").as_bytes());
    assert_eq!(first.header("X-Cache"), Some("MISS"));
    let cached_by = first.header("X-Pid").unwrap().to_string();
    let mut hit_elsewhere = false;
    let mut pids = HashSet::new();
    for _ in 0..200 {
        let r = s.nginx.get(format!("/{code}").as_bytes());
        assert_eq!(r.status, 302);
        assert_eq!(r.header("X-Cache"), Some("HIT"));
        let pid = r.header("X-Pid").unwrap().to_string();
        hit_elsewhere |= pid != cached_by;
        pids.insert(pid);
        if hit_elsewhere {
            break;
        }
    }
    assert!(hit_elsewhere, "only saw workers {pids:?}");
    s.nginx.assert_clean_log();
}

#[test]
fn takedown_reaches_every_worker() {
    let s = stack("takedown", 2);
    let code = s.daemon.create(json!({"url": "https://example.com/bad"}));
    for _ in 0..10 {
        assert_eq!(s.nginx.get(format!("/{code}").as_bytes()).status, 302);
    }
    let r = s
        .daemon
        .api("DELETE", &format!("/api/v1/links/{code}"), None);
    assert_eq!(r.status, 204, "{}", r.body_text());
    // The invalidation is pushed before the API replies; allow the event
    // loop a moment to apply it.
    let deadline = Instant::now() + Duration::from_millis(500);
    loop {
        let r = s.nginx.get(format!("/{code}").as_bytes());
        if r.status == 404 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "still {} after the delete",
            r.status
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    for _ in 0..20 {
        assert_eq!(s.nginx.get(format!("/{code}").as_bytes()).status, 404);
    }
    s.nginx.assert_clean_log();
}

#[test]
fn daemon_down_cached_codes_still_redirect_and_misses_fail_fast() {
    let mut s = stack("daemon-down", 1);
    let cached = s
        .daemon
        .create(json!({"url": "https://example.com/cached"}));
    let later = s.daemon.create(json!({"url": "https://example.com/later"}));
    assert_eq!(s.nginx.get(format!("/{cached}").as_bytes()).status, 302);

    s.daemon.kill();
    let r = s.nginx.get(format!("/{cached}").as_bytes());
    assert_eq!((r.status, r.header("X-Cache")), (302, Some("HIT")));
    let first = s.nginx.get(format!("/{later}").as_bytes());
    assert_eq!(first.status, 503);
    for _ in 0..10 {
        let t = Instant::now();
        let r = s.nginx.get(format!("/{later}").as_bytes());
        assert_eq!(r.status, 503);
        assert!(
            t.elapsed() < Duration::from_millis(100),
            "took {:?}",
            t.elapsed()
        );
    }
    let log = s.nginx.error_log();
    assert_eq!(log.matches("daemon link down").count(), 1, "{log}");

    s.daemon.restart();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let r = s.nginx.get(format!("/{later}").as_bytes());
        if r.status == 302 {
            assert_eq!(r.header("Location"), Some("https://example.com/later"));
            break;
        }
        assert!(
            Instant::now() < deadline,
            "misses did not resolve after the restart"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        s.nginx
            .error_log()
            .matches("shortlink: daemon link to ")
            .count(),
        1
    );
    s.nginx.assert_clean_log();
}

#[test]
fn clicks_are_counted_exactly_once() {
    let s = stack("clicks", 2);
    let code = s.daemon.create(json!({"url": "https://example.com/count"}));
    let n = 37;
    for _ in 0..n {
        assert_eq!(s.nginx.get(format!("/{code}").as_bytes()).status, 302);
    }
    // HEAD and invalid requests are not clicks.
    s.nginx
        .request(b"HEAD", format!("/{code}").as_bytes(), &[], b"");
    let deadline = Instant::now() + Duration::from_secs(5);
    while s.daemon.clicks(&code) < n {
        assert!(
            Instant::now() < deadline,
            "only {} of {n} clicks",
            s.daemon.clicks(&code)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(s.daemon.clicks(&code), n);
    s.nginx.assert_clean_log();
}

/// After an outage the zone is replayed what changed, or emptied when the
/// daemon cannot say: here the daemon comes back on another (empty)
/// database, so a cached link it no longer has must not keep redirecting.
#[test]
fn a_daemon_on_another_database_resets_the_zone() {
    let mut s = stack("reset-zone", 2);
    let code = s
        .daemon
        .create(json!({"url": "https://example.com/old-db"}));
    assert_eq!(s.nginx.get(format!("/{code}").as_bytes()).status, 302);
    let r = s.nginx.get(format!("/{code}").as_bytes());
    assert_eq!((r.status, r.header("X-Cache")), (302, Some("HIT")));
    // The zone has a position once the subscribing worker is through its
    // first subscription (a zone without one holds only fresh answers).
    let deadline = Instant::now() + Duration::from_secs(10);
    while s.daemon.subscriptions().is_empty() {
        assert!(Instant::now() < deadline, "no worker subscribed");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(200));
    s.daemon.kill();
    let data = s.daemon.data_dir();
    for f in std::fs::read_dir(&data).unwrap() {
        let path = f.unwrap().path();
        if path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("shortlink.db")
        {
            std::fs::remove_file(path).unwrap();
        }
    }
    // While the daemon is down the cached link still redirects.
    let r = s.nginx.get(format!("/{code}").as_bytes());
    assert_eq!((r.status, r.header("X-Cache")), (302, Some("HIT")));
    s.daemon.restart();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let r = s.nginx.get(format!("/{code}").as_bytes());
        if r.status == 404 {
            break;
        }
        assert_eq!(r.status, 302, "{:?}", r.header("X-Cache"));
        assert!(
            Instant::now() < deadline,
            "the zone still serves a link the daemon's database does not have"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(s
        .nginx
        .error_log()
        .contains("cached links: the daemon cannot replay the changes since they were cached"));
}
