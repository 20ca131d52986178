//! Click storage: the append-only `click_log`, the `clicks` and
//! `click_batches` tables, the per-link totals, and the in-memory aggregate
//! of acknowledged clicks not folded into the tables yet.
//!
//! A click batch is made durable by appending it whole to `click_log` (one
//! row, a few pages, whatever the number of links in it) in the same
//! transaction that records its batch id in `click_batches`; it is
//! acknowledged after that commit, then added to [`PendingClicks`] in memory
//! (on the writer thread, before the next transaction starts). A periodic
//! fold ([`fold_job`]) writes the aggregate to `clicks` and `links` and
//! deletes the log rows it covers in one transaction, recording the highest
//! seq it covers in `click_fold`. After a crash, [`recover`] folds the log
//! rows left into memory again; they are persisted by the next fold, so a
//! click is in the tables exactly once.
//!
//! Readers see acknowledged clicks at once through a [`ClickOverlay`]: the
//! tables plus the in-memory aggregate, cut consistently by `folded_through`
//! (see [`with_overlay`]).

mod fold;
mod late;
mod log;
pub mod logdb;
mod pending;
mod range;
mod site;

pub use fold::{fold_job, fold_prompt_job, ADD_ROW, ADD_TOTALS, DELETE_FOLDED_LOG};
pub use log::{append_batches, log_len, prune_batches, recover};
pub use pending::{with_overlay, ClickOverlay, PendingClicks};
pub use range::range_stats;
pub use site::site_stats;

#[cfg(test)]
mod country_tests;
#[cfg(test)]
mod prompt_tests;
#[cfg(test)]
mod variant_tests;

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::store::sqlite::tests::temp_store;
    use crate::store::sqlite::{links, SqliteStore};
    use crate::store::{FoldOutcome, Link, RangeStats};
    use shortlink_core::device::DeviceClass;
    use shortlink_core::ipc::{BatchId, ClickBatch, ClickCount};

    pub(crate) fn click(
        link_id: u64,
        hour: u32,
        bot: bool,
        referrer: Option<&str>,
        count: u32,
    ) -> ClickCount {
        ClickCount {
            link_id,
            hour,
            device: DeviceClass::Desktop,
            bot,
            referrer: referrer.map(str::to_string),
            count,
            country: shortlink_core::country::UNKNOWN,
            variant: 0,
        }
    }

    pub(crate) async fn add_link(store: &SqliteStore, id: u64, max_visits: Option<i64>) {
        store
            .write(move |c| {
                links::insert(
                    c,
                    &Link {
                        id,
                        url: "https://e.com/".into(),
                        max_visits,
                        ..Link::default()
                    },
                    None,
                )
            })
            .await
            .unwrap();
    }

    pub(crate) async fn counted(store: &SqliteStore, id: u64) -> (i64, i64, RangeStats) {
        store
            .read_counted(move |c, o| {
                let mut l = links::by_id(c, id)?.unwrap();
                o.apply(&mut l);
                Ok((
                    l.clicks,
                    l.bot_clicks,
                    range_stats(c, o, id, 0, 200, false)?,
                ))
            })
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn batches_count_once_and_report_exhaustion() {
        let (_dir, store) = temp_store();
        add_link(&store, 5, Some(3)).await;
        let batch = ClickBatch {
            batch_id: BatchId([1; 16]),
            clicks: vec![
                click(5, 100, false, Some("News.Example.com"), 2),
                click(5, 101, true, None, 4),
                click(99, 100, false, None, 7),
            ],
        };
        assert_eq!(
            store
                .append_clicks(vec![batch.clone()], 1000)
                .await
                .unwrap(),
            vec![true]
        );
        // Seen at once, before any fold.
        let (clicks, bots, stats) = counted(&store, 5).await;
        assert_eq!((clicks, bots, stats.total), (6, 4, 6));
        // A re-sent batch is a duplicate, before and after the fold.
        assert_eq!(
            store
                .append_clicks(vec![batch.clone()], 1000)
                .await
                .unwrap(),
            vec![false]
        );
        let first = store.fold_clicks().await.unwrap();
        assert_eq!((first.batches, first.counted), (1, 6));
        assert!(first.changed.is_empty());
        assert_eq!(
            store
                .append_clicks(vec![batch.clone()], 1000)
                .await
                .unwrap(),
            vec![false]
        );
        let more = ClickBatch {
            batch_id: BatchId([2; 16]),
            clicks: vec![click(5, 101, false, None, 1)],
        };
        store.append_clicks(vec![more], 1000).await.unwrap();
        let (clicks, bots, _) = counted(&store, 5).await;
        assert_eq!((clicks, bots), (7, 4));
        let third = store.fold_clicks().await.unwrap();
        assert_eq!(third.changed, vec![(5, None)]);
        assert_eq!(store.fold_clicks().await.unwrap(), FoldOutcome::default());
        let link = store.read(|c| links::by_id(c, 5)).await.unwrap().unwrap();
        assert_eq!((link.clicks, link.bot_clicks), (7, 4));
        let (clicks, bots, stats) = counted(&store, 5).await;
        assert_eq!((clicks, bots), (7, 4));
        assert_eq!(stats.total, 7);
        assert_eq!(stats.bots, 4);
        assert_eq!(stats.series, vec![(100 * 3600, 2), (101 * 3600, 5)]);
        // Without a referrer: `""`, ranked with the hosts.
        assert_eq!(
            stats.referrers,
            vec![("".to_string(), 5), ("news.example.com".to_string(), 2)]
        );
        let daily = store
            .read_counted(|c, o| range_stats(c, o, 5, 0, 200, true))
            .await
            .unwrap();
        assert_eq!(daily.series, vec![(4 * 86400, 7)]);
        assert_eq!(store.write(log_len).await.unwrap(), 0);
    }

    #[tokio::test]
    async fn clicks_from_before_a_link_was_created_are_never_its() {
        let (_dir, store) = temp_store();
        let now = crate::timestamp::unix_now();
        let hour = (now / 3600) as u32;
        store
            .write(move |c| {
                let link = |id| Link {
                    id,
                    url: "https://new.example/".into(),
                    created_at: now,
                    max_visits: Some(5),
                    ..Link::default()
                };
                links::insert(c, &link(7), None)?;
                links::insert(c, &link(8), None)
            })
            .await
            .unwrap();
        let old = hour - 20 * 24; // an old link's, 20 days ago, same ids
        let mut variant = click(7, old, false, None, 4);
        variant.variant = 1;
        let batch = |n: u8| ClickBatch {
            batch_id: BatchId([n; 16]),
            clicks: vec![
                click(7, hour, false, None, 2),
                click(7, old, true, Some("old.example"), 5),
                variant.clone(),
                click(8, old, false, None, 9),
            ],
        };
        // Through the append: the late rows never reach the pending clicks.
        store.append_clicks(vec![batch(1)], now).await.unwrap();
        assert_eq!(counted(&store, 7).await.0, 2);
        assert_eq!(counted(&store, 8).await.0, 0);
        // Pending without the append's check (put back by recovery, or
        // appended while the old link still existed): the fold drops them,
        // and a link left with no click is not touched (not exhausted).
        store.pending_clicks().add_committed(&[(1, &batch(2))], now);
        let outcome = store.fold_clicks().await.unwrap();
        assert_eq!(outcome.counted, 4);
        assert!(outcome.changed.is_empty(), "{outcome:?}");
        let (clicks, bots, _) = counted(&store, 7).await;
        assert_eq!((clicks, bots), (4, 0));
        let (from, to) = (i64::from(old) - 1, i64::from(hour) + 1);
        let stats = store
            .read_counted(move |c, o| range_stats(c, o, 7, from, to, false))
            .await
            .unwrap();
        assert_eq!(stats.series, vec![(i64::from(hour) * 3600, 4)]);
        assert_eq!(stats.referrers, vec![("".to_string(), 4)], "{stats:?}");
        let variants = store
            .read(|c| {
                Ok(c.query_row("SELECT count(*) FROM variant_clicks", [], |r| {
                    r.get::<_, i64>(0)
                })?)
            })
            .await
            .unwrap();
        assert_eq!(variants, 0);
        assert_eq!(counted(&store, 8).await.0, 0);
    }

    /// A fold runs alone in its transaction, with no savepoint: one that
    /// fails part-way (here at its third link) leaves no link's totals or
    /// `clicks` rows behind, keeps its clicks pending and its log rows, and
    /// the next fold counts every click once.
    #[tokio::test]
    async fn a_fold_that_fails_part_way_leaves_nothing_and_counts_later() {
        let (_dir, store) = temp_store();
        for id in [7, 8, 9] {
            add_link(&store, id, None).await;
        }
        let batch = ClickBatch {
            batch_id: BatchId([1; 16]),
            clicks: vec![
                click(7, 100, false, None, 2),
                click(8, 100, false, Some("a.example"), 3),
                click(9, 100, true, None, 4),
            ],
        };
        store.append_clicks(vec![batch], 1000).await.unwrap();
        // On the writer's connection, which the fold runs on.
        store
            .write(|c| {
                c.execute_batch(
                    "CREATE TEMP TRIGGER fail_fold BEFORE UPDATE OF clicks ON links \
                     WHEN NEW.id = 9 BEGIN SELECT RAISE(ABORT, 'injected'); END",
                )?;
                Ok(())
            })
            .await
            .unwrap();
        let failed = store.fold_clicks().await.unwrap_err();
        assert!(failed.to_string().contains("injected"), "{failed}");
        let in_tables = || {
            store.read(|c| {
                Ok(c.query_row(
                    "SELECT (SELECT sum(clicks) FROM links), (SELECT count(*) FROM clicks)",
                    [],
                    |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)),
                )?)
            })
        };
        assert_eq!(in_tables().await.unwrap(), (0, 0));
        assert_eq!(store.write(log_len).await.unwrap(), 1);
        assert_eq!(counted(&store, 8).await.0, 3);
        store
            .write(|c| Ok(c.execute_batch("DROP TRIGGER temp.fail_fold")?))
            .await
            .unwrap();
        assert_eq!(store.fold_clicks().await.unwrap().counted, 9);
        assert_eq!(in_tables().await.unwrap(), (9, 3));
        assert_eq!(store.fold_clicks().await.unwrap(), FoldOutcome::default());
        for (id, n) in [(7, 2), (8, 3), (9, 4)] {
            assert_eq!(counted(&store, id).await.0, n, "link {id}");
        }
    }

    #[tokio::test]
    async fn reads_during_folds_count_each_click_once() {
        let (_dir, store) = temp_store();
        add_link(&store, 7, None).await;
        let mut expected = 0;
        for round in 0..40u8 {
            let b = ClickBatch {
                batch_id: BatchId([round; 16]),
                clicks: vec![click(
                    7,
                    100 + (round % 3) as u32,
                    round % 2 == 0,
                    Some("a.example"),
                    3,
                )],
            };
            let append = store.append_clicks(vec![b], 1000);
            let fold = store.fold_clicks();
            let s2 = store.clone();
            let read = async move { counted(&s2, 7).await };
            let (a, f, r) = tokio::join!(append, fold, read);
            a.unwrap();
            f.unwrap();
            // A read sees every batch acknowledged before it started, and
            // never one twice.
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
    }

    #[tokio::test]
    async fn unfolded_log_rows_are_recovered_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        {
            let store = SqliteStore::open(&path, 1, 10).unwrap();
            add_link(&store, 9, None).await;
            store
                .append_clicks(
                    vec![ClickBatch {
                        batch_id: BatchId([1; 16]),
                        clicks: vec![click(9, 100, false, None, 2)],
                    }],
                    1000,
                )
                .await
                .unwrap();
            store.fold_clicks().await.unwrap();
            store
                .append_clicks(
                    vec![ClickBatch {
                        batch_id: BatchId([2; 16]),
                        clicks: vec![click(9, 100, false, None, 5)],
                    }],
                    1000,
                )
                .await
                .unwrap();
            // Closed without a fold: like a crash after the ack.
            store.close();
        }
        let store = SqliteStore::open(&path, 1, 10).unwrap();
        assert_eq!(counted(&store, 9).await.0, 7);
        assert_eq!(store.write(log_len).await.unwrap(), 1);
        let again = ClickBatch {
            batch_id: BatchId([2; 16]),
            clicks: vec![click(9, 100, false, None, 5)],
        };
        assert_eq!(
            store.append_clicks(vec![again], 1000).await.unwrap(),
            vec![false]
        );
        assert_eq!(store.fold_clicks().await.unwrap().counted, 5);
        assert_eq!(counted(&store, 9).await.0, 7);
        store.close();
        let store = SqliteStore::open(&path, 1, 10).unwrap();
        assert_eq!(counted(&store, 9).await.0, 7);
        assert_eq!(store.write(log_len).await.unwrap(), 0);
    }
}
