//! Visit leases of limited links over IPC (on SQLite and, under with-pg,
//! PostgreSQL): what the edges are granted adds up to `max_visits` and no
//! more, however many connections ask at once; unspent visits come back
//! and are leased again; a link without a limit, a switched-off or an
//! unknown one get what their state allows.

mod common;

use common::{Daemon, Ipc};
use serde_json::json;
use shortlink_core::ipc::{Reply, Request};

/// The grant of one lease of `want` visits of `link`.
async fn lease(c: &mut Ipc, id: u32, link: u64, want: u32) -> u32 {
    c.send(&Request::LeaseVisits {
        id,
        link_id: link,
        want,
    })
    .await;
    loop {
        match c.recv().await.expect("a reply") {
            Reply::Visits { id: got, granted } if got == id => return granted,
            Reply::Event(_) => continue,
            other => panic!("unexpected {other:?}"),
        }
    }
}

async fn give_back(c: &mut Ipc, id: u32, link: u64, count: u32) {
    c.send(&Request::ReturnVisits {
        id,
        link_id: link,
        count,
    })
    .await;
    loop {
        match c.recv().await.expect("a reply") {
            Reply::Visits { id: got, granted } if got == id => {
                assert_eq!(granted, 0);
                return;
            }
            Reply::Event(_) => continue,
            other => panic!("unexpected {other:?}"),
        }
    }
}

#[tokio::test]
async fn leases_add_up_to_the_limit_and_unspent_visits_come_back() {
    let d = Daemon::start().await;
    let id = |v: serde_json::Value| v["id"].as_u64().unwrap();
    let ten = id(d
        .create(json!({"url": "https://e.com/ten", "max_visits": 10}))
        .await);
    let mut c = d.ipc().await;
    assert_eq!(
        lease(&mut c, 1, ten, 1).await,
        2,
        "an eighth of 10, rounded up"
    );
    assert_eq!(lease(&mut c, 2, ten, 5).await, 5, "what is asked");
    assert_eq!(lease(&mut c, 3, ten, 1).await, 1);
    assert_eq!(lease(&mut c, 4, ten, 9).await, 2, "what is left");
    assert_eq!(lease(&mut c, 5, ten, 1).await, 0, "nothing left");
    give_back(&mut c, 6, ten, 3).await;
    assert_eq!(lease(&mut c, 7, ten, 9).await, 3, "what came back");
    assert_eq!(lease(&mut c, 8, ten, 1).await, 0);

    let open = id(d.create(json!({"url": "https://e.com/open"})).await);
    assert_eq!(
        lease(&mut c, 9, open, 4).await,
        4,
        "no limit: what is asked"
    );
    let off = id(d
        .create(json!({"url": "https://e.com/off", "max_visits": 5, "disabled": true}))
        .await);
    assert_eq!(lease(&mut c, 10, off, 1).await, 0, "switched off");
    assert_eq!(lease(&mut c, 11, 999_999, 1).await, 0, "no such link");
    let m = d.metric("shortlinkd_visits_leased_total").await;
    assert_eq!(m, 17.0, "leased: 10 + 3 again + 4");
}

/// Many connections (as many nginx workers and nodes) leasing one link at
/// once get its limit between them, exactly.
#[tokio::test]
async fn concurrent_leases_never_pass_the_limit() {
    let d = Daemon::start().await;
    let link = d
        .create(json!({"url": "https://e.com/race", "max_visits": 250}))
        .await["id"]
        .as_u64()
        .unwrap();
    let mut tasks = Vec::new();
    for _ in 0..6 {
        let mut c = d.ipc().await;
        tasks.push(tokio::spawn(async move {
            let (mut total, mut id) = (0u32, 0u32);
            loop {
                id += 1;
                match lease(&mut c, id, link, 1 + id % 4).await {
                    0 => return total,
                    g => total += g,
                }
            }
        }));
    }
    let mut total = 0;
    for t in tasks {
        total += t.await.unwrap();
    }
    assert_eq!(total, 250);
}
