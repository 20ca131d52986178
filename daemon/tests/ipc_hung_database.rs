//! The IPC server on a hung PostgreSQL (issue 40): its server processes
//! stopped, so nothing the daemon asks it ever answers. A worker's lookup
//! miss, password check and visit lease each get an error reply within the
//! daemon's edge deadline (below nginx's default `shortlink_timeout`, so the
//! worker never takes the daemon for dead), while the connection goes on
//! answering what needs no database. After the thaw a lease that finished
//! past the deadline has handed its visits back.

mod common;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use common::Ipc;
use serde_json::json;
use shortlink_core::ipc::{LookupResult, Reply, Request};
use testpg::PgCluster;

/// The daemon's edge deadline in these tests.
const EDGE_TIMEOUT_MS: u64 = 100;
/// nginx's default `shortlink_timeout`: the worker must hear back sooner.
const NGINX_TIMEOUT: Duration = Duration::from_millis(500);
/// Generous for any machine: the wait for what must come at all.
const AMPLE: Duration = Duration::from_secs(60);

/// Replies to the ids in `ids`, each with how long after `sent` it came
/// (events pushed meanwhile are skipped).
async fn replies(c: &mut Ipc, ids: &[u32], sent: Instant) -> HashMap<u32, (Reply, Duration)> {
    let mut got = HashMap::new();
    while got.len() < ids.len() {
        let reply = c
            .recv_timeout(AMPLE)
            .await
            .unwrap_or_else(|()| panic!("no reply in {AMPLE:?}; have {got:?}"))
            .expect("the daemon kept the connection");
        let id = match &reply {
            Reply::Lookup { id, .. }
            | Reply::Error { id, .. }
            | Reply::Password { id, .. }
            | Reply::Visits { id, .. }
            | Reply::Pong { id } => *id,
            _ => continue,
        };
        assert!(ids.contains(&id), "a reply to {id}: {reply:?}");
        got.insert(id, (reply, sent.elapsed()));
    }
    got
}

/// Leases `want` visits of `link`; the grant.
async fn lease(c: &mut Ipc, id: u32, link: u64, want: u32) -> u32 {
    c.send(&Request::LeaseVisits {
        id,
        link_id: link,
        want,
    })
    .await;
    match replies(c, &[id], Instant::now()).await.remove(&id) {
        Some((Reply::Visits { granted, .. }, _)) => granted,
        other => panic!("lease: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_database_is_answered_within_the_edge_deadline_on_a_live_connection() {
    let cluster = PgCluster::start("ipc-hung");
    let url = cluster.create_db("links");
    let deadline = EDGE_TIMEOUT_MS.to_string();
    let d = common::on_cluster(&cluster, &url, &["--edge-timeout-ms", &deadline]).await;
    // Made in a batch: not in the daemon's cache, so a lookup needs the
    // database.
    let (s, v) = d
        .req(
            "POST",
            "/api/v1/links/batch",
            Some(json!({"links": [{"url": "https://e.com/uncached"}]})),
        )
        .await;
    assert_eq!(s, 200, "{v}");
    let uncached = v["results"][0]["link"]["code"]
        .as_str()
        .unwrap()
        .to_string();
    // Made one at a time: in the daemon's cache.
    let cached = d.create(json!({"url": "https://e.com/cached"})).await;
    let cached = cached["code"].as_str().unwrap().to_string();
    d.create(json!({"url": "https://e.com/secret", "alias": "pw", "password": "open sesame"}))
        .await;
    let limited = d
        .create(json!({"url": "https://e.com/ten", "max_visits": 10}))
        .await["id"]
        .as_u64()
        .unwrap();
    let mut c = d.ipc().await;

    cluster.freeze();
    let sent = Instant::now();
    for request in [
        Request::Lookup {
            id: 1,
            code: uncached.clone(),
        },
        Request::CheckPassword {
            id: 2,
            code: "pw".into(),
            password: "open sesame".into(),
            client: "192.0.2.1".into(),
        },
        Request::LeaseVisits {
            id: 3,
            link_id: limited,
            want: 1,
        },
        Request::Ping { id: 4 },
        Request::Lookup {
            id: 5,
            code: cached.clone(),
        },
    ] {
        c.send(&request).await;
    }
    let got = replies(&mut c, &[1, 2, 3, 4, 5], sent).await;
    for id in 1..=5 {
        let (reply, took) = &got[&id];
        println!("  request {id} answered in {took:?}: {reply:?}");
    }
    for id in [1, 2, 3] {
        let (reply, took) = &got[&id];
        match reply {
            Reply::Error { message, .. } => assert!(
                message.contains("edge_timeout_ms"),
                "request {id}: {message}"
            ),
            other => panic!("request {id}: expected an error, got {other:?}"),
        }
        assert!(
            *took < NGINX_TIMEOUT,
            "request {id} answered after {took:?}, past nginx's default timeout"
        );
    }
    assert!(matches!(got[&4].0, Reply::Pong { .. }), "{:?}", got[&4]);
    assert!(
        matches!(&got[&5].0, Reply::Lookup { result: LookupResult::Found(l), .. } if l.target == "https://e.com/cached"),
        "a code the daemon holds needs no database: {:?}",
        got[&5]
    );
    cluster.thaw();

    // Back: the miss resolves, and the lease that went on past the deadline
    // handed its visits back, so all ten can be leased again.
    let thawed = Instant::now();
    c.send(&Request::Lookup {
        id: 6,
        code: uncached.clone(),
    })
    .await;
    loop {
        let reply = replies(&mut c, &[6], Instant::now()).await.remove(&6);
        match reply {
            Some((Reply::Lookup { result, .. }, _)) => {
                assert!(
                    matches!(&result, LookupResult::Found(l) if l.target == "https://e.com/uncached"),
                    "{result:?}"
                );
                break;
            }
            Some((Reply::Error { message, .. }, _)) => {
                assert!(thawed.elapsed() < AMPLE, "lookups still fail: {message}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                c.send(&Request::Lookup {
                    id: 6,
                    code: uncached.clone(),
                })
                .await;
            }
            other => panic!("{other:?}"),
        }
    }
    let mut id = 100;
    loop {
        id += 1;
        let granted = lease(&mut c, id, limited, 10).await;
        if granted == 10 {
            break;
        }
        assert!(
            thawed.elapsed() < AMPLE,
            "only {granted} of 10 visits can be leased: the late lease kept some"
        );
        id += 1;
        c.send(&Request::ReturnVisits {
            id,
            link_id: limited,
            count: granted,
        })
        .await;
        replies(&mut c, &[id], Instant::now()).await;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let log = d.log();
    assert_eq!(
        log.matches("did not answer an nginx worker's request within edge_timeout_ms")
            .count(),
        1,
        "the late calls are warned once:\n{log}"
    );
}
