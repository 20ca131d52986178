//! The change-log follower on a real PostgreSQL: woken by NOTIFY, caught up
//! after a PostgreSQL restart (notifications sent meanwhile are lost), and
//! carried by the poll alone when notifications are off.

mod pg_common;

use std::time::{Duration, Instant};

use pg_common::migrated;
use shortlinkd::store::postgres::changes;
use shortlinkd::store::postgres::follow::{follow, FollowOptions, Followed};
use shortlinkd::store::postgres::Pg;
use testpg::PgCluster;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Commits one change for `link_id`, then wakes the followers.
async fn write(pg: &Pg, link_id: u64) {
    let mut client = pg.get().await.unwrap();
    let tx = client.transaction().await.unwrap();
    changes::append(&tx, link_id, None, None).await.unwrap();
    tx.commit().await.unwrap();
    changes::notify(&client).await.unwrap();
}

/// Link ids received until `want` arrived or `within` passed.
async fn receive(rx: &mut mpsc::Receiver<Followed>, want: usize, within: Duration) -> Vec<u64> {
    let deadline = Instant::now() + within;
    let mut got = Vec::new();
    while got.len() < want {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, rx.recv()).await {
            Ok(Some(Followed::Changes(c))) => got.extend(c.iter().map(|c| c.link_id)),
            Ok(Some(Followed::Resync(p))) => panic!("unexpected resync at {p:?}"),
            Ok(None) | Err(_) => break,
        }
    }
    got
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listener_is_woken_at_once_and_survives_a_restart_without_missing_a_change() {
    let cluster = PgCluster::start("follow");
    let pg = migrated(&cluster, "follow").await;
    let (tx, mut rx) = mpsc::channel(16);
    let stop = CancellationToken::new();
    // A poll far longer than the test: only NOTIFY and the catch-up after
    // a reconnect can deliver in time.
    let options = FollowOptions {
        poll: Duration::from_secs(600),
        listen: true,
    };
    let follower = tokio::spawn(follow(pg.clone(), 0, options, tx, stop.clone()));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = Instant::now();
    write(&pg, 1).await;
    assert_eq!(receive(&mut rx, 1, Duration::from_secs(5)).await, [1]);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );

    // PostgreSQL goes away and comes back; changes are written before the
    // follower has reconnected, their notifications lost.
    cluster.stop();
    tokio::time::sleep(Duration::from_millis(500)).await;
    cluster.restart();
    assert!(cluster.wait_ready(Duration::from_secs(10)));
    for id in 2..=6 {
        write(&pg, id).await;
    }
    let got = receive(&mut rx, 5, Duration::from_secs(20)).await;
    assert_eq!(got, [2, 3, 4, 5, 6], "each change once, in order");
    // And notifications work again on the new session.
    tokio::time::sleep(Duration::from_millis(300)).await;
    write(&pg, 7).await;
    assert_eq!(receive(&mut rx, 1, Duration::from_secs(10)).await, [7]);
    assert!(receive(&mut rx, 1, Duration::from_millis(300))
        .await
        .is_empty());
    stop.cancel();
    let last = follower.await.unwrap();
    assert!(last > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_notifications_off_the_poll_delivers() {
    let cluster = PgCluster::start("poll");
    let pg = migrated(&cluster, "poll").await;
    let (tx, mut rx) = mpsc::channel(16);
    let stop = CancellationToken::new();
    let options = FollowOptions {
        poll: Duration::from_millis(200),
        listen: false,
    };
    let head = changes::head(&pg.get().await.unwrap()).await.unwrap();
    let follower = tokio::spawn(follow(pg.clone(), head, options, tx, stop.clone()));
    for id in 10..13 {
        let mut client = pg.get().await.unwrap();
        let t = client.transaction().await.unwrap();
        changes::append(&t, id, None, None).await.unwrap();
        t.commit().await.unwrap();
    }
    assert_eq!(
        receive(&mut rx, 3, Duration::from_secs(5)).await,
        [10, 11, 12]
    );
    stop.cancel();
    follower.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_behind_pruned_rows_resyncs_then_goes_on() {
    let cluster = PgCluster::start("resync");
    let pg = migrated(&cluster, "resync").await;
    let key = shortlink_core::DeploymentKey::generate().unwrap();
    shortlinkd::store::postgres::identity::claim(&pg, key.fingerprint())
        .await
        .unwrap();
    for id in 0..6 {
        write(&pg, id).await;
    }
    let mut client = pg.get().await.unwrap();
    assert_eq!(changes::sequence(&mut client).await.unwrap().assigned, 6);
    assert_eq!(changes::prune(&mut client, 2).await.unwrap(), 4);
    let (tx, mut rx) = mpsc::channel(16);
    let stop = CancellationToken::new();
    let options = FollowOptions {
        poll: Duration::from_millis(200),
        listen: true,
    };
    let follower = tokio::spawn(follow(pg.clone(), 0, options, tx, stop.clone()));
    let first = tokio::time::timeout(Duration::from_secs(5), rx.recv()).await;
    let Ok(Some(Followed::Resync(head))) = first else {
        panic!("expected a resync, got {first:?}");
    };
    assert!(head > 0);
    // Nothing before the resync point comes again; what follows does.
    write(&pg, 40).await;
    assert_eq!(receive(&mut rx, 1, Duration::from_secs(5)).await, [40]);
    stop.cancel();
    assert!(follower.await.unwrap() > head);
}
