//! What every store promises about clicks per A/B variant, checked through
//! [`Store`] alone on SQLite and on PostgreSQL (a private cluster): each
//! variant's clicks counted once per batch id, in the batch's range of
//! hours, before and after the fold, apart from clicks of no variant and
//! of other links; clicks of unknown links dropped.

use shortlink_core::country::UNKNOWN;
use shortlink_core::device::DeviceClass;
use shortlink_core::ipc::{BatchId, ClickBatch, ClickCount};
use shortlink_core::variants::Variant;

use super::{NewLink, Store};
use crate::store::Link;

fn link_of(id: u64, variants: usize) -> NewLink {
    NewLink {
        link: Link {
            id,
            url: format!("https://e.com/{id}"),
            variants: (0..variants)
                .map(|i| Variant {
                    url: format!("https://e.com/{id}/v{i}"),
                    weight: 1,
                })
                .collect(),
            ..Link::default()
        },
        dedupe_hash: [id as u8; 32],
        dedupe: false,
        alias_targets: Vec::new(),
    }
}

/// `count` clicks of link `link_id` in `hour`, to variant number `variant`
/// (0: none, `i + 1`: variant `i`).
fn click(link_id: u64, hour: u32, bot: bool, variant: u8, count: u32) -> ClickCount {
    ClickCount {
        link_id,
        hour,
        device: DeviceClass::Mobile,
        bot,
        referrer: None,
        count,
        country: UNKNOWN,
        variant,
    }
}

/// Clicks per variant index of link `id` over hours `from..=to`.
async fn variants(store: &Store, id: u64, from: i64, to: i64) -> Vec<(u8, i64)> {
    store
        .link_stats(id, from, to, false)
        .await
        .unwrap()
        .variants
}

/// Every variant check, in order, on a fresh, empty store.
pub async fn check_variant_clicks(store: &Store) {
    store
        .insert_links(vec![link_of(1, 3), link_of(2, 0)], 0)
        .await
        .unwrap();
    let batch = ClickBatch {
        batch_id: BatchId([5; 16]),
        clicks: vec![
            click(1, 10, false, 1, 5),
            click(1, 10, true, 2, 3),
            click(1, 11, false, 3, 2),
            click(1, 11, false, 1, 1),
            // Sent to no variant (a country or device target won).
            click(1, 10, false, 0, 4),
            click(2, 10, false, 0, 6),
            // A link no store knows: dropped, variant and all.
            click(99, 10, false, 2, 7),
        ],
    };
    let counted = store
        .append_clicks(vec![batch.clone(), batch.clone()], 40_000)
        .await
        .unwrap();
    assert_eq!(counted, [true, false], "a batch counts once by its id");
    let want = vec![(0, 6), (1, 3), (2, 2)];
    assert_eq!(variants(store, 1, 0, 20).await, want, "before the fold");
    assert_eq!(store.link_stats(1, 0, 20, false).await.unwrap().total, 15);
    store.fold_clicks().await.unwrap();
    assert_eq!(variants(store, 1, 0, 20).await, want, "after the fold");
    assert_eq!(
        store.append_clicks(vec![batch], 40_000).await.unwrap(),
        [false]
    );
    assert_eq!(
        variants(store, 1, 0, 20).await,
        want,
        "re-sent after the fold"
    );
    // The range cuts by hour.
    assert_eq!(variants(store, 1, 11, 20).await, [(0, 1), (2, 2)]);
    assert_eq!(variants(store, 1, 12, 20).await, []);
    assert_eq!(variants(store, 2, 0, 20).await, [], "no variant, no row");
    assert_eq!(variants(store, 99, 0, 20).await, []);
    // A second batch adds to the folded rows, and shows before its fold.
    let more = ClickBatch {
        batch_id: BatchId([6; 16]),
        clicks: vec![click(1, 10, false, 2, 4)],
    };
    store.append_clicks(vec![more], 40_000).await.unwrap();
    assert_eq!(variants(store, 1, 0, 20).await, [(0, 6), (1, 7), (2, 2)]);
    store.fold_clicks().await.unwrap();
    assert_eq!(variants(store, 1, 0, 20).await, [(0, 6), (1, 7), (2, 2)]);
}

#[tokio::test]
async fn sqlite_keeps_the_variant_contract() {
    let (_dir, sqlite) = crate::store::sqlite::tests::temp_store();
    let store = Store::from(sqlite);
    check_variant_clicks(&store).await;
    store.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_keeps_the_variant_contract() {
    let (_cluster, store) = super::contract::postgres_store("contract-variants").await;
    check_variant_clicks(&store).await;
    store.close();
}
