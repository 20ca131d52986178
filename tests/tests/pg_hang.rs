//! A hung PostgreSQL (issue 40): its server stopped (SIGSTOP) for 20 s
//! (`SHORTLINK_PG_HANG_SECS`), as a crashed host or a cut network looks,
//! under load on one node. The daemon is healthy and bounds what it asks
//! the database for nginx by `edge_timeout_ms`, so nginx's link to it is
//! never dropped: cached codes redirect, misses are refused fast with 503,
//! and the failures are logged once, on both sides. The daemon's API is
//! called throughout; its latencies are printed (their bounds are the API's
//! own business), and every call must be answered. After the thaw, misses
//! resolve and creates succeed.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use shortlink_e2e::load::{Conn, Load};
use shortlink_e2e::tally::{by_status, links};
use shortlink_e2e::{read_response, send_request, Cluster, Daemon};

/// Generous for any machine: the wait for what must happen after the thaw.
const RECOVERY: Duration = Duration::from_secs(60);
/// How long an API call made during the freeze is waited for: past the
/// freeze, so a call the database held is answered once it is back.
const API_ANSWER: Duration = Duration::from_secs(120);

/// One API call made during the freeze: when it was answered, and how.
struct Call {
    what: &'static str,
    took: Duration,
    /// The status, or why no answer came.
    status: Result<u16, String>,
}

fn api(d: &Daemon, what: &'static str, method: &str, path: &str, body: Option<&str>) -> Call {
    let mut headers = vec![("X-Api-Key", d.api_key.as_str())];
    if body.is_some() {
        headers.push(("Content-Type", "application/json"));
    }
    let started = Instant::now();
    let r = send_request(
        d.api_port,
        method.as_bytes(),
        path.as_bytes(),
        &headers,
        body.unwrap_or("").as_bytes(),
    )
    .and_then(|s| {
        s.set_read_timeout(Some(API_ANSWER))
            .map_err(|e| e.to_string())?;
        read_response(s, method.as_bytes())
    });
    Call {
        what,
        took: started.elapsed(),
        status: r.map(|r| r.status),
    }
}

/// The `p`th percentile of `times` (sorted here).
fn percentile(times: &mut [Duration], p: usize) -> Duration {
    if times.is_empty() {
        return Duration::ZERO;
    }
    times.sort();
    times[(times.len() * p).div_ceil(100).saturating_sub(1)]
}

fn report(name: &str, lines: &[(&str, String)]) {
    shortlink_e2e::tally::report("hung database", name, lines);
}

#[test]
fn a_hung_postgres_never_drops_the_edge_link_and_is_logged_once() {
    let hang = Duration::from_secs(
        std::env::var("SHORTLINK_PG_HANG_SECS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(20),
    );
    let c = Cluster::start("pg-hang", 1);
    let node = &c.nodes[0];
    let cached = links(&node.daemon, 10, "cached");
    // Made in one batch: in neither the zone nor the daemon's cache, so
    // each of their lookups needs the database.
    let uncached = links(&node.daemon, 1500, "uncached");
    let probe = cached[0].clone();
    for code in &cached {
        assert_eq!(node.get(code).status, 302, "warming {code}");
    }
    let hot = Load::start(
        node.nginx.port,
        &cached,
        &[(Conn::KeepAlive, 1), (Conn::Plain, 1)],
        Duration::from_millis(1),
    );
    std::thread::sleep(Duration::from_millis(500));
    let log_before = node.nginx.error_log().len();
    let daemon_log_before = node.daemon.log().len();

    c.pg.freeze();
    let frozen = Instant::now();
    let cold = Load::start(
        node.nginx.port,
        &uncached,
        &[(Conn::Plain, 1)],
        Duration::from_millis(20),
    );
    let calling = AtomicBool::new(true);
    let (cold, calls) = std::thread::scope(|s| {
        let caller = s.spawn(|| {
            let mut calls = Vec::new();
            let mut i = 0;
            while calling.load(Ordering::Relaxed) {
                let body = json!({ "url": format!("https://example.com/during/{i}") });
                i += 1;
                calls.push(api(
                    &node.daemon,
                    "create",
                    "POST",
                    "/api/v1/links",
                    Some(&body.to_string()),
                ));
                calls.push(api(
                    &node.daemon,
                    "get",
                    "GET",
                    &format!("/api/v1/links/{probe}"),
                    None,
                ));
                std::thread::sleep(Duration::from_millis(50));
            }
            calls
        });
        std::thread::sleep(hang.saturating_sub(frozen.elapsed()));
        // Every miss and call is made while the database is stopped; the
        // last call may be answered after the thaw.
        calling.store(false, Ordering::Relaxed);
        let cold = cold.stop();
        c.pg.thaw();
        (cold, caller.join().expect("the API caller"))
    });

    // After the thaw: the refused misses resolve, and creates succeed.
    let refused: Vec<&String> = cold
        .others
        .keys()
        .map(|(code, _)| code)
        .filter(|code| !cold.redirects.contains_key(*code))
        .collect();
    let thawed = Instant::now();
    for code in refused.iter().take(50) {
        while node.get(code).status != 302 {
            assert!(
                thawed.elapsed() < RECOVERY,
                "{code} does not resolve after the thaw"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    let resolved_in = thawed.elapsed();
    loop {
        let created = api(
            &node.daemon,
            "create",
            "POST",
            "/api/v1/links",
            Some(&json!({"url": "https://example.com/after"}).to_string()),
        );
        if created.status == Ok(201) {
            break;
        }
        assert!(
            thawed.elapsed() < RECOVERY,
            "creates still fail after the thaw: {:?}",
            created.status
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let creates_in = thawed.elapsed();
    std::thread::sleep(Duration::from_millis(500));
    let hot = hot.stop();

    let log = node.nginx.error_log()[log_before..].to_string();
    let lookup_errors: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("while resolving code") || l.contains("daemon lookup timed out"))
        .collect();
    let answered_again = log.matches(" answers again; ").count();
    let daemon_log = node.daemon.log()[daemon_log_before..].to_string();
    let late_runs = daemon_log
        .matches("did not answer an nginx worker's request within edge_timeout_ms")
        .count();
    let late_ends = daemon_log
        .matches("answers nginx workers within edge_timeout_ms again")
        .count();
    let mut statuses: BTreeMap<String, u64> = BTreeMap::new();
    for call in &calls {
        let status = match &call.status {
            Ok(s) => s.to_string(),
            Err(_) => "no answer".to_string(),
        };
        *statuses
            .entry(format!("{} {status}", call.what))
            .or_default() += 1;
    }
    let mut times: Vec<Duration> = calls.iter().map(|c| c.took).collect();
    let (p50, p99) = (percentile(&mut times, 50), percentile(&mut times, 99));
    let max = times.last().copied().unwrap_or_default();
    report(
        &format!("PostgreSQL stopped (SIGSTOP) {hang:?} under load, one node"),
        &[
            (
                "cached codes: redirects / others / failed",
                format!(
                    "{} / {} / {}",
                    hot.total_redirects(),
                    hot.total_others(),
                    hot.failed
                ),
            ),
            (
                "uncached codes: redirects / refusals / failed",
                format!(
                    "{} / {} / {}",
                    cold.total_redirects(),
                    cold.total_others(),
                    cold.failed
                ),
            ),
            (
                "uncached codes: refusals by status",
                format!("{:?}", by_status(&cold)),
            ),
            (
                "uncached codes: p99 of refusals",
                format!("{:?}", cold.other_p99()),
            ),
            (
                "API during the freeze: calls, p50 / p99 / max",
                format!("{}, {p50:?} / {p99:?} / {max:?}", calls.len()),
            ),
            ("API during the freeze: statuses", format!("{statuses:?}")),
            (
                "after the thaw: 50 refused misses resolve in",
                format!("{resolved_in:?}"),
            ),
            (
                "after the thaw: a create succeeds in",
                format!("{creates_in:?}"),
            ),
            (
                "nginx: lookup errors logged / answers-again lines",
                format!("{} / {answered_again}", lookup_errors.len()),
            ),
            (
                "daemon: late runs warned / ended",
                format!("{late_runs} / {late_ends}"),
            ),
        ],
    );

    assert_eq!(
        (hot.total_others(), hot.failed),
        (0, 0),
        "cached codes answered something else: {:?}",
        by_status(&hot)
    );
    assert!(
        cold.total_others() > 0,
        "no miss was refused during the freeze: the scenario tested nothing"
    );
    assert_eq!(cold.failed, 0, "misses without an answer");
    assert!(
        cold.others.keys().all(|(_, status)| *status == 503),
        "misses during the freeze get 503: {:?}",
        by_status(&cold)
    );
    assert!(
        cold.other_p99() < Duration::from_secs(1),
        "misses are refused fast: p99 {:?}",
        cold.other_p99()
    );
    let unanswered: Vec<&Call> = calls.iter().filter(|c| c.status.is_err()).collect();
    assert!(
        unanswered.is_empty(),
        "API calls without an answer: {:?}",
        unanswered
            .iter()
            .map(|c| (c.what, c.took, &c.status))
            .collect::<Vec<_>>()
    );
    assert!(
        !log.contains("daemon link down"),
        "nginx dropped its link to the healthy daemon:\n{log}"
    );
    // Misses were refused on a live link, so the outage was logged: its
    // first lookup error and its end, once each.
    assert_eq!(
        (lookup_errors.len(), answered_again),
        (1, 1),
        "one outage, logged once and its end once:\n{log}"
    );
    assert_eq!(
        (late_runs, late_ends),
        (1, 1),
        "the daemon says once that the database is late, and once that it is back:\n{daemon_log}"
    );
    node.nginx.assert_clean_log();
}
