//! `ClickStore` of `PgStore` on a real PostgreSQL: batches count once
//! however often and from however many nodes they are sent, visit limits
//! and renewals reach the change log in the batch's transaction, and the
//! stats answer exactly what the SQLite store answers for the same clicks.

mod pg_common;

use pg_common::{add_link, config_for};
use shortlink_core::device::DeviceClass;
use shortlink_core::ipc::{BatchId, ClickBatch, ClickCount};
use shortlink_core::DeploymentKey;
use shortlinkd::store::postgres::backend::PgStore;
use shortlinkd::store::sqlite::SqliteStore;
use shortlinkd::store::{ClickStore, FoldOutcome, Link, NewLink, Store};
use testpg::PgCluster;

fn click(
    link_id: u64,
    hour: u32,
    device: DeviceClass,
    bot: bool,
    referrer: Option<&str>,
    count: u32,
) -> ClickCount {
    ClickCount {
        link_id,
        hour,
        device,
        bot,
        referrer: referrer.map(String::from),
        count,
        country: shortlink_core::country::UNKNOWN,
        variant: 0,
    }
}

/// `c` from visitors of `country`.
fn from(country: &str, c: ClickCount) -> ClickCount {
    ClickCount {
        country: shortlink_core::country::Country::parse(country).unwrap(),
        ..c
    }
}

/// `c` sent to A/B variant index `index`.
fn to(index: u8, c: ClickCount) -> ClickCount {
    ClickCount {
        variant: index + 1,
        ..c
    }
}

fn batch(id: u8, clicks: Vec<ClickCount>) -> ClickBatch {
    ClickBatch {
        batch_id: BatchId([id; 16]),
        clicks,
    }
}

async fn open(cluster: &PgCluster, db: &str) -> (PgStore, PgStore) {
    let config = config_for(cluster, db);
    let key = DeploymentKey::from_bytes([7; 32]);
    let a = PgStore::open(&config, &key).await.unwrap();
    let b = PgStore::open(&config, &key).await.unwrap();
    (a, b)
}

/// `clicks/bot_clicks` of a link and the sum of its `clicks` rows.
fn totals(cluster: &PgCluster, db: &str, id: u64) -> String {
    cluster
        .psql(
            db,
            &format!(
                "SELECT clicks || '/' || bot_clicks || '/' || \
                 (SELECT coalesce(sum(count), 0) FROM clicks WHERE link_id = {id}) \
                 FROM links WHERE id = {id}"
            ),
        )
        .trim()
        .to_string()
}

fn logged(cluster: &PgCluster, db: &str, id: u64) -> String {
    cluster
        .psql(
            db,
            &format!("SELECT count(*) FROM edge_changes WHERE link_id = {id}"),
        )
        .trim()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_batch_counts_once_from_retries_and_from_two_nodes() {
    let cluster = PgCluster::start("pgsclicks");
    let (a, b) = open(&cluster, "once").await;
    add_link(a.pg(), 1, None, None).await;
    add_link(a.pg(), 2, None, None).await;
    let one = batch(
        1,
        vec![
            click(
                1,
                10,
                DeviceClass::Desktop,
                false,
                Some("News.Example.com"),
                3,
            ),
            click(1, 10, DeviceClass::Desktop, true, None, 2),
            click(2, 11, DeviceClass::Ios, false, None, 4),
            click(99, 11, DeviceClass::Ios, false, None, 5),
        ],
    );
    // Twice in one call, then again from the other node.
    assert_eq!(
        a.append_clicks(vec![one.clone(), one.clone()], 36_000)
            .await
            .unwrap(),
        [true, false]
    );
    assert_eq!(
        b.append_clicks(vec![one.clone()], 36_000).await.unwrap(),
        [false]
    );
    // Links without a visit limit wait in the log (one row for the batch)
    // until a fold, by any node.
    assert_eq!(log_rows(&cluster, "once"), "1");
    assert_eq!(totals(&cluster, "once", 1), "0/0/0");
    let first = b.fold_clicks().await.unwrap();
    assert_eq!((first.batches, first.counted), (1, 9));
    assert_eq!(log_rows(&cluster, "once"), "0");
    assert_eq!(totals(&cluster, "once", 1), "5/2/5");
    assert_eq!(totals(&cluster, "once", 2), "4/0/4");
    // The referrer is stored as SQLite stores it.
    let refs = cluster.psql(
        "once",
        "SELECT string_agg(DISTINCT referrer, ',') FROM clicks WHERE referrer <> ''",
    );
    assert_eq!(refs.trim(), "news.example.com");

    // A new batch sent by both nodes at once counts once.
    for round in 2..12u8 {
        let next = batch(
            round,
            vec![click(1, 12, DeviceClass::Mobile, false, None, 1)],
        );
        let (x, y) = tokio::join!(
            a.append_clicks(vec![next.clone()], 40_000),
            b.append_clicks(vec![next.clone()], 40_000)
        );
        let (x, y) = (x.unwrap(), y.unwrap());
        assert_eq!(x[0] as u8 + y[0] as u8, 1, "round {round}: {x:?} {y:?}");
    }
    assert_eq!(log_rows(&cluster, "once"), "10");
    assert_ne!(a.click_backlog().0 + b.click_backlog().0, 0);
    // Both nodes fold at once: each row by one of them.
    let (x, y) = tokio::join!(a.fold_clicks(), b.fold_clicks());
    let (x, y) = (x.unwrap(), y.unwrap());
    assert_eq!(x.batches + y.batches, 10, "{x:?} {y:?}");
    assert_eq!(log_rows(&cluster, "once"), "0");
    assert_eq!(totals(&cluster, "once", 1), "15/2/15");
    // A read that shows clicks folds the log first, whichever node logged
    // the batch: it counts every acknowledged click.
    let late = batch(20, vec![click(1, 12, DeviceClass::Mobile, false, None, 1)]);
    assert_eq!(a.append_clicks(vec![late], 40_000).await.unwrap(), [true]);
    assert_eq!(b.link_stats(1, 0, 100, false).await.unwrap().total, 16);
    assert_eq!(log_rows(&cluster, "once"), "0");
    assert_eq!(totals(&cluster, "once", 1), "16/2/16");
    // Each click folded by one node alone, in its metric.
    let (fa, fb) = (
        a.fold_clicks().await.unwrap(),
        b.fold_clicks().await.unwrap(),
    );
    assert_eq!(
        first.counted + x.counted + y.counted + fa.counted + fb.counted,
        16 + 4
    );
    assert_eq!((fa.batches, fa.changed.len()), (0, 0));
    assert_eq!(a.fold_clicks().await.unwrap(), FoldOutcome::default());
    assert_eq!(b.click_backlog(), (0, 0));
}

/// Rows in `click_log` (batches not folded yet).
fn log_rows(cluster: &PgCluster, db: &str) -> String {
    cluster
        .psql(db, "SELECT count(*) FROM click_log")
        .trim()
        .to_string()
}

/// As on SQLite (`a_fold_that_fails_part_way_leaves_nothing_and_counts_later`):
/// a fold that fails part-way (a trigger aborts the third link's update)
/// leaves no link's totals or `clicks` rows behind and keeps its log row,
/// and the next fold counts every click once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fold_that_fails_part_way_leaves_nothing_and_counts_later() {
    let cluster = PgCluster::start("pgsfoldfail");
    let (a, _b) = open(&cluster, "foldfail").await;
    for id in [7, 8, 9] {
        add_link(a.pg(), id, None, None).await;
    }
    let one = batch(
        1,
        vec![
            click(7, 10, DeviceClass::Desktop, false, None, 2),
            click(8, 10, DeviceClass::Desktop, false, Some("a.example"), 3),
            click(9, 10, DeviceClass::Desktop, true, None, 4),
        ],
    );
    assert_eq!(a.append_clicks(vec![one], 36_000).await.unwrap(), [true]);
    cluster.psql(
        "foldfail",
        "CREATE FUNCTION fail_fold() RETURNS trigger LANGUAGE plpgsql AS \
         $$ BEGIN RAISE EXCEPTION 'injected'; END $$; \
         CREATE TRIGGER fail_fold BEFORE UPDATE OF clicks ON links \
         FOR EACH ROW WHEN (NEW.id = 9) EXECUTE FUNCTION fail_fold();",
    );
    let failed = a.fold_clicks().await.unwrap_err();
    assert!(failed.to_string().contains("injected"), "{failed}");
    for id in [7, 8, 9] {
        assert_eq!(totals(&cluster, "foldfail", id), "0/0/0", "link {id}");
    }
    assert_eq!(log_rows(&cluster, "foldfail"), "1");
    cluster.psql("foldfail", "DROP TRIGGER fail_fold ON links");
    assert_eq!(a.fold_clicks().await.unwrap().counted, 9);
    assert_eq!(log_rows(&cluster, "foldfail"), "0");
    assert_eq!(a.fold_clicks().await.unwrap().counted, 0);
    for (id, totals_of) in [(7, "2/0/2"), (8, "3/0/3"), (9, "4/4/4")] {
        assert_eq!(totals(&cluster, "foldfail", id), totals_of, "link {id}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn visit_limits_and_renewals_reach_the_change_log() {
    let cluster = PgCluster::start("pgsrenew");
    let (a, _b) = open(&cluster, "renew").await;
    let now = 1_000_000;
    add_link(a.pg(), 1, Some("limited"), Some(3)).await;
    // 2: renewable, expiring soon; 3: renewable but the move is under a
    // tenth of its ttl; 4: renewable but disabled; 5: already expired;
    // 6: neither limited nor renewable, its clicks logged for the fold.
    for id in 2..=6 {
        add_link(a.pg(), id, None, None).await;
    }
    cluster.psql(
        "renew",
        &format!(
            "UPDATE links SET renew_ttl = 1000, expires_at = {now} + 100 WHERE id = 2; \
             UPDATE links SET renew_ttl = 1000, expires_at = {now} + 950 WHERE id = 3; \
             UPDATE links SET renew_ttl = 1000, expires_at = {now} + 100, disabled = true WHERE id = 4; \
             UPDATE links SET renew_ttl = 1000, expires_at = {now} - 1 WHERE id = 5;"
        ),
    );
    let clicks = (1..=6)
        .map(|id| click(id, 277, DeviceClass::Desktop, false, None, 2))
        .collect();
    assert_eq!(
        a.append_clicks(vec![batch(1, clicks)], now).await.unwrap(),
        [true]
    );
    // Counted at once: the five limited or renewable links (found by
    // reading them all: fewer than the batch's links); 6 waits in the log.
    let totals = || {
        cluster.psql(
            "renew",
            "SELECT string_agg(clicks::text, ',' ORDER BY id) FROM links",
        )
    };
    assert_eq!(totals().trim(), "2,2,2,2,2,0");
    assert_eq!(log_rows(&cluster, "renew"), "1");
    // Two of three visits: not reached yet.
    assert_eq!(logged(&cluster, "renew", 1), "0");
    let expiry = |id: u64| {
        cluster
            .psql(
                "renew",
                &format!("SELECT expires_at FROM links WHERE id = {id}"),
            )
            .trim()
            .to_string()
    };
    assert_eq!(expiry(2), (now + 1000).to_string());
    assert_eq!(logged(&cluster, "renew", 2), "1");
    assert_eq!(expiry(3), (now + 950).to_string());
    assert_eq!(expiry(4), (now + 100).to_string());
    assert_eq!(expiry(5), (now - 1).to_string());
    for id in 3..=5 {
        assert_eq!(logged(&cluster, "renew", id), "0", "link {id}");
    }
    // The third human visit reaches the limit; bots do not count toward it.
    let bots = batch(2, vec![click(1, 277, DeviceClass::Other, true, None, 5)]);
    a.append_clicks(vec![bots], now).await.unwrap();
    assert_eq!(logged(&cluster, "renew", 1), "0");
    let third = batch(3, vec![click(1, 277, DeviceClass::Desktop, false, None, 1)]);
    a.append_clicks(vec![third.clone()], now).await.unwrap();
    assert_eq!(logged(&cluster, "renew", 1), "1");
    let aliases = cluster.psql(
        "renew",
        "SELECT old_alias || '>' || new_alias FROM edge_changes WHERE link_id = 1",
    );
    assert_eq!(aliases.trim(), "limited>limited");
    // A re-sent batch neither counts nor logs again.
    assert_eq!(a.append_clicks(vec![third], now).await.unwrap(), [false]);
    assert_eq!(logged(&cluster, "renew", 1), "1");
    // Later clicks renew again from their own time.
    // (Two links in the batch, five limited or renewable: found by probing
    // the batch's links.)
    let later = batch(
        4,
        vec![
            click(2, 300, DeviceClass::Desktop, false, None, 1),
            click(6, 300, DeviceClass::Desktop, false, None, 1),
        ],
    );
    a.append_clicks(vec![later], now + 500).await.unwrap();
    assert_eq!(expiry(2), (now + 1500).to_string());
    assert_eq!(logged(&cluster, "renew", 2), "2");
    assert_eq!(totals().trim(), "8,3,2,2,2,0");
    assert_eq!(log_rows(&cluster, "renew"), "2");
}

fn link(id: u64) -> NewLink {
    NewLink {
        link: Link {
            id,
            url: format!("https://example.com/{id}"),
            ..Link::default()
        },
        dedupe_hash: [id as u8; 32],
        dedupe: false,
        alias_targets: Vec::new(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_answer_as_sqlite_answers() {
    let cluster = PgCluster::start("pgsstats");
    let (pg, _b) = open(&cluster, "stats").await;
    let dir = tempfile::tempdir().unwrap();
    let sqlite = Store::from(SqliteStore::open(&dir.path().join("s.db"), 1, 16).unwrap());
    for id in 1..=4u64 {
        sqlite.insert_links(vec![link(id)], 0).await.unwrap();
        pg.pg()
            .get()
            .await
            .unwrap()
            .execute(
                "INSERT INTO links (id, url, created_at, updated_at) VALUES ($1, $2, 0, 0)",
                &[&(id as i64), &format!("https://example.com/{id}")],
            )
            .await
            .unwrap();
    }
    let batches = vec![
        batch(
            1,
            vec![
                to(
                    0,
                    from(
                        "DE",
                        click(1, 100, DeviceClass::Desktop, false, Some("a.example"), 3),
                    ),
                ),
                to(
                    1,
                    from(
                        "fr",
                        click(1, 101, DeviceClass::Mobile, false, Some("B.example"), 2),
                    ),
                ),
                click(1, 101, DeviceClass::Mobile, true, None, 4),
                from(
                    "DE",
                    click(2, 100, DeviceClass::Ios, false, Some("a.example"), 9),
                ),
                click(3, 130, DeviceClass::Android, false, None, 6),
            ],
        ),
        batch(
            2,
            vec![
                to(
                    1,
                    click(1, 124, DeviceClass::Desktop, false, Some("a.example"), 1),
                ),
                click(4, 101, DeviceClass::Other, true, None, 9),
                click(3, 99, DeviceClass::Desktop, false, None, 7),
            ],
        ),
    ];
    pg.append_clicks(batches.clone(), 500_000).await.unwrap();
    sqlite
        .append_clicks(batches.clone(), 500_000)
        .await
        .unwrap();
    for (from, to) in [(0, 200), (100, 101), (101, 130), (125, 125)] {
        for daily in [false, true] {
            for id in 1..=5 {
                let p = pg.link_stats(id, from, to, daily).await.unwrap();
                let s = sqlite.link_stats(id, from, to, daily).await.unwrap();
                assert_eq!(p, s, "link {id} {from}..={to} daily {daily}");
            }
            let (p, ptop) = pg
                .site_stats(from, to, daily, 3, Default::default())
                .await
                .unwrap();
            let (s, stop) = sqlite
                .site_stats(from, to, daily, 3, Default::default())
                .await
                .unwrap();
            assert_eq!(p, s, "site {from}..={to} daily {daily}");
            let ids = |t: &[(Link, i64)]| {
                t.iter()
                    .map(|(l, n)| (l.id, n.to_owned()))
                    .collect::<Vec<_>>()
            };
            assert_eq!(ids(&ptop), ids(&stop));
        }
    }
    // The split by variant, spelled out once (the comparison above is
    // not of empty lists).
    assert_eq!(
        pg.link_stats(1, 0, 200, false).await.unwrap().variants,
        [(0, 3), (1, 3)]
    );
    assert_eq!(
        pg.link_stats(1, 101, 130, true).await.unwrap().variants,
        [(1, 3)]
    );
    // What the buckets hold, spelled out once.
    let one = pg.link_stats(1, 0, 200, true).await.unwrap();
    assert_eq!((one.total, one.bots), (10, 4));
    assert_eq!(one.series, [(4 * 86_400, 9), (5 * 86_400, 1)]);
    assert_eq!(one.devices, [(1, 4), (2, 6)]);
    assert_eq!(
        one.referrers,
        // Without a referrer: `""`, ranked with the hosts (ties by name).
        [
            ("".to_string(), 4),
            ("a.example".to_string(), 4),
            ("b.example".to_string(), 2)
        ]
    );
    let code = |c: &[(shortlink_core::country::Country, i64)]| {
        c.iter()
            .map(|(c, n)| (c.as_str().to_string(), *n))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        code(&one.countries),
        [("--".into(), 5), ("DE".to_string(), 3), ("FR".into(), 2)]
    );
    let (site, top) = pg
        .site_stats(0, 200, false, 2, Default::default())
        .await
        .unwrap();
    assert_eq!(site.top, [(3, 13), (1, 10)]);
    assert_eq!(
        code(&site.countries),
        [("--".into(), 27), ("DE".to_string(), 12), ("FR".into(), 2)]
    );
    let top: Vec<(u64, &str, i64)> = top
        .iter()
        .map(|(l, n)| (l.id, l.url.as_str(), *n))
        .collect();
    assert_eq!(
        top,
        [
            (3, "https://example.com/3", 13),
            (1, "https://example.com/1", 10)
        ]
    );
    assert_eq!(top.len(), 2);
    // A deleted link leaves the top list, its clicks go with it. (SQLite
    // still counts a deleted link's unfolded clicks in the site totals until
    // its next fold: compared after one.)
    sqlite.fold_clicks().await.unwrap();
    cluster.psql("stats", "DELETE FROM links WHERE id = 3");
    sqlite.delete_link(3).await.unwrap();
    let (p, ptop) = pg
        .site_stats(0, 200, false, 2, Default::default())
        .await
        .unwrap();
    let (s, stop) = sqlite
        .site_stats(0, 200, false, 2, Default::default())
        .await
        .unwrap();
    assert_eq!(p, s);
    let ids: Vec<u64> = ptop.iter().map(|(l, _)| l.id).collect();
    assert_eq!(ids, stop.iter().map(|(l, _)| l.id).collect::<Vec<_>>());
    assert!(!ids.contains(&3), "{ids:?}");
    sqlite.close();
}

/// A read that shows clicks folds the log first: under a steady stream of
/// batches from another node it still returns, and counts every click
/// acknowledged before it began (and none that was never sent). (A fold
/// takes the log up to its head when it starts.)
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_read_under_a_steady_click_stream_returns_and_counts_what_was_acknowledged() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::Arc;
    let cluster = PgCluster::start("pgsstream");
    let (a, b) = open(&cluster, "stream").await;
    add_link(a.pg(), 1, None, None).await;
    let acked = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let writer = tokio::spawn({
        let (acked, stop) = (acked.clone(), stop.clone());
        async move {
            let mut n = 0u64;
            while !stop.load(Ordering::SeqCst) {
                n += 1;
                let mut id = [0u8; 16];
                id[..8].copy_from_slice(&n.to_be_bytes());
                let one = ClickBatch {
                    batch_id: BatchId(id),
                    clicks: vec![click(1, 12, DeviceClass::Mobile, false, None, 1)],
                };
                assert_eq!(a.append_clicks(vec![one], 40_000).await.unwrap(), [true]);
                acked.fetch_add(1, Ordering::SeqCst);
            }
        }
    });
    while acked.load(Ordering::SeqCst) < 50 {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    for round in 0..5 {
        let before = acked.load(Ordering::SeqCst);
        let stats = tokio::time::timeout(
            std::time::Duration::from_secs(20),
            b.link_stats(1, 0, 100, false),
        )
        .await
        .unwrap_or_else(|_| panic!("round {round}: the read chased the stream"))
        .unwrap();
        // One batch may be committed and folded before its append returns.
        let after = acked.load(Ordering::SeqCst) + 1;
        assert!(
            (before..=after).contains(&(stats.total as u64)),
            "round {round}: {} counted, {before} acknowledged before the read, {after} after",
            stats.total
        );
    }
    stop.store(true, Ordering::SeqCst);
    writer.await.unwrap();
    // Everything sent, folded by either node, counts once.
    b.fold_clicks().await.unwrap();
    assert_eq!(
        totals(&cluster, "stream", 1),
        format!("{0}/0/{0}", acked.load(Ordering::SeqCst))
    );
}
