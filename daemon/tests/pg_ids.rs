//! Id leases on a real PostgreSQL: concurrent leases from many connections
//! never overlap, leave no gap and never fail on a conflict.

mod pg_common;

use pg_common::migrated;
use shortlinkd::pg::ids;
use testpg::PgCluster;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_leases_are_disjoint_and_contiguous() {
    let cluster = PgCluster::start("ids");
    let pg = migrated(&cluster, "ids").await;
    const TASKS: usize = 8;
    const SEGMENTS: usize = 500;
    const SIZE: u64 = 7;
    const FLOOR: u64 = 1000;
    // Each task on its own connection, all started together.
    let gate = std::sync::Arc::new(tokio::sync::Barrier::new(TASKS));
    let tasks: Vec<_> = (0..TASKS)
        .map(|_| {
            let (pg, gate) = (pg.clone(), gate.clone());
            tokio::spawn(async move {
                let client = pg.get().await.unwrap();
                gate.wait().await;
                let mut got = Vec::with_capacity(SEGMENTS);
                for _ in 0..SEGMENTS {
                    got.push(ids::lease(&client, "links", FLOOR, SIZE).await.unwrap());
                }
                got
            })
        })
        .collect();
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    all.sort_by_key(|r| r.start);
    assert_eq!(all.len(), TASKS * SEGMENTS);
    assert_eq!(all[0].start, FLOOR);
    for pair in all.windows(2) {
        assert_eq!(pair[0].end, pair[1].start, "overlap or gap: {pair:?}");
    }
    assert!(all.iter().all(|r| r.end - r.start == SIZE));
    let next = cluster.psql("ids", "SELECT next FROM id_alloc WHERE name = 'links'");
    assert_eq!(next, (FLOOR + SIZE * (TASKS * SEGMENTS) as u64).to_string());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_floor_and_imported_ids_move_leases_up_never_back() {
    let cluster = PgCluster::start("floor");
    let pg = migrated(&cluster, "floor").await;
    let c = pg.get().await.unwrap();
    assert_eq!(ids::lease(&c, "links", 100, 10).await.unwrap(), 100..110);
    assert_eq!(ids::lease(&c, "links", 100, 10).await.unwrap(), 110..120);
    assert_eq!(ids::lease(&c, "links", 1000, 5).await.unwrap(), 1000..1005);
    assert_eq!(ids::lease(&c, "links", 100, 5).await.unwrap(), 1005..1010);
    ids::advance_past(&c, "links", 5000).await.unwrap();
    ids::advance_past(&c, "links", 2000).await.unwrap();
    assert_eq!(ids::lease(&c, "links", 100, 5).await.unwrap(), 5001..5006);
    // Names are separate counters.
    assert_eq!(ids::lease(&c, "other", 1, 2).await.unwrap(), 1..3);
    let err = ids::lease(&c, "links", 1, 0).await.unwrap_err().to_string();
    assert!(err.contains("at least one id"), "{err}");
    let err = ids::lease(&c, "links", u64::MAX, 1)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("bigint"), "{err}");
}
