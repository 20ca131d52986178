//! Visit limits are exact: a person's redirect spends a visit the daemon
//! leased to the node (kept in the zone for every worker), so a burst on
//! one node, or load on two nodes, never gets more than `max_visits`
//! redirects, and gets all of them; raising the limit leases more.

use std::sync::{Arc, Barrier};
use std::time::Duration;

use serde_json::json;
use shortlink_e2e::Cluster;
use shortlink_e2e::{eventually, Stack};

/// `n` requests for `code` at once, from `n` threads released together;
/// the statuses they got.
fn burst(get: impl Fn() -> u16 + Send + Sync + 'static, n: usize) -> Vec<u16> {
    let get = Arc::new(get);
    let start = Arc::new(Barrier::new(n));
    let threads: Vec<_> = (0..n)
        .map(|_| {
            let (get, start) = (Arc::clone(&get), Arc::clone(&start));
            std::thread::spawn(move || {
                start.wait();
                get()
            })
        })
        .collect();
    threads.into_iter().map(|t| t.join().unwrap()).collect()
}

fn count(statuses: &[u16], status: u16) -> usize {
    statuses.iter().filter(|&&s| s == status).count()
}

#[test]
fn a_burst_on_one_node_gets_exactly_the_limit() {
    let s = Arc::new(Stack::start("visits-burst", 2));
    let code = s
        .daemon
        .create(json!({"url": "https://example.com/three", "max_visits": 3}));
    let (s2, c2) = (Arc::clone(&s), code.clone());
    let got = burst(move || s2.get(&c2, &[]).status, 40);
    assert_eq!(count(&got, 302), 3, "{got:?}");
    assert_eq!(count(&got, 410), 37, "{got:?}");
    assert_eq!(s.get(&code, &[]).status, 410, "and after it");
    assert!(
        eventually(Duration::from_secs(10), || s.daemon.clicks(&code) == 3),
        "clicks: {}",
        s.daemon.clicks(&code)
    );
    // A HEAD and a bot spend nothing: a raised limit still has its visits.
    let r = s.daemon.api(
        "PATCH",
        &format!("/api/v1/links/{code}"),
        Some(&json!({"max_visits": 5})),
    );
    assert_eq!(r.status, 200, "{}", r.body_text());
    assert!(
        eventually(Duration::from_secs(5), || {
            s.nginx
                .request(b"HEAD", format!("/{code}").as_bytes(), &[], b"")
                .status
                == 302
        }),
        "the raised limit reaches the edge"
    );
    assert_eq!(s.get(&code, &[("User-Agent", "curl/8.5.0")]).status, 302);
    let got: Vec<u16> = (0..6).map(|_| s.get(&code, &[]).status).collect();
    assert_eq!(got, [302, 302, 410, 410, 410, 410]);
    s.nginx.assert_clean_log();
}

#[test]
fn load_on_two_nodes_gets_exactly_the_limit() {
    let c = Arc::new(Cluster::start("visits-two-nodes", 2));
    let code = c.nodes[0]
        .daemon
        .create(json!({"url": "https://example.org/hundred", "max_visits": 100}));
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let (c, code) = (Arc::clone(&c), code.clone());
            std::thread::spawn(move || {
                (0..40)
                    .map(|_| c.nodes[t % 2].get(&code).status)
                    .collect::<Vec<u16>>()
            })
        })
        .collect();
    let got: Vec<u16> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    let redirected = count(&got, 302);
    assert_eq!(redirected, 100, "320 visits over two nodes");
    assert_eq!(count(&got, 410), 220);
    assert!(
        eventually(Duration::from_secs(10), || c.nodes[0].daemon.clicks(&code)
            == 100),
        "clicks: {}",
        c.nodes[0].daemon.clicks(&code)
    );
    println!("two nodes: max_visits 100, 320 concurrent visits: {redirected} redirected");
}
