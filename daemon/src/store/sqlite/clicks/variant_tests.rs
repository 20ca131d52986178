//! Clicks per A/B variant on SQLite: links without variants write no
//! `variant_clicks` row, and a database from before variants (schema v14,
//! with an unfolded `click_log` row of format 2) keeps every click, under
//! no variant, next to new clicks that have one.

use rusqlite::Connection;
use shortlink_core::country::Country;
use shortlink_core::device::DeviceClass;
use shortlink_core::ipc::{BatchId, ClickBatch, ClickCount};
use shortlink_core::variants::Variant;

use super::*;
use crate::store::sqlite::tests::temp_store;
use crate::store::sqlite::{links, SqliteStore};
use crate::store::{Link, RangeStats};

fn row(link_id: u64, hour: u32, variant: u8, count: u32) -> ClickCount {
    ClickCount {
        link_id,
        hour,
        device: DeviceClass::Desktop,
        bot: false,
        referrer: None,
        count,
        country: Country::from_edge(b"DE"),
        variant,
    }
}

async fn stats(store: &SqliteStore, id: u64) -> RangeStats {
    store
        .read_counted(move |c, o| range_stats(c, o, id, 0, 200, false))
        .await
        .unwrap()
}

async fn variant_rows(store: &SqliteStore) -> Vec<(i64, i64, i64, i64)> {
    store
        .read(|c| {
            let mut st = c.prepare(
                "SELECT link_id, hour, variant, count FROM variant_clicks ORDER BY link_id, hour, variant",
            )?;
            let rows = st
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(rows)
        })
        .await
        .unwrap()
}

#[tokio::test]
async fn only_clicks_sent_to_a_variant_write_variant_rows() {
    let (_dir, store) = temp_store();
    store
        .write(|c| {
            let plain = Link {
                id: 1,
                url: "https://e.com/".into(),
                ..Link::default()
            };
            let ab = Link {
                id: 2,
                url: "https://e.com/ab".into(),
                variants: vec![
                    Variant {
                        url: "https://a.example/".into(),
                        weight: 1,
                    },
                    Variant {
                        url: "https://b.example/".into(),
                        weight: 1,
                    },
                ],
                ..Link::default()
            };
            links::insert(c, &plain, None)?;
            links::insert(c, &ab, None)?;
            Ok(())
        })
        .await
        .unwrap();
    let batch = ClickBatch {
        batch_id: BatchId([3; 16]),
        clicks: vec![
            row(1, 100, 0, 9),
            row(2, 100, 1, 3),
            row(2, 100, 2, 2),
            row(2, 101, 2, 1),
        ],
    };
    store.append_clicks(vec![batch], 1000).await.unwrap();
    store.fold_clicks().await.unwrap();
    assert_eq!(
        variant_rows(&store).await,
        [(2, 100, 0, 3), (2, 100, 1, 2), (2, 101, 1, 1)],
        "the link without variants has none"
    );
    assert_eq!(stats(&store, 1).await.variants, []);
    assert_eq!(stats(&store, 1).await.total, 9);
    assert_eq!(stats(&store, 2).await.variants, [(0, 3), (1, 3)]);
    // Deleting the link takes its variant rows with it.
    store
        .write(|c| Ok(c.execute("DELETE FROM links WHERE id = 2", [])?))
        .await
        .unwrap();
    assert_eq!(variant_rows(&store).await, []);
    store.close();
}

#[tokio::test]
async fn clicks_logged_before_variants_count_for_no_variant() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v14.db");
    let hour = 100u32;
    {
        let mut conn = Connection::open(&path).unwrap();
        // v4 seals app secrets with the store's SQL function (no apps here).
        crate::store::sqlite::keys::register_secret_functions(&conn, None).unwrap();
        crate::store::sqlite::migrations_to(14)
            .to_latest(&mut conn)
            .unwrap();
        conn.execute(
            "INSERT INTO links (id, url, created_at, updated_at, variants) \
             VALUES (5, 'https://e.com/old', 1, 1, '[{\"url\":\"https://a.example/\",\"weight\":1}]')",
            [],
        )
        .unwrap();
        // An acknowledged batch not folded yet, in format 2: the current
        // frame without the row's variant (its last byte).
        let old = super::country_tests::older_frame(
            &ClickBatch {
                batch_id: BatchId([8; 16]),
                clicks: vec![row(5, hour, 1, 3)],
            },
            1,
        );
        conn.execute(
            "INSERT INTO click_log (received_at, batch, format) VALUES (1000, ?1, 2)",
            [old],
        )
        .unwrap();
    }
    let store = SqliteStore::open(&path, 1, 16).unwrap();
    let s = stats(&store, 5).await;
    assert_eq!((s.total, s.variants.clone()), (3, vec![]));
    assert_eq!(s.countries, [(Country::from_edge(b"DE"), 3)]);
    // New clicks carry their variant, next to the old ones.
    let batch = ClickBatch {
        batch_id: BatchId([9; 16]),
        clicks: vec![row(5, hour, 1, 2)],
    };
    store.append_clicks(vec![batch], 1000).await.unwrap();
    store.fold_clicks().await.unwrap();
    let s = stats(&store, 5).await;
    assert_eq!((s.total, s.variants), (5, vec![(0, 2)]));
    store.close();
    // After a restart the folded rows read the same.
    let store = SqliteStore::open(&path, 1, 16).unwrap();
    let s = stats(&store, 5).await;
    assert_eq!((s.total, s.variants), (5, vec![(0, 2)]));
    store.close();
}
