//! Admin sign-in under attack, against a real daemon: many concurrent
//! sign-ins neither exhaust its memory nor slip past the lock-out, and a
//! lock-out from one address does not lock the owner out from another.

mod common;

use std::path::Path;
use std::time::Duration;

use common::{stderr, Daemon};
use http_body_util::BodyExt;
use tokio::net::UnixStream;

const PASSWORD: &str = "correct horse battery";
/// Concurrent attempts fired at once.
const ATTEMPTS: usize = 40;
/// What the daemon may hold while and after they are answered.
const RSS_LIMIT_KB: u64 = 150 * 1024;
/// A bound on each round: every attempt must be answered by then.
const TEST_TIMEOUT: Duration = Duration::from_secs(120);
/// A bound on one reply.
const REPLY_TIMEOUT: Duration = Duration::from_secs(60);

/// A reply: status, `Retry-After`, body text.
struct Reply {
    status: u16,
    retry_after: Option<String>,
    body: String,
}

fn add_user(d: &Daemon, name: &str, password: &str) {
    let out = d.cli_stdin(&["user", "add", name], &format!("{password}\n"));
    assert!(out.status.success(), "user add: {}", stderr(&out));
}

/// The sign-in form's token (also its cookie's value).
async fn login_token(d: &Daemon) -> String {
    let (status, headers, _) = d.req_with("GET", "/admin/login", &[], None).await;
    assert_eq!(status, 200);
    let cookie = headers
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .expect("login cookie");
    cookie
        .split(';')
        .next()
        .and_then(|c| c.strip_prefix("shortlink_login="))
        .expect("shortlink_login cookie")
        .to_string()
}

/// POST `/admin/login` over the API socket, as nginx would send it for a
/// client at `client_ip`.
async fn post_login(api: &Path, token: &str, name: &str, password: &str, client_ip: &str) -> Reply {
    let stream = UnixStream::connect(api).await.expect("connect");
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .expect("handshake");
    tokio::spawn(conn);
    let body: String = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("csrf", token)
        .append_pair("name", name)
        .append_pair("password", password)
        .finish();
    let req = axum::http::Request::builder()
        .method("POST")
        .uri("/admin/login")
        .header("host", "localhost")
        .header("content-type", "application/x-www-form-urlencoded")
        .header("cookie", format!("shortlink_login={token}"))
        .header("x-real-ip", client_ip)
        .body(axum::body::Body::from(body))
        .unwrap();
    let resp = tokio::time::timeout(REPLY_TIMEOUT, sender.send_request(req))
        .await
        .expect("a reply in time")
        .expect("reply");
    let status = resp.status().as_u16();
    let retry_after = resp
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    Reply {
        status,
        retry_after,
        body: String::from_utf8_lossy(&bytes).into_owned(),
    }
}

/// The daemon's resident memory, from `/proc/<pid>/status`.
fn rss_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS line")
}

/// Fires `ATTEMPTS` sign-ins at once (`attempt(i)` gives name, password
/// and client address) while sampling the daemon's memory; returns the
/// replies in order and the highest RSS seen.
async fn fire<F>(d: &Daemon, token: &str, attempt: F) -> (Vec<Reply>, u64)
where
    F: Fn(usize) -> (String, String, String),
{
    let pid = d.pid();
    let sampling = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let sampler = {
        let sampling = sampling.clone();
        tokio::spawn(async move {
            let mut peak = 0;
            while sampling.load(std::sync::atomic::Ordering::Relaxed) {
                peak = peak.max(rss_kb(pid));
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            peak
        })
    };
    let mut set = tokio::task::JoinSet::new();
    for i in 0..ATTEMPTS {
        let (name, password, ip) = attempt(i);
        let (path, token) = (d.api_path(), token.to_string());
        set.spawn(async move { (i, post_login(&path, &token, &name, &password, &ip).await) });
    }
    let mut replies: Vec<(usize, Reply)> = set.join_all().await;
    replies.sort_by_key(|(i, _)| *i);
    let replies = replies.into_iter().map(|(_, r)| r).collect();
    sampling.store(false, std::sync::atomic::Ordering::Relaxed);
    let peak = sampler.await.unwrap().max(rss_kb(pid));
    (replies, peak)
}

#[tokio::test]
async fn concurrent_unknown_names_are_turned_away_and_memory_stays_bounded() {
    let d = Daemon::start().await;
    let token = login_token(&d).await;
    // Different names from different addresses: no lock-out applies, only
    // the bound on concurrent password checks.
    let (replies, peak) = tokio::time::timeout(
        TEST_TIMEOUT,
        fire(&d, &token, |i| {
            (
                format!("ghost{i}"),
                "not the password".into(),
                format!("198.51.100.{}", i + 1),
            )
        }),
    )
    .await
    .expect("every sign-in answered in time");

    let busy: Vec<&Reply> = replies.iter().filter(|r| r.status == 429).collect();
    let rejected = replies.iter().filter(|r| r.status == 401).count();
    assert!(!busy.is_empty(), "some attempts are turned away at once");
    assert!(rejected > 0, "some attempts are checked");
    assert_eq!(busy.len() + rejected, ATTEMPTS, "only 401 or 429");
    for r in &busy {
        let secs: u64 = r
            .retry_after
            .as_deref()
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("429 without a Retry-After: {:?}", r.retry_after));
        assert!(secs >= 1);
        assert!(r.body.contains("busy"), "{}", r.body);
    }
    assert!(
        peak < RSS_LIMIT_KB,
        "RSS peaked at {peak} kB during {ATTEMPTS} sign-ins"
    );
    // Once they are answered memory does not keep growing: another round
    // stays under the same bound.
    let (_, peak2) = tokio::time::timeout(
        TEST_TIMEOUT,
        fire(&d, &token, |i| {
            (
                format!("phantom{i}"),
                "still not it".into(),
                format!("203.0.113.{}", i + 1),
            )
        }),
    )
    .await
    .expect("every sign-in answered in time");
    let after = rss_kb(d.pid());
    assert!(peak2 < RSS_LIMIT_KB, "RSS peaked at {peak2} kB (round 2)");
    assert!(after < RSS_LIMIT_KB, "RSS stayed at {after} kB");
}

#[tokio::test]
async fn concurrent_guesses_from_one_address_stop_at_the_limit() {
    let d = Daemon::start().await;
    add_user(&d, "bob", PASSWORD);
    let token = login_token(&d).await;
    let attacker = "192.0.2.66";
    let (replies, _) = tokio::time::timeout(
        TEST_TIMEOUT,
        fire(&d, &token, |i| {
            ("bob".into(), format!("guess number {i}"), attacker.into())
        }),
    )
    .await
    .expect("every sign-in answered in time");
    let checked = replies.iter().filter(|r| r.status == 401).count();
    assert!(
        (1..=5).contains(&checked),
        "{checked} of {ATTEMPTS} concurrent guesses were checked (limit 5)"
    );
    for r in replies.iter().filter(|r| r.status != 401) {
        assert_eq!(r.status, 429, "{}", r.body);
        assert!(r.retry_after.is_some(), "429 without Retry-After");
    }

    // The right password is refused from the attacker's address...
    let r = post_login(&d.api_path(), &token, "bob", PASSWORD, attacker).await;
    assert_eq!(r.status, 429, "{}", r.body);
    assert!(r.body.contains("Too many failed sign-ins"), "{}", r.body);
    let wait: u64 = r.retry_after.as_deref().unwrap().parse().unwrap();
    assert!((1..=15 * 60).contains(&wait), "Retry-After {wait}");
    // ...but bob signs in from his own.
    let r = post_login(&d.api_path(), &token, "bob", PASSWORD, "198.51.100.7").await;
    assert_eq!(r.status, 303, "{}", r.body);
}
