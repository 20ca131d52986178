//! The change log on a real PostgreSQL with concurrent writers: a reader
//! sees every committed change exactly once, in version order, even when a
//! transaction with a lower seq commits after one with a higher seq.

mod pg_common;

use std::collections::HashSet;
use std::time::Duration;

use pg_common::migrated;
use shortlinkd::pg::changes::{self, Change, LogPosition, LogRead};
use shortlinkd::pg::Pg;
use testpg::PgCluster;

async fn read(pg: &Pg, after: LogPosition) -> Vec<Change> {
    let client = pg.get().await.unwrap();
    match changes::read_after(&client, after, 10_000).await.unwrap() {
        LogRead::Changes(c) => c,
        LogRead::Pruned => panic!("nothing was pruned"),
    }
}

fn ids(changes: &[Change]) -> Vec<u64> {
    changes.iter().map(|c| c.link_id).collect()
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
    // B's change is committed but not final while A may still commit.
    let seen = read(&pg, LogPosition::default()).await;
    assert_eq!(ids(&seen), Vec::<u64>::new());
    ta.commit().await.unwrap();
    let seen = read(&pg, LogPosition::default()).await;
    assert_eq!(ids(&seen), [1, 2]);
    assert_eq!(seen[0].new_alias.as_deref(), Some("one"));
    let pos = seen[1].position;
    assert!(read(&pg, pos).await.is_empty());

    // C takes its xid first, D appends and commits, then C appends (a
    // higher seq, a lower xid) and commits: both come, each once.
    let (mut c, mut d) = (pg.get().await.unwrap(), pg.get().await.unwrap());
    let tc = c.transaction().await.unwrap();
    tc.query_one("SELECT pg_current_xact_id()::text", &[])
        .await
        .unwrap();
    let td = d.transaction().await.unwrap();
    changes::append(&td, 4, None, None).await.unwrap();
    td.commit().await.unwrap();
    assert!(read(&pg, pos).await.is_empty(), "C still runs");
    changes::append(&tc, 3, None, None).await.unwrap();
    tc.commit().await.unwrap();
    let seen = read(&pg, pos).await;
    assert_eq!(ids(&seen), [3, 4], "version order is (xid, seq)");
    assert!(seen[0].position < seen[1].position);
    assert!(read(&pg, seen[1].position).await.is_empty());

    // A rolled-back append is never seen; head is past everything final.
    let mut e = pg.get().await.unwrap();
    let te = e.transaction().await.unwrap();
    changes::append(&te, 99, None, None).await.unwrap();
    te.rollback().await.unwrap();
    assert!(read(&pg, seen[1].position).await.is_empty());
    let head = changes::head(&pg.get().await.unwrap()).await.unwrap();
    assert!(head > seen[1].position);
    assert!(read(&pg, head).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writers_and_a_reader_see_every_change_once_in_order() {
    let cluster = PgCluster::start("writers");
    let pg = migrated(&cluster, "writers").await;
    const WRITERS: u64 = 6;
    const EACH: u64 = 60;
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
                        committed.push(id);
                    }
                }
                committed
            })
        })
        .collect();
    let reader = {
        let pg = pg.clone();
        tokio::spawn(async move {
            let mut pos = LogPosition::default();
            let mut seen = Vec::new();
            for _ in 0..2000 {
                let batch = read(&pg, pos).await;
                for c in &batch {
                    assert!(
                        c.position > pos,
                        "out of order: {:?} after {pos:?}",
                        c.position
                    );
                    pos = c.position;
                }
                seen.extend(ids(&batch));
                if seen.len() as u64 >= WRITERS * EACH * 9 / 10 {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            seen
        })
    };
    let mut committed = HashSet::new();
    for w in writers {
        committed.extend(w.await.unwrap());
    }
    let seen = reader.await.unwrap();
    let unique: HashSet<u64> = seen.iter().copied().collect();
    assert_eq!(unique.len(), seen.len(), "a change was handed out twice");
    assert_eq!(unique, committed, "every committed change, nothing else");
    // Each writer's changes come in its own commit order.
    for w in 0..WRITERS {
        let mine: Vec<u64> = seen.iter().copied().filter(|id| id / 1000 == w).collect();
        assert!(mine.windows(2).all(|p| p[0] < p[1]), "writer {w}: {mine:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_behind_pruned_rows_is_told_to_resync() {
    let cluster = PgCluster::start("prune");
    let pg = migrated(&cluster, "prune").await;
    let key = shortlink_core::DeploymentKey::generate().unwrap();
    shortlinkd::pg::identity::claim(&pg, key.fingerprint())
        .await
        .unwrap();
    for id in 0..10 {
        let mut client = pg.get().await.unwrap();
        let tx = client.transaction().await.unwrap();
        changes::append(&tx, id, None, None).await.unwrap();
        tx.commit().await.unwrap();
    }
    let all = read(&pg, LogPosition::default()).await;
    assert_eq!(all.len(), 10);
    let client = pg.get().await.unwrap();
    assert_eq!(changes::prune(&client, 4).await.unwrap(), 6);
    let behind = changes::read_after(&client, all[2].position, 100)
        .await
        .unwrap();
    assert_eq!(behind, LogRead::Pruned);
    let from_start = changes::read_after(&client, LogPosition::default(), 100).await;
    assert_eq!(from_start.unwrap(), LogRead::Pruned);
    // At the cut or after it, nothing was lost.
    match changes::read_after(&client, all[5].position, 100)
        .await
        .unwrap()
    {
        LogRead::Changes(c) => assert_eq!(ids(&c), [6, 7, 8, 9]),
        LogRead::Pruned => panic!("rows after {:?} are all there", all[5].position),
    }
}
