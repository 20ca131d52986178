//! The change log on a real PostgreSQL with concurrent writers: final rows
//! get consecutive versions, in `(xid, seq)` order, once; every reader sees
//! every committed change exactly once, in version order, even when a
//! transaction with a lower seq commits after one with a higher seq; and
//! two followers see the very same version sequence.

mod pg_common;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use pg_common::migrated;
use shortlinkd::store::postgres::changes::{self, Change, LogRead};
use shortlinkd::store::postgres::follow::{follow, FollowOptions, Followed};
use shortlinkd::store::postgres::Pg;
use testpg::PgCluster;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Versions what is final, then reads every version after `after`.
async fn read(pg: &Pg, after: u64) -> Vec<Change> {
    let mut client = pg.get().await.unwrap();
    changes::sequence(&mut client).await.unwrap();
    match changes::read_after(&client, after, 10_000).await.unwrap() {
        LogRead::Changes(c) => c,
        LogRead::Pruned => panic!("nothing was pruned"),
    }
}

fn ids(changes: &[Change]) -> Vec<u64> {
    changes.iter().map(|c| c.link_id).collect()
}

fn versions(changes: &[Change]) -> Vec<u64> {
    changes.iter().map(|c| c.seq).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_committed_late_with_a_lower_seq_is_not_skipped() {
    let cluster = PgCluster::start("late");
    let pg = migrated(&cluster, "late").await;
    let (mut a, mut b) = (pg.get().await.unwrap(), pg.get().await.unwrap());
    // A appends first (lower seq) and stays open; B appends and commits.
    let ta = a.transaction().await.unwrap();
    changes::append(&ta, 1, None, Some("one")).await.unwrap();
    let tb = b.transaction().await.unwrap();
    changes::append(&tb, 2, None, None).await.unwrap();
    tb.commit().await.unwrap();
    // B's change is committed but not final while A may still commit: it
    // gets no version, and sequencing says it waits.
    let mut c0 = pg.get().await.unwrap();
    let s = changes::sequence(&mut c0).await.unwrap();
    assert_eq!(s.assigned, 0);
    assert!(s.waiting.is_some(), "{s:?}");
    assert_eq!(ids(&read(&pg, 0).await), Vec::<u64>::new());
    ta.commit().await.unwrap();
    let seen = read(&pg, 0).await;
    assert_eq!(ids(&seen), [1, 2]);
    assert_eq!(versions(&seen), [1, 2]);
    assert_eq!(seen[0].new_alias.as_deref(), Some("one"));
    assert!(read(&pg, 2).await.is_empty());

    // C takes its xid first, D appends and commits, then C appends (a
    // higher seq, a lower xid) and commits: both come, each once, C first.
    let (mut c, mut d) = (pg.get().await.unwrap(), pg.get().await.unwrap());
    let tc = c.transaction().await.unwrap();
    tc.query_one("SELECT pg_current_xact_id()::text", &[])
        .await
        .unwrap();
    let td = d.transaction().await.unwrap();
    changes::append(&td, 4, None, None).await.unwrap();
    td.commit().await.unwrap();
    assert!(read(&pg, 2).await.is_empty(), "C still runs");
    changes::append(&tc, 3, None, None).await.unwrap();
    tc.commit().await.unwrap();
    let seen = read(&pg, 2).await;
    assert_eq!(ids(&seen), [3, 4], "versions follow (xid, seq)");
    assert_eq!(versions(&seen), [3, 4]);

    // A rolled-back append is never seen and takes no version; head is
    // the newest version.
    let mut e = pg.get().await.unwrap();
    let te = e.transaction().await.unwrap();
    changes::append(&te, 99, None, None).await.unwrap();
    te.rollback().await.unwrap();
    assert!(read(&pg, 4).await.is_empty());
    assert_eq!(changes::head(&pg.get().await.unwrap()).await.unwrap(), 4);
}

/// Link ids and versions a follower hands over until it has `want`
/// changes or `within` passed.
async fn collect(
    rx: &mut mpsc::Receiver<Followed>,
    want: usize,
    within: Duration,
) -> Vec<(u64, u64)> {
    let deadline = Instant::now() + within;
    let mut got = Vec::new();
    while got.len() < want {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, rx.recv()).await {
            Ok(Some(Followed::Changes(c))) => got.extend(c.iter().map(|c| (c.seq, c.link_id))),
            Ok(Some(Followed::Resync(p))) => panic!("unexpected resync at {p}"),
            Ok(None) | Err(_) => break,
        }
    }
    got
}

/// Writers on several connections, some rolling back, one transaction that
/// took its xid before all of them and commits after all of them, and two
/// followers (each versioning whatever is final when it gets there first):
/// both followers hand over the same versions 1..=n, each change once,
/// every committed change and nothing else.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_followers_see_one_version_sequence_without_gap_or_loss() {
    let cluster = PgCluster::start("writers");
    let pg = migrated(&cluster, "writers").await;
    const WRITERS: u64 = 6;
    const EACH: u64 = 60;
    let stop = CancellationToken::new();
    let options = FollowOptions {
        poll: Duration::from_millis(20),
        listen: true,
    };
    let (tx1, mut rx1) = mpsc::channel(64);
    let (tx2, mut rx2) = mpsc::channel(64);
    let f1 = tokio::spawn(follow(pg.clone(), 0, options, tx1, stop.clone()));
    let f2 = tokio::spawn(follow(pg.clone(), 0, options, tx2, stop.clone()));

    // The early transaction: xid first, its change last.
    let mut early = pg.get().await.unwrap();
    let te = early.transaction().await.unwrap();
    te.query_one("SELECT pg_current_xact_id()::text", &[])
        .await
        .unwrap();

    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let pg = pg.clone();
            tokio::spawn(async move {
                let mut client = pg.get().await.unwrap();
                let mut committed = Vec::new();
                for i in 0..EACH {
                    let tx = client.transaction().await.unwrap();
                    let id = w * 1000 + i;
                    changes::append(&tx, id, None, None).await.unwrap();
                    // Hold some transactions open while others commit.
                    tokio::time::sleep(Duration::from_millis((id * 7) % 5)).await;
                    if i % 10 == 9 {
                        tx.rollback().await.unwrap();
                    } else {
                        tx.commit().await.unwrap();
                        changes::notify(&client).await.unwrap();
                        committed.push(id);
                    }
                }
                committed
            })
        })
        .collect();
    let mut committed = HashSet::new();
    for w in writers {
        committed.extend(w.await.unwrap());
    }
    // Nothing after the early transaction's xid is final yet.
    let s = changes::sequence(&mut pg.get().await.unwrap())
        .await
        .unwrap();
    assert!(s.waiting.is_some(), "{s:?}");
    changes::append(&te, 999_999, None, None).await.unwrap();
    te.commit().await.unwrap();
    changes::notify(&early).await.unwrap();
    committed.insert(999_999);

    let n = committed.len();
    let a = collect(&mut rx1, n, Duration::from_secs(30)).await;
    let b = collect(&mut rx2, n, Duration::from_secs(30)).await;
    stop.cancel();
    assert_eq!(f1.await.unwrap(), n as u64);
    assert_eq!(f2.await.unwrap(), n as u64);
    assert_eq!(a, b, "both followers see one sequence");
    let got_versions: Vec<u64> = a.iter().map(|(v, _)| *v).collect();
    assert_eq!(got_versions, (1..=n as u64).collect::<Vec<_>>(), "no gap");
    let got: HashSet<u64> = a.iter().map(|(_, id)| *id).collect();
    assert_eq!(got.len(), n, "a change was handed out twice");
    assert_eq!(got, committed, "every committed change, nothing else");
    // The early transaction's change comes first: its xid is the lowest.
    assert_eq!(a[0].1, 999_999);
    // Each writer's changes come in its own commit order.
    for w in 0..WRITERS {
        let mine: Vec<u64> = a
            .iter()
            .map(|(_, id)| *id)
            .filter(|id| id / 1000 == w)
            .collect();
        assert!(mine.windows(2).all(|p| p[0] < p[1]), "writer {w}: {mine:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_behind_pruned_rows_is_told_to_resync() {
    let cluster = PgCluster::start("prune");
    let pg = migrated(&cluster, "prune").await;
    let key = shortlink_core::DeploymentKey::generate().unwrap();
    shortlinkd::store::postgres::identity::claim(&pg, key.fingerprint())
        .await
        .unwrap();
    for id in 0..10 {
        let mut client = pg.get().await.unwrap();
        let tx = client.transaction().await.unwrap();
        changes::append(&tx, id, None, None).await.unwrap();
        tx.commit().await.unwrap();
    }
    let all = read(&pg, 0).await;
    assert_eq!(versions(&all), (1..=10).collect::<Vec<_>>());
    let mut client = pg.get().await.unwrap();
    assert_eq!(changes::prune(&mut client, 4).await.unwrap(), 6);
    let behind = changes::read_after(&client, 3, 100).await.unwrap();
    assert_eq!(behind, LogRead::Pruned);
    let from_start = changes::read_after(&client, 0, 100).await;
    assert_eq!(from_start.unwrap(), LogRead::Pruned);
    // At the cut or after it, nothing was lost.
    match changes::read_after(&client, 6, 100).await.unwrap() {
        LogRead::Changes(c) => assert_eq!(ids(&c), [6, 7, 8, 9]),
        LogRead::Pruned => panic!("versions after 6 are all there"),
    }
    // Pruning everything keeps the head: the next version is 11, not 1.
    changes::prune(&mut client, 0).await.unwrap();
    assert_eq!(changes::head(&client).await.unwrap(), 10);
    let tx = client.transaction().await.unwrap();
    changes::append(&tx, 50, None, None).await.unwrap();
    tx.commit().await.unwrap();
    assert_eq!(versions(&read(&pg, 10).await), [11]);
}

/// A session left idle inside a transaction would hold back every node's
/// versions: each pooled connection has the server end it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pooled_connections_end_idle_transactions() {
    let cluster = PgCluster::start("idle");
    let pg = migrated(&cluster, "idle").await;
    let row = pg
        .get()
        .await
        .unwrap()
        .query_one("SHOW idle_in_transaction_session_timeout", &[])
        .await
        .unwrap();
    assert_eq!(row.get::<_, String>(0), "1min");
}

async fn append_many(client: &mut deadpool_postgres::Client, n: u64) {
    let tx = client.transaction().await.unwrap();
    for id in 0..n {
        changes::append(&tx, id, None, None).await.unwrap();
    }
    tx.commit().await.unwrap();
}

/// Sequencing prunes on its own: each time the versions cross a multiple
/// of 1024 it keeps the newest `keep` and marks the rest pruned, so a
/// reader before the cut resyncs and one after it loses nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sequencing_prunes_past_what_it_keeps() {
    let cluster = PgCluster::start("autoprune");
    let pg = migrated(&cluster, "autoprune").await;
    let key = shortlink_core::DeploymentKey::generate().unwrap();
    shortlinkd::store::postgres::identity::claim(&pg, key.fingerprint())
        .await
        .unwrap();
    let mut client = pg.get().await.unwrap();
    append_many(&mut client, 1000).await;
    let s = changes::sequence_keeping(&mut client, 10).await.unwrap();
    assert_eq!(s.assigned, 1000);
    assert_eq!(
        versions(&read(&pg, 0).await).len(),
        1000,
        "no multiple of 1024 crossed yet"
    );
    append_many(&mut client, 100).await;
    changes::sequence_keeping(&mut client, 10).await.unwrap();
    assert_eq!(changes::head(&client).await.unwrap(), 1100);
    assert_eq!(
        changes::read_after(&client, 1089, 100).await.unwrap(),
        LogRead::Pruned
    );
    match changes::read_after(&client, 1090, 100).await.unwrap() {
        LogRead::Changes(c) => assert_eq!(versions(&c), (1091..=1100).collect::<Vec<_>>()),
        LogRead::Pruned => panic!("the newest 10 are kept"),
    }
}
