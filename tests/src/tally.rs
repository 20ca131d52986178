//! What the fault suites share to count: links made for the load, clicks
//! sent against clicks counted, answers by status, and the printed report.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::load::Tally;
use crate::Daemon;

/// Creates `n` links through `d` and returns their codes.
pub fn links(d: &Daemon, n: usize, tag: &str) -> Vec<String> {
    if n <= 20 {
        return (0..n)
            .map(|i| d.create(json!({ "url": format!("https://example.com/{tag}/{i}") })))
            .collect();
    }
    let body = json!({ "links": (0..n)
        .map(|i| json!({ "url": format!("https://example.com/{tag}/{i}") }))
        .collect::<Vec<_>>() });
    let r = d.api("POST", "/api/v1/links/batch", Some(&body));
    assert_eq!(r.status, 200, "batch: {}", r.body_text());
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["link"]["code"].as_str().unwrap().to_string())
        .collect()
}

/// Adds the clicks of `from` into `into`.
pub fn add(into: &mut HashMap<String, u64>, from: &HashMap<String, u64>) {
    for (k, v) in from {
        *into.entry(k.clone()).or_default() += v;
    }
}

/// Waits up to `within` until the daemon counts what was sent, then a
/// little longer (nothing may be counted twice); returns (sent, counted)
/// over the codes sent, and how long it took.
pub fn settle(d: &Daemon, sent: &HashMap<String, u64>, within: Duration) -> (u64, u64, Duration) {
    let total: u64 = sent.values().sum();
    let counted = |d: &Daemon| {
        let all = d.clicks_by_code();
        sent.keys()
            .map(|c| all.get(c).copied().unwrap_or(0))
            .sum::<u64>()
    };
    let started = Instant::now();
    while started.elapsed() < within && counted(d) != total {
        std::thread::sleep(Duration::from_millis(200));
    }
    let took = started.elapsed();
    std::thread::sleep(Duration::from_millis(2500));
    (total, counted(d), took)
}

/// The answers other than redirects, by status.
pub fn by_status(t: &Tally) -> HashMap<u16, u64> {
    let mut out = HashMap::new();
    for ((_, status), n) in &t.others {
        *out.entry(*status).or_default() += n;
    }
    out
}

/// Prints a scenario's figures under `suite: name`.
pub fn report(suite: &str, name: &str, lines: &[(&str, String)]) {
    println!("{suite}: {name}");
    for (k, v) in lines {
        println!("  {k:<48} {v}");
    }
}

/// Redirects / others / failed of each load, for a report line.
pub fn per_load(loads: &[Tally]) -> String {
    format!(
        "{:?}",
        loads
            .iter()
            .map(|t| (t.total_redirects(), t.total_others(), t.failed))
            .collect::<Vec<_>>()
    )
}

/// Asserts every request of every load in `loads` of cached codes was
/// answered with a redirect.
pub fn assert_only_redirects(loads: &[Tally]) {
    for t in loads {
        assert_eq!(
            (t.total_others(), t.failed),
            (0, 0),
            "cached codes answered something else: {:?}",
            by_status(t)
        );
    }
}
