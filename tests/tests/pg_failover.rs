//! Failover of the shared PostgreSQL under load (issue 40): a primary with
//! a synchronous standby, two nodes whose URL lists both servers with
//! `target_session_attrs=read-write`, redirects and creates running; the
//! primary is killed (SIGKILL, a host that dies) or stopped (SIGSTOP, a
//! host that hangs), and the standby is promoted as a failover manager
//! would. Each scenario prints the gap (promotion → first create that
//! succeeds on each node) and asserts: cached codes never fail, creates
//! are refused with a JSON 503 within the configured bounds during the
//! gap and succeed again within 5 s of the promotion, every acknowledged
//! create is there after it, and every redirect is counted once.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use shortlink_e2e::load::{Load, Tally};
use shortlink_e2e::tally::{add, assert_only_redirects, links, per_load, settle};
use shortlink_e2e::{Cluster, Node};

/// The daemons' bounds here: 1 s per server to connect and for the pool,
/// 5 s of statement time, so a request on a hung server is given up
/// after 6 s (`database_statement_timeout + database_timeout`).
const SETTINGS: &str = "database_timeout = 1\ndatabase_statement_timeout = 5\n";

/// The longest a refused create may take with [`SETTINGS`]: a request
/// already on the hung server (6 s), then a connection tried on both
/// servers (1 s each) and the pool's own second; 2 s more for a busy
/// machine.
const REFUSAL_BOUND: Duration = Duration::from_secs(6 + 3 + 2);

/// What the issue allows between the promotion and creates succeeding.
const RECOVERY_BOUND: Duration = Duration::from_secs(5);

/// How the primary fails.
#[derive(Clone, Copy, Debug)]
enum Fault {
    /// SIGKILL of every server process: connections reset at once.
    Kill,
    /// SIGSTOP of every server process: connections stay open, nothing
    /// answers, new connections are accepted and never greeted.
    Stop,
}

/// One create through a node's API.
struct Attempt {
    sent: Instant,
    took: Duration,
    status: u16,
    /// The code of a 201, the error code of anything else.
    code: String,
    url: String,
}

/// Creates links on `node` until `stop`, one after another.
fn creates(node: &Node, tag: &str, stop: &AtomicBool) -> Vec<Attempt> {
    let mut out = Vec::new();
    let mut i = 0;
    while !stop.load(Ordering::Relaxed) {
        let url = format!("https://example.com/{tag}/{i}");
        i += 1;
        let sent = Instant::now();
        let r = node
            .daemon
            .api("POST", "/api/v1/links", Some(&json!({ "url": url })));
        let took = sent.elapsed();
        let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap_or_default();
        let code = if r.status == 201 {
            v["code"].as_str().unwrap_or_default().to_string()
        } else {
            v["error"]["code"].as_str().unwrap_or_default().to_string()
        };
        out.push(Attempt {
            sent,
            took,
            status: r.status,
            code,
            url,
        });
        std::thread::sleep(Duration::from_millis(20));
    }
    out
}

/// Percentile `p` of `v` (sorted here).
fn pct(v: &mut [Duration], p: usize) -> Duration {
    if v.is_empty() {
        return Duration::ZERO;
    }
    v.sort();
    v[((v.len() * p).div_ceil(100))
        .saturating_sub(1)
        .min(v.len() - 1)]
}

fn failover(name: &str, fault: Fault) {
    let c = Cluster::start_replicated(name, 2, SETTINGS);
    let (a, b) = (&c.nodes[0], &c.nodes[1]);
    let standby = c.standby.as_ref().expect("a standby");
    let cached = links(&a.daemon, 10, "cached");
    let mut sent: HashMap<String, u64> = HashMap::new();
    let hot = c.hot_load(&cached, &mut sent, Duration::from_millis(2));

    let stop = AtomicBool::new(false);
    let (attempts, faulted, promoted) = std::thread::scope(|s| {
        let makers: Vec<_> = c
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let stop = &stop;
                s.spawn(move || creates(n, &format!("node{i}"), stop))
            })
            .collect();
        std::thread::sleep(Duration::from_secs(2));
        let faulted = Instant::now();
        match fault {
            Fault::Kill => c.pg.kill_hard(),
            Fault::Stop => c.pg.freeze(),
        }
        // A failover manager's time to notice.
        std::thread::sleep(Duration::from_secs(2));
        standby.promote();
        let promoted = Instant::now();
        // Until every node has created after the promotion, or well past
        // the bound (the assertions below say which).
        std::thread::sleep(RECOVERY_BOUND + Duration::from_secs(3));
        stop.store(true, Ordering::Relaxed);
        let attempts: Vec<Vec<Attempt>> = makers
            .into_iter()
            .map(|m| m.join().expect("creates"))
            .collect();
        (attempts, faulted, promoted)
    });
    let hot: Vec<Tally> = hot.into_iter().map(Load::stop).collect();
    // The old primary is fenced, as a failover manager would.
    c.pg.kill_hard();

    // Every acknowledged create is on the new primary and redirects on
    // both nodes.
    let made: Vec<&Attempt> = attempts
        .iter()
        .flatten()
        .filter(|x| x.status == 201)
        .collect();
    for x in &made {
        for n in &c.nodes {
            let r = n.get(&x.code);
            assert_eq!(
                (r.status, r.header("Location")),
                (302, Some(x.url.as_str())),
                "acknowledged create {} ({}) after the failover",
                x.code,
                x.url
            );
            *sent.entry(x.code.clone()).or_default() += 1;
        }
    }
    for t in &hot {
        add(&mut sent, &t.redirects);
    }
    let (total, counted_a, took) = settle(&a.daemon, &sent, Duration::from_secs(60));
    let (_, counted_b, _) = settle(&b.daemon, &sent, Duration::from_secs(10));

    let gaps: Vec<Option<Duration>> = attempts
        .iter()
        .map(|xs| {
            xs.iter()
                .find(|x| x.status == 201 && x.sent >= promoted)
                .map(|x| (x.sent + x.took).duration_since(promoted))
        })
        .collect();
    let outage: Vec<Option<Duration>> = attempts
        .iter()
        .map(|xs| {
            let last_before = xs
                .iter()
                .filter(|x| x.status == 201 && x.sent + x.took <= faulted)
                .map(|x| x.sent + x.took)
                .max()?;
            let first_after = xs
                .iter()
                .find(|x| x.status == 201 && x.sent > faulted)
                .map(|x| x.sent + x.took)?;
            Some(first_after.duration_since(last_before))
        })
        .collect();
    let mut refused: Vec<Duration> = attempts
        .iter()
        .flatten()
        .filter(|x| x.status != 201)
        .map(|x| x.took)
        .collect();
    let statuses: HashMap<(u16, String), usize> = attempts
        .iter()
        .flatten()
        .filter(|x| x.status != 201)
        .fold(HashMap::new(), |mut m, x| {
            *m.entry((x.status, x.code.clone())).or_default() += 1;
            m
        });
    shortlink_e2e::tally::report(
        "PostgreSQL failover",
        &format!("primary {fault:?}, standby promoted 2 s later, under load on two nodes"),
        &[
            ("promotion -> first create per node", format!("{gaps:?}")),
            (
                "last create before -> first after, per node",
                format!("{outage:?}"),
            ),
            (
                "creates: acknowledged / refused",
                format!("{} / {}", made.len(), refused.len()),
            ),
            ("refusals by status and code", format!("{statuses:?}")),
            (
                "refusals: p50 / p99 / max",
                format!(
                    "{:?} / {:?} / {:?}",
                    pct(&mut refused, 50),
                    pct(&mut refused, 99),
                    refused.iter().max().copied().unwrap_or_default()
                ),
            ),
            (
                "cached codes, per node: redirects / others / failed",
                per_load(&hot),
            ),
            (
                "clicks sent / counted on A / on B",
                format!("{total} / {counted_a} / {counted_b} (settled in {took:?})"),
            ),
        ],
    );

    assert_only_redirects(&hot);
    assert!(
        !refused.is_empty(),
        "no create was refused: the fault tested nothing"
    );
    for x in attempts.iter().flatten().filter(|x| x.status != 201) {
        assert_eq!(
            (x.status, x.code.is_empty()),
            (503, false),
            "a refused create is a JSON 503 with a code"
        );
        assert!(
            x.took < REFUSAL_BOUND,
            "a create was refused only after {:?}",
            x.took
        );
    }
    for (i, gap) in gaps.iter().enumerate() {
        let gap = gap.unwrap_or_else(|| panic!("node {i} never created after the promotion"));
        assert!(
            gap <= RECOVERY_BOUND,
            "node {i}: creates succeeded {gap:?} after the promotion"
        );
    }
    assert_eq!(
        (counted_a, counted_b),
        (total, total),
        "clicks sent = counted"
    );
}

#[test]
fn a_killed_primary_is_followed_to_its_promoted_standby() {
    failover("pg-failover-kill", Fault::Kill);
}

#[test]
fn a_hung_primary_is_followed_to_its_promoted_standby() {
    failover("pg-failover-stop", Fault::Stop);
}
