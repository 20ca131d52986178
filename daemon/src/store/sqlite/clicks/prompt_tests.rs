//! The prompt fold: links with a visit limit or renew-on-access folded
//! ahead of the rest, each click still counted once, across a crash too.

use super::tests::{add_link, click, counted};
use super::*;
use crate::store::sqlite::links;
use crate::store::sqlite::SqliteStore;
use crate::store::FoldOutcome;
use shortlink_core::ipc::{BatchId, ClickBatch};

fn batch(n: u8, clicks: &[(u64, u32)]) -> ClickBatch {
    ClickBatch {
        batch_id: BatchId([n; 16]),
        clicks: clicks
            .iter()
            .map(|&(id, count)| click(id, 100, false, None, count))
            .collect(),
    }
}

/// The link's totals in the table, without the pending clicks.
async fn in_table(store: &SqliteStore, id: u64) -> i64 {
    store
        .read(move |c| links::by_id(c, id))
        .await
        .unwrap()
        .unwrap()
        .clicks
}

async fn fold_links_ahead(store: &SqliteStore) -> i64 {
    store
        .read(|c| Ok(c.query_row("SELECT count(*) FROM click_fold_links", [], |r| r.get(0))?))
        .await
        .unwrap()
}

#[tokio::test]
async fn prompt_fold_takes_only_limited_and_renewed_links() {
    let (_dir, store) = crate::store::sqlite::tests::temp_store();
    add_link(&store, 5, Some(3)).await;
    add_link(&store, 6, None).await;
    add_link(&store, 7, None).await;
    store
        .write(|c| Ok(c.execute("UPDATE links SET renew_ttl = 60 WHERE id = 7", [])?))
        .await
        .unwrap();
    store
        .append_clicks(vec![batch(1, &[(5, 4), (6, 2), (7, 1)])], 1000)
        .await
        .unwrap();
    let prompt = store.fold_prompt_clicks().await.unwrap();
    // Link 5 reached its limit; link 7 has no expiry to renew.
    assert_eq!((prompt.batches, prompt.counted), (0, 5));
    assert_eq!(prompt.changed, vec![(5, None)]);
    assert_eq!(
        (
            in_table(&store, 5).await,
            in_table(&store, 6).await,
            in_table(&store, 7).await
        ),
        (4, 0, 1)
    );
    for (id, n) in [(5, 4), (6, 2), (7, 1)] {
        let (clicks, _, stats) = counted(&store, id).await;
        assert_eq!((clicks, stats.total), (n, n), "link {id}");
    }
    assert_eq!(store.write(log_len).await.unwrap(), 1);
    assert_eq!(fold_links_ahead(&store).await, 2);
    // Nothing new for the prompt links: nothing to do.
    assert_eq!(
        store.fold_prompt_clicks().await.unwrap(),
        FoldOutcome::default()
    );
    let all = store.fold_clicks().await.unwrap();
    assert_eq!((all.batches, all.counted), (1, 2));
    assert!(all.changed.is_empty());
    for (id, n) in [(5, 4), (6, 2), (7, 1)] {
        assert_eq!(in_table(&store, id).await, n, "link {id}");
        assert_eq!(counted(&store, id).await.0, n, "link {id}");
    }
    assert_eq!(store.write(log_len).await.unwrap(), 0);
    assert_eq!(fold_links_ahead(&store).await, 0);
}

#[tokio::test]
async fn a_limit_set_while_clicks_wait_folds_them_promptly() {
    let (_dir, store) = crate::store::sqlite::tests::temp_store();
    add_link(&store, 8, None).await;
    store
        .append_clicks(vec![batch(1, &[(8, 2)])], 1000)
        .await
        .unwrap();
    assert_eq!(store.fold_prompt_clicks().await.unwrap().counted, 0);
    assert_eq!(in_table(&store, 8).await, 0);
    store
        .write(|c| Ok(c.execute("UPDATE links SET max_visits = 3 WHERE id = 8", [])?))
        .await
        .unwrap();
    store
        .append_clicks(vec![batch(2, &[(8, 1)])], 1000)
        .await
        .unwrap();
    let prompt = store.fold_prompt_clicks().await.unwrap();
    assert_eq!((prompt.counted, prompt.changed), (3, vec![(8, None)]));
    assert_eq!(in_table(&store, 8).await, 3);
    store.fold_clicks().await.unwrap();
    assert_eq!(counted(&store, 8).await.0, 3);
}

#[tokio::test]
async fn recovery_skips_what_the_prompt_fold_took_ahead() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.db");
    {
        let store = SqliteStore::open(&path, 1, 10).unwrap();
        add_link(&store, 5, Some(100)).await;
        add_link(&store, 6, None).await;
        store
            .append_clicks(vec![batch(1, &[(5, 4), (6, 2)])], 1000)
            .await
            .unwrap();
        assert_eq!(store.fold_prompt_clicks().await.unwrap().counted, 4);
        store
            .append_clicks(vec![batch(2, &[(5, 3), (6, 1)])], 1000)
            .await
            .unwrap();
        // Closed without another fold: like a crash after the acks.
        store.close();
    }
    let store = SqliteStore::open(&path, 1, 10).unwrap();
    assert_eq!(store.write(log_len).await.unwrap(), 2);
    assert_eq!(counted(&store, 5).await.0, 7);
    assert_eq!(counted(&store, 6).await.0, 3);
    // Both batches are still known: re-sent, they count nothing.
    assert_eq!(
        store
            .append_clicks(vec![batch(1, &[(5, 4), (6, 2)])], 1000)
            .await
            .unwrap(),
        vec![false]
    );
    let all = store.fold_clicks().await.unwrap();
    assert_eq!((all.batches, all.counted), (2, 6));
    store.close();
    let store = SqliteStore::open(&path, 1, 10).unwrap();
    assert_eq!(
        (in_table(&store, 5).await, in_table(&store, 6).await),
        (7, 3)
    );
    assert_eq!(
        (counted(&store, 5).await.0, counted(&store, 6).await.0),
        (7, 3)
    );
    assert_eq!(store.write(log_len).await.unwrap(), 0);
}

#[tokio::test]
async fn reads_during_prompt_folds_count_each_click_once() {
    let (_dir, store) = crate::store::sqlite::tests::temp_store();
    add_link(&store, 7, Some(1_000_000)).await;
    let mut expected = 0;
    for round in 0..30u8 {
        let append = store.append_clicks(vec![batch(round, &[(7, 3)])], 1000);
        let fold = async {
            if round % 5 == 4 {
                store.fold_clicks().await
            } else {
                store.fold_prompt_clicks().await
            }
        };
        let read = counted(&store, 7);
        let (a, f, r) = tokio::join!(append, fold, read);
        a.unwrap();
        f.unwrap();
        assert!(
            r.0 == expected || r.0 == expected + 3,
            "{} vs {expected}",
            r.0
        );
        assert_eq!(r.0, r.2.total);
        expected += 3;
        let (clicks, _, stats) = counted(&store, 7).await;
        assert_eq!((clicks, stats.total), (expected, expected));
    }
    store.fold_clicks().await.unwrap();
    assert_eq!(in_table(&store, 7).await, expected);
}
