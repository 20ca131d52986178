//! Id leases on a real PostgreSQL: concurrent leases from many connections
//! never overlap, leave no gap and never fail on a conflict.

mod pg_common;

use pg_common::migrated;
use shortlinkd::store::postgres::ids;
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
                    got.push(
                        ids::lease(&client, "links", FLOOR, SIZE, 1, &[])
                            .await
                            .unwrap(),
                    );
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
    assert_eq!(
        ids::lease(&c, "links", 100, 10, 1, &[]).await.unwrap(),
        100..110
    );
    assert_eq!(
        ids::lease(&c, "links", 100, 10, 1, &[]).await.unwrap(),
        110..120
    );
    assert_eq!(
        ids::lease(&c, "links", 1000, 5, 1, &[]).await.unwrap(),
        1000..1005
    );
    assert_eq!(
        ids::lease(&c, "links", 100, 5, 1, &[]).await.unwrap(),
        1005..1010
    );
    ids::advance_past(&c, "links", 5000).await.unwrap();
    ids::advance_past(&c, "links", 2000).await.unwrap();
    assert_eq!(
        ids::lease(&c, "links", 100, 5, 1, &[]).await.unwrap(),
        5001..5006
    );
    // Names are separate counters.
    assert_eq!(ids::lease(&c, "other", 1, 2, 1, &[]).await.unwrap(), 1..3);
    let err = ids::lease(&c, "links", 1, 0, 1, &[])
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("at least one id"), "{err}");
    let err = ids::lease(&c, "links", u64::MAX, 1, 1, &[])
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("bigint"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_leases_are_recorded_until_used_up_or_trimmed() {
    let cluster = PgCluster::start("records");
    let pg = migrated(&cluster, "records").await;
    let c = pg.get().await.unwrap();
    let (a, b) = (7, 8);
    assert_eq!(
        ids::lease(&c, "links", 100, 10, a, &[]).await.unwrap(),
        100..110
    );
    assert_eq!(
        ids::lease(&c, "links", 100, 10, b, &[]).await.unwrap(),
        110..120
    );
    assert_eq!(
        ids::lease(&c, "links", 100, 10, a, &[]).await.unwrap(),
        120..130
    );
    // Seen by an importer that holds none of them (holder 0).
    let live = |name| ids::live_leases(&c, name, 0);
    let mut held = live("links").await.unwrap();
    held.sort_by_key(|r| r.start);
    assert_eq!(held, [100..110, 110..120, 120..130]);
    // Another name's counter holds none of these.
    assert!(live("other").await.unwrap().is_empty());
    // A reports its first lease used up with its next one.
    assert_eq!(
        ids::lease(&c, "links", 100, 10, a, &[110]).await.unwrap(),
        130..140
    );
    // A's used-up lease is forgotten; B's is B's to report.
    let mut held = live("links").await.unwrap();
    held.sort_by_key(|r| r.start);
    assert_eq!(held, [110..120, 120..130, 130..140]);
    // A's own import took ids through 134 out of A's memory.
    ids::trim_leases(&c, "links", a, 134).await.unwrap();
    let rows = cluster.psql(
        "records",
        "SELECT string_agg(holder || ':' || start || '-' || stop, ',' ORDER BY start) FROM id_leases",
    );
    assert_eq!(rows, "8:110-120,7:135-140");
}
