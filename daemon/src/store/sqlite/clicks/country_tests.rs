//! Clicks per country on SQLite: counted and reported per country before
//! and after the fold, and a database from before countries (schema v4,
//! with folded clicks and an unfolded `click_log` row of the old frame
//! format) keeps every click, under the unknown country.

use rusqlite::Connection;
use shortlink_core::country::{Country, UNKNOWN};
use shortlink_core::device::DeviceClass;
use shortlink_core::ipc::{self, BatchId, ClickBatch, ClickCount};

use super::*;
use crate::store::sqlite::tests::temp_store;
use crate::store::sqlite::{links, SqliteStore};
use crate::store::{Link, RangeStats, SiteStats};

fn row(link_id: u64, hour: u32, country: &str, count: u32) -> ClickCount {
    ClickCount {
        link_id,
        hour,
        device: DeviceClass::Desktop,
        bot: false,
        referrer: None,
        count,
        country: Country::from_edge(country.as_bytes()),
        variant: 0,
    }
}

async fn stats(store: &SqliteStore, id: u64) -> (RangeStats, SiteStats) {
    store
        .read_counted(move |c, o| {
            Ok((
                range_stats(c, o, id, 0, 200, false)?,
                site_stats(c, o, (0, 200), false, 10, &Default::default())?,
            ))
        })
        .await
        .unwrap()
}

fn de() -> Country {
    Country::parse("DE").unwrap()
}

fn fr() -> Country {
    Country::parse("FR").unwrap()
}

#[tokio::test]
async fn clicks_are_reported_per_country_before_and_after_the_fold() {
    let (_dir, store) = temp_store();
    store
        .write(|c| {
            for id in [1, 2] {
                links::insert(
                    c,
                    &Link {
                        id,
                        url: "https://e.com/".into(),
                        ..Link::default()
                    },
                    None,
                )?;
            }
            Ok(())
        })
        .await
        .unwrap();
    let batch = ClickBatch {
        batch_id: BatchId([3; 16]),
        clicks: vec![
            row(1, 100, "DE", 3),
            row(1, 100, "fr", 2),
            row(1, 101, "DE", 1),
            row(1, 100, "XX", 1),
            row(2, 100, "FR", 4),
        ],
    };
    store.append_clicks(vec![batch], 1000).await.unwrap();
    let want_link = vec![(de(), 4), (fr(), 2), (UNKNOWN, 1)];
    let want_site = vec![(fr(), 6), (de(), 4), (UNKNOWN, 1)];
    let (link, site) = stats(&store, 1).await;
    assert_eq!(link.countries, want_link, "pending");
    assert_eq!(site.countries, want_site, "pending");
    store.fold_clicks().await.unwrap();
    let (link, site) = stats(&store, 1).await;
    assert_eq!(link.countries, want_link, "folded");
    assert_eq!(site.countries, want_site, "folded");
    assert_eq!(link.total, 7);
}

#[tokio::test]
async fn clicks_from_before_countries_migrate_as_unknown() {
    use rusqlite_migration::{Migrations, M};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v4.db");
    let hour = 100u32;
    {
        let mut conn = Connection::open(&path).unwrap();
        Migrations::new(vec![
            M::up(include_str!("../schema_v1.sql")),
            M::up(include_str!("../schema_v2.sql")),
            M::up(include_str!("../schema_v3.sql")),
            M::up(include_str!("../schema_v4.sql")),
        ])
        .to_latest(&mut conn)
        .unwrap();
        conn.execute(
            "INSERT INTO links (id, url, created_at, updated_at, clicks) VALUES (5, 'https://e.com/old', 1, 1, 2)",
            [],
        )
        .unwrap();
        conn.execute(
            "INSERT INTO clicks (link_id, hour, device, bot, referrer, count) VALUES (5, ?1, 1, 0, '', 2)",
            [hour],
        )
        .unwrap();
        // An acknowledged batch not folded yet, in the old frame format:
        // the current frame without the row's country and variant (its
        // last three bytes).
        let old = older_frame(
            &ClickBatch {
                batch_id: BatchId([8; 16]),
                clicks: vec![row(5, hour, "DE", 3)],
            },
            3,
        );
        conn.execute(
            "INSERT INTO click_log (received_at, batch) VALUES (1000, ?1)",
            [old],
        )
        .unwrap();
    }
    let store = SqliteStore::open(&path, 1, 16).unwrap();
    let (link, _) = stats(&store, 5).await;
    assert_eq!(link.countries, vec![(UNKNOWN, 5)]);
    // New clicks carry their country, next to the migrated ones.
    let batch = ClickBatch {
        batch_id: BatchId([9; 16]),
        clicks: vec![row(5, hour, "DE", 1)],
    };
    store.append_clicks(vec![batch], 1000).await.unwrap();
    store.fold_clicks().await.unwrap();
    let (link, _) = stats(&store, 5).await;
    assert_eq!(link.countries, vec![(UNKNOWN, 5), (de(), 1)]);
    assert_eq!(link.total, 6);
    store.close();
    // After a restart the folded rows read the same.
    let store = SqliteStore::open(&path, 1, 16).unwrap();
    let (link, _) = stats(&store, 5).await;
    assert_eq!(link.countries, vec![(UNKNOWN, 5), (de(), 1)]);
    store.close();
}

/// The frame of `batch` as an older writer made it: the current frame
/// without the last `cut` bytes of its (one) row, the length fixed.
pub(super) fn older_frame(batch: &ClickBatch, cut: usize) -> Vec<u8> {
    let new = ipc::frame(batch).unwrap();
    let mut old = new[..new.len() - cut].to_vec();
    let len = (old.len() - ipc::HEADER_LEN) as u32;
    old[..ipc::HEADER_LEN].copy_from_slice(&len.to_be_bytes());
    old
}
