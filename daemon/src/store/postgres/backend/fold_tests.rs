//! The fold of `click_log` on PostgreSQL writes a link's totals once per
//! transaction, however many log rows name it, and commits in more than
//! one transaction only past its bound, counting every click once.

use shortlink_core::country::UNKNOWN;
use shortlink_core::device::DeviceClass;
use shortlink_core::ipc::{BatchId, ClickBatch, ClickCount};

use crate::store::ClickStore;

fn click(link_id: u64) -> ClickCount {
    ClickCount {
        link_id,
        hour: 10,
        device: DeviceClass::Desktop,
        bot: false,
        referrer: None,
        count: 1,
        country: UNKNOWN,
        variant: 0,
    }
}

/// `n` batches from number `first` on, each one click of links 1 and 2.
fn batches(first: u32, n: u32) -> Vec<ClickBatch> {
    (first..first + n)
        .map(|i| {
            let mut id = [0; 16];
            id[..4].copy_from_slice(&i.to_le_bytes());
            ClickBatch {
                batch_id: BatchId(id),
                clicks: vec![click(1), click(2)],
            }
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fold_writes_each_link_once_per_transaction() {
    let (_cluster, store) = crate::store::postgres::backend::tests::pg_store("foldonce").await;
    let client = store.pg().get().await.unwrap();
    // Every write of a link's totals leaves a row in `link_writes`.
    client
        .batch_execute(
            "INSERT INTO links (id, url, created_at, updated_at) VALUES \
             (1, 'https://example.com/1', 0, 0), (2, 'https://example.com/2', 0, 0); \
             CREATE TABLE link_writes (link_id bigint NOT NULL); \
             CREATE FUNCTION count_write() RETURNS trigger LANGUAGE plpgsql AS \
             $$ BEGIN INSERT INTO link_writes VALUES (NEW.id); RETURN NEW; END $$; \
             CREATE TRIGGER count_write BEFORE UPDATE OF clicks ON links \
             FOR EACH ROW EXECUTE FUNCTION count_write();",
        )
        .await
        .unwrap();
    let state = || async {
        let row = client
            .query_one(
                "SELECT (SELECT count(*) FROM link_writes), \
                 (SELECT string_agg(clicks::text, '/' ORDER BY id) FROM links), \
                 coalesce((SELECT sum(count) FROM clicks), 0)::bigint, (SELECT count(*) FROM click_log)",
                &[],
            )
            .await
            .unwrap();
        (
            row.get::<_, i64>(0),
            row.get::<_, String>(1),
            row.get::<_, i64>(2),
            row.get::<_, i64>(3),
        )
    };
    // 250 log rows: three reads of the log, one transaction.
    let acked = store.append_clicks(batches(0, 250), 36_000).await.unwrap();
    assert!(acked.iter().all(|a| *a));
    assert_eq!(state().await.3, 250, "every batch logged");
    assert_eq!(store.fold_log().await.unwrap(), 250);
    assert_eq!(
        state().await,
        (2, "250/250".into(), 500, 0),
        "each link written once, every click counted once, the log empty"
    );
    // Bounded at one distinct row per transaction: a transaction per read
    // of 100 log rows (each read's sum holds the two links' rows).
    store
        .append_clicks(batches(250, 250), 36_000)
        .await
        .unwrap();
    assert_eq!(store.fold_log_by(1).await.unwrap(), 250);
    assert_eq!(state().await, (2 + 3 * 2, "500/500".into(), 1000, 0));
}
