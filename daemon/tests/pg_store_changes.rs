//! `PgStore`'s change log through the store interface, as the SQLite
//! contract checks it (`store/contract.rs`), plus what only a shared database
//! has: positions that survive a daemon restart, and a daemon's own write
//! waiting briefly for an older transaction so it reaches its own nginx.

mod pg_common;
mod pg_store_common;

use std::time::{Duration, Instant};

use pg_common::config_for;
use pg_store_common::{edit, new_link, open};
use shortlink_core::device::DeviceClass;
use shortlink_core::ipc::{BatchId, ChangePosition, ClickBatch, ClickCount};
use shortlinkd::store::{Store, StoreError};
use testpg::PgCluster;

fn logged(rows: &[shortlinkd::store::Change]) -> Vec<(u64, Option<String>)> {
    rows.iter()
        .map(|c| (c.link_id, c.new_alias.clone()))
        .collect()
}

/// The contract's change-log check: every alias change in order, a delete
/// logged too, a resume from a position with the alias snapshot; and a
/// position of another database, ahead of the log, or none, resets.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_log_carries_every_alias_change_in_order_and_resumes() {
    let cluster = PgCluster::start("log");
    let store = Store::from(open(&config_for(&cluster, "log")).await);
    let start = store.changes_at_open();
    assert_eq!(start.seq, 0);
    store
        .insert_links(
            vec![
                new_link(1, Some("taken"), "https://e.com/1", &[]),
                new_link(5, None, "https://e.com/5", &[]),
            ],
            0,
        )
        .await
        .unwrap();
    store.update_link(5, edit(Some("new"), &[])).await.unwrap();
    let (head, rows) = store.changes_since(start.seq).await.unwrap();
    let rows = rows.unwrap();
    assert_eq!(
        logged(&rows),
        [(1, Some("taken".into())), (5, Some("new".into()))]
    );
    assert_eq!(
        rows.iter().map(|c| c.seq).collect::<Vec<_>>(),
        [1, 2],
        "positions are versions"
    );
    assert_eq!((head.store, head.seq), (start.store, 2));
    let deleted = store.delete_link(5).await.unwrap().unwrap();
    assert_eq!(deleted.alias.as_deref(), Some("new"));
    assert!(store.delete_link(5).await.unwrap().is_none());
    let resume = store.resume(Some(head)).await.unwrap();
    assert_eq!(resume.aliases, ["taken"]);
    let after = resume.changes.unwrap();
    assert_eq!(after.len(), 1);
    assert_eq!(
        (after[0].link_id, after[0].old_alias.as_deref()),
        (5, Some("new"))
    );
    assert_eq!(resume.head.seq, head.seq + 1);
    // Nothing new: an empty read at the head.
    let (same, rows) = store.changes_since(resume.head.seq).await.unwrap();
    assert_eq!((same, rows), (resume.head, Some(vec![])));
    let other = |store, seq| Some(ChangePosition { store, seq });
    for p in [other(head.store ^ 1, 1), other(head.store, 99), None] {
        let r = store.resume(p).await.unwrap();
        assert_eq!(r.changes, None, "{p:?}");
        assert_eq!(r.head, resume.head);
    }
    store.close();
}

/// A worker's position means the same after the daemon restarts: the
/// reopened store starts its feed at the same version and replays the
/// changes after an old position instead of dropping the worker's zone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_position_survives_a_daemon_restart() {
    let cluster = PgCluster::start("restart");
    let config = config_for(&cluster, "restart");
    let first = Store::from(open(&config).await);
    first
        .insert_links(vec![new_link(1, Some("a"), "https://e.com/1", &[])], 0)
        .await
        .unwrap();
    let (seen, _) = first.changes_since(0).await.unwrap();
    first.update_link(1, edit(Some("b"), &[])).await.unwrap();
    let (head, _) = first.changes_since(0).await.unwrap();
    first.close();
    assert!(matches!(
        first.changes_since(0).await,
        Err(StoreError::Closed)
    ));

    let second = Store::from(open(&config).await);
    assert_eq!(second.changes_at_open(), head);
    let resume = second.resume(Some(seen)).await.unwrap();
    let rows = resume
        .changes
        .expect("the old position is still in the log");
    assert_eq!(
        logged(&rows),
        [(1, Some("b".into()))],
        "only what came after it"
    );
    assert_eq!(resume.head, head);
    second.close();
}

/// A write committed while an older transaction runs is not final: the
/// writer's read waits for it (here 300 ms) rather than answer without
/// it, gives up after `SETTLE` when the other transaction stays, and does
/// not wait on that transaction again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_after_a_write_waits_briefly_for_an_older_transaction() {
    let cluster = PgCluster::start("settle");
    let pg_store = open(&config_for(&cluster, "settle")).await;
    let pg = pg_store.pg().clone();
    let store = Store::from(pg_store);

    let hold = |ms: u64| {
        let pg = pg.clone();
        let (ready_tx, ready) = tokio::sync::oneshot::channel();
        let task = tokio::spawn(async move {
            let mut c = pg.get().await.unwrap();
            let tx = c.transaction().await.unwrap();
            tx.query_one("SELECT pg_current_xact_id()::text", &[])
                .await
                .unwrap();
            ready_tx.send(()).unwrap();
            tokio::time::sleep(Duration::from_millis(ms)).await;
            tx.commit().await.unwrap();
        });
        (ready, task)
    };

    let (ready, blocker) = hold(300);
    ready.await.unwrap();
    // From here the other transaction stays open 300 ms: the read cannot
    // answer before (the insert may take much of it on a loaded machine,
    // so the wait is measured from here, not from the read).
    let held = Instant::now();
    store
        .insert_links(vec![new_link(1, Some("a"), "https://e.com/1", &[])], 0)
        .await
        .unwrap();
    let (head, rows) = store.changes_since(0).await.unwrap();
    let waited = held.elapsed();
    assert_eq!(logged(&rows.unwrap()), [(1, Some("a".into()))]);
    assert_eq!(head.seq, 1);
    assert!(waited >= Duration::from_millis(300), "{waited:?}");
    blocker.await.unwrap();

    // The other transaction outlasts the wait: the read answers without
    // the change after about SETTLE, and has it once the other ends.
    let (ready, blocker) = hold(2500);
    ready.await.unwrap();
    store
        .insert_links(vec![new_link(2, Some("b"), "https://e.com/2", &[])], 0)
        .await
        .unwrap();
    let started = Instant::now();
    let (head, rows) = store.changes_since(1).await.unwrap();
    let waited = started.elapsed();
    assert_eq!((head.seq, rows), (1, Some(vec![])));
    assert!(
        waited >= Duration::from_millis(900) && waited < Duration::from_millis(2000),
        "{waited:?}"
    );
    // The same transaction is not waited on twice: the next write's read
    // answers at once (every push of the node would queue behind it).
    store
        .insert_links(vec![new_link(3, Some("c"), "https://e.com/3", &[])], 0)
        .await
        .unwrap();
    let started = Instant::now();
    let (head, _) = store.changes_since(1).await.unwrap();
    assert_eq!(head.seq, 1);
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "{:?}",
        started.elapsed()
    );
    blocker.await.unwrap();
    let (head, rows) = store.changes_since(1).await.unwrap();
    assert_eq!(
        logged(&rows.unwrap()),
        [(2, Some("b".into())), (3, Some("c".into()))]
    );
    assert_eq!(head.seq, 3);
    store.close();
}

/// `prune` forgets click batch ids and signatures older than asked, in one
/// write; a batch id forgotten counts again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prune_forgets_old_batch_ids_and_signatures() {
    let cluster = PgCluster::start("prune");
    let store = Store::from(open(&config_for(&cluster, "prune")).await);
    store
        .insert_links(vec![new_link(1, None, "https://e.com/1", &[])], 0)
        .await
        .unwrap();
    let batch = |id: u8| ClickBatch {
        batch_id: BatchId([id; 16]),
        clicks: vec![ClickCount {
            link_id: 1,
            hour: 10,
            device: DeviceClass::Desktop,
            bot: false,
            referrer: None,
            count: 1,
            country: shortlink_core::country::UNKNOWN,
            variant: 0,
        }],
    };
    store.append_clicks(vec![batch(1)], 100).await.unwrap();
    store.append_clicks(vec![batch(2)], 200).await.unwrap();
    assert!(store.record_signature("old".into(), 100).await.unwrap());
    assert!(store.record_signature("new".into(), 200).await.unwrap());
    assert_eq!(store.prune(150, 150).await.unwrap(), (1, 1));
    assert_eq!(
        store
            .append_clicks(vec![batch(1), batch(2)], 300)
            .await
            .unwrap(),
        [true, false]
    );
    let sigs = store.recent_signatures(0).await.unwrap();
    assert_eq!(sigs, [("new".to_string(), 200)]);
    store.close();
}
