//! Id recycling (`[recycling]`, opt-in) against a real daemon, on SQLite
//! and (under `with-pg`) PostgreSQL: a leased range whose links all
//! expired or were deleted more than the grace period ago is purged and
//! handed out again, lowest first; a range with one live link is not; the
//! new link starts with no clicks; every subscribed worker has the old
//! codes' invalidations before the id is handed out; two nodes on one
//! PostgreSQL never get the same recycled range. The grace period is not
//! shortened: the test moves the stored times back instead.

mod common;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use common::{batch, eventually, on_postgres, Daemon};
use serde_json::{json, Value};
use shortlink_core::ipc::{Event, LookupResult, Reply};

/// Seconds the stored times are moved back: past any grace period the
/// tests set (7 days) and the 90-day default.
const AGO: i64 = 100 * 86_400;

/// Direct access to the daemon's database, for moving times back.
enum Db {
    Sqlite(std::path::PathBuf),
    Pg(Box<shortlinkd::store::postgres::Pg>),
}

impl Db {
    async fn exec(&self, sql: &str) {
        match self {
            Db::Sqlite(path) => {
                let c = rusqlite::Connection::open(path).unwrap();
                c.busy_timeout(Duration::from_secs(10)).unwrap();
                c.execute_batch(sql).unwrap();
            }
            Db::Pg(pg) => pg.get().await.unwrap().batch_execute(sql).await.unwrap(),
        }
    }

    /// Moves the leases of ids below `below`, and the expiry and deletion
    /// times of their links, [`AGO`] back.
    async fn age_below(&self, below: u64) {
        self.exec(&format!(
            "UPDATE id_ranges SET leased_at = leased_at - {AGO} WHERE stop <= {below};
             UPDATE links SET expires_at = expires_at - {AGO}
                 WHERE id < {below} AND expires_at IS NOT NULL;
             UPDATE link_tombstones SET deleted_at = deleted_at - {AGO} WHERE link_id < {below};"
        ))
        .await;
    }
}

/// The arguments that turn recycling on, sweeping every second.
const RECYCLING: [&str; 6] = [
    "--recycle-ids",
    "--recycle-grace-days",
    "7",
    "--recycle-sweep-interval",
    "1",
    "--segment-size",
];

/// A fresh database for the suite's store: the daemon arguments that
/// name it (none on SQLite) and the direct access to it.
fn database(name: &str) -> (Vec<String>, Option<String>) {
    let Some(cluster) = testpg::PgCluster::suite() else {
        return (Vec::new(), None);
    };
    let url = cluster.create_db(&format!("r{}_{name}", std::process::id()));
    let args = vec![
        "--database".to_string(),
        url.clone(),
        "--database-password-file".to_string(),
        cluster.password_file().display().to_string(),
    ];
    (args, Some(url))
}

async fn open_db(d: &Daemon, url: Option<&str>) -> Db {
    match url {
        None => Db::Sqlite(d.data_dir().join("shortlink.db")),
        Some(url) => {
            let cluster = testpg::PgCluster::suite().unwrap();
            let config = shortlinkd::config::Config {
                database: Some(shortlinkd::config::DatabaseUrl::parse(url).unwrap()),
                database_password_file: Some(cluster.password_file()),
                ..Default::default()
            };
            Db::Pg(Box::new(
                shortlinkd::store::postgres::connect(&config).await.unwrap(),
            ))
        }
    }
}

async fn start(name: &str, segment: &str) -> (Daemon, Db, Vec<String>) {
    let (store, url) = database(name);
    let mut args: Vec<&str> = store.iter().map(String::as_str).collect();
    args.extend(RECYCLING);
    args.push(segment);
    let d = Daemon::start_with(&args).await;
    let db = open_db(&d, url.as_deref()).await;
    (d, db, store)
}

fn id(v: &Value) -> u64 {
    v["id"].as_u64().unwrap()
}

fn code(v: &Value) -> String {
    v["code"].as_str().unwrap().to_string()
}

/// `GET /api/v1/ids` with `limit` ranges.
async fn ranges(d: &Daemon, limit: u32) -> Value {
    let (s, v) = d
        .req("GET", &format!("/api/v1/ids?limit={limit}"), None)
        .await;
    assert_eq!(s, 200, "{v}");
    v
}

/// The state of the recorded range starting at `start`.
async fn state_of(d: &Daemon, start: u64) -> String {
    let v = ranges(d, 1000).await;
    v["ranges"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["start"] == start)
        .map(|r| r["state"].as_str().unwrap().to_string())
        .unwrap_or_else(|| panic!("no range starts at {start}: {v}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_range_is_purged_told_to_the_edge_then_reused_and_a_live_one_is_not() {
    let (d, db, _) = start("one", "4").await;
    // Range 1: three links that expire and one deleted. Range 2: one live
    // link among expired ones. Then a few more, so both are used up.
    let mut first = Vec::new();
    for i in 0..4 {
        first.push(
            d.create(json!({"url": format!("https://old.example/{i}"), "ttl": 3600}))
                .await,
        );
    }
    let floor = id(&first[0]);
    assert_eq!(
        first.iter().map(id).collect::<Vec<_>>(),
        (floor..floor + 4).collect::<Vec<_>>()
    );
    let (s, _) = d
        .req(
            "DELETE",
            &format!("/api/v1/links/{}", code(&first[3])),
            None,
        )
        .await;
    assert_eq!(s, 204);
    let live = d.create(json!({"url": "https://live.example/"})).await;
    assert_eq!(id(&live), floor + 4);
    for i in 0..7 {
        d.create(json!({"url": format!("https://later.example/{i}"), "ttl": 3600}))
            .await;
    }
    // Old clicks on the first link.
    let mut edge = d.ipc().await;
    edge.clicks(1, batch(1, floor, 5, false)).await;
    let old_code = code(&first[0]);
    assert!(
        eventually(Duration::from_secs(10), || async {
            let (_, s) = d
                .req("GET", &format!("/api/v1/links/{old_code}/stats"), None)
                .await;
            s["total"] == 5
        })
        .await
    );
    assert_eq!(state_of(&d, floor).await, "leased");

    // A worker, as the nginx module subscribes.
    let mut worker = d.ipc().await;
    worker.subscribe(2).await;

    db.age_below(floor + 8).await;
    assert!(
        eventually(Duration::from_secs(20), || async {
            state_of(&d, floor).await == "available"
        })
        .await,
        "range 1 was not recycled: {} {}",
        ranges(&d, 10).await,
        d.log()
    );
    // One live link keeps range 2 as it is.
    assert_eq!(state_of(&d, floor + 4).await, "leased");
    let v = ranges(&d, 5).await;
    assert_eq!(
        (v["available"].as_u64(), v["available_ids"].as_u64()),
        (Some(1), Some(4))
    );
    assert!(v["recycling"]["enabled"].as_bool().unwrap());
    // The old links are gone (the deleted one had no row already).
    for old in &first[..3] {
        let (s, _) = d
            .req("GET", &format!("/api/v1/links/{}", code(old)), None)
            .await;
        assert_eq!(s, 404, "{old}");
    }

    // New links: the recycled range comes back, lowest first, before the
    // fresh ids run out of memory.
    let mut reused = None;
    for i in 0..16 {
        let made = d
            .create(json!({"url": format!("https://new.example/{i}")}))
            .await;
        if id(&made) < floor + 4 {
            reused = Some(made);
            break;
        }
    }
    let reused = reused.expect("the recycled range was not handed out");
    // The worker had the old codes' invalidations before the id was
    // handed out: they are in its socket already.
    let heard: HashSet<String> = worker
        .ready_now()
        .into_iter()
        .filter_map(|r| match r {
            Reply::Event(Event::Invalidate { code }) => Some(code),
            _ => None,
        })
        .collect();
    for old in &first {
        assert!(
            heard.contains(&code(old)),
            "{} not purged: {heard:?}",
            code(old)
        );
    }
    assert_eq!(id(&reused), floor, "lowest first");
    assert_eq!(code(&reused), old_code, "the same code again");
    // The new link answers with its own target and no old clicks.
    match edge.lookup(3, &old_code).await {
        LookupResult::Found(link) => assert_eq!(Some(link.target.as_str()), reused["url"].as_str()),
        other => panic!("{other:?}"),
    }
    let (_, stats) = d
        .req("GET", &format!("/api/v1/links/{old_code}/stats"), None)
        .await;
    assert_eq!(stats["total"], 0, "{stats}");
    // A late batch (a spool file held for weeks) with the old link's clicks
    // of 20 days ago and 2 of the new link's: only the new link's count.
    let mut late = batch(2, floor, 2, false);
    let mut old = late.clicks[0].clone();
    old.hour -= 20 * 24;
    old.count = 5;
    late.clicks.push(old);
    edge.clicks(4, late).await;
    let from = shortlinkd::timestamp::unix_now() - 30 * 86_400;
    let counted = || async {
        let (_, s) = d
            .req(
                "GET",
                &format!("/api/v1/links/{old_code}/stats?from={from}"),
                None,
            )
            .await;
        let (_, l) = d
            .req("GET", &format!("/api/v1/links/{old_code}"), None)
            .await;
        (s["total"].clone(), l["clicks"].clone())
    };
    // (SQLite drops the old rows at the append; PostgreSQL logs them and
    // drops them when the read folds the log into the tables.)
    assert_eq!(counted().await, (json!(2), json!(2)), "{}", d.log());
    assert!(d.metric("shortlinkd_ids_recycled_total").await >= 4.0);
    assert!(d.metric("shortlinkd_id_segments_reused_total").await >= 1.0);
    let v = ranges(&d, 0).await;
    assert_eq!(v["reused"], 1, "{v}");

    // The CLI view.
    let out = d.cli(&["ids", "--limit", "3"]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let text = common::stdout(&out);
    assert!(text.contains("recycling:   on (grace 7 days"), "{text}");
    assert!(text.contains("reused:      1 ranges taken again"), "{text}");
    // The admin dashboard's line.
    let page = dashboard(&d).await;
    assert!(
        page.contains(
            "Id recycling: on (grace 7 days): 0 ranges available (0 ids), 1 taken again."
        ),
        "{page}"
    );
}

/// The admin dashboard's HTML, for a signed-in admin.
async fn dashboard(d: &Daemon) -> String {
    let admin = common::admin::sign_in(d).await;
    let (s, _, page) = common::admin::send(
        d,
        "GET",
        "/admin/dashboard",
        &[("cookie", &admin.cookie)],
        None,
    )
    .await;
    assert_eq!(s, 200);
    page.as_str().unwrap().to_string()
}

#[tokio::test]
async fn recycling_is_off_by_default_and_a_short_grace_period_is_refused() {
    let d = Daemon::start().await;
    let made = d
        .create(json!({"url": "https://e.com/", "ttl": 3600}))
        .await;
    let v = ranges(&d, 5).await;
    assert_eq!(v["recycling"]["enabled"], false);
    // Leases are recorded even when off, so turning it on later is safe.
    let first = v["ranges"].as_array().unwrap().last().unwrap().clone();
    assert!(first["start"].as_u64().unwrap() <= id(&made), "{v}");
    let out = std::process::Command::new(common::BIN)
        .args(["serve", "--data-dir"])
        .arg(d.data_dir().join("other"))
        .args(["--recycle-ids", "--recycle-grace-days", "3"])
        .env_remove("SHORTLINKD_CONFIG")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = common::stderr(&out);
    assert!(err.contains("recycling.grace_days"), "{err}");
    assert!(err.contains("minimum of 7 days"), "{err}");
    assert!(dashboard(&d).await.contains("Id recycling: off."));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_never_get_the_same_recycled_range() {
    if !on_postgres() {
        eprintln!("PostgreSQL only (run under with-pg)");
        return;
    }
    let (a, db, store) = start("two", "2").await;
    // Sixteen ranges of two expiring links each, then used up.
    let mut made = Vec::new();
    for i in 0..40 {
        made.push(
            a.create(json!({"url": format!("https://old.example/{i}"), "ttl": 3600}))
                .await,
        );
    }
    let floor = made.iter().map(id).min().unwrap();
    let below = floor + 32;
    let mut args: Vec<&str> = store.iter().map(String::as_str).collect();
    args.extend(RECYCLING);
    args.push("2");
    let b = Daemon::start_with(&args).await;
    db.age_below(below).await;
    assert!(
        eventually(Duration::from_secs(30), || async {
            ranges(&a, 0).await["available"].as_u64() >= Some(12)
        })
        .await,
        "{}",
        ranges(&a, 40).await
    );
    // Both nodes create at once; each recycled range goes to one node.
    let create_on = |d: Arc<Daemon>, tag: &'static str| async move {
        let mut ids = Vec::new();
        for i in 0..20 {
            let (s, v) = d
                .req(
                    "POST",
                    "/api/v1/links",
                    Some(json!({"url": format!("https://{tag}.example/{i}")})),
                )
                .await;
            assert_eq!(s, 201, "{v}");
            ids.push(id(&v));
        }
        ids
    };
    // Shared, not leaked: the daemons stop when the test ends.
    let (a, b) = (Arc::new(a), Arc::new(b));
    let (on_a, on_b) = tokio::join!(
        tokio::spawn(create_on(a.clone(), "a")),
        tokio::spawn(create_on(b.clone(), "b"))
    );
    let (on_a, on_b) = (on_a.unwrap(), on_b.unwrap());
    let mut owner: HashMap<u64, &str> = HashMap::new();
    for (ids, node) in [(&on_a, "a"), (&on_b, "b")] {
        for &id in ids {
            assert!(owner.insert(id, node).is_none(), "id {id} handed out twice");
        }
    }
    let recycled: Vec<(&u64, &&str)> = owner.iter().filter(|(id, _)| **id < below).collect();
    assert!(recycled.len() >= 8, "few recycled ids: {owner:?}");
    for node in ["a", "b"] {
        assert!(
            recycled.iter().any(|(_, n)| **n == node),
            "node {node} got no recycled range: {owner:?}"
        );
    }
    // A range (two ids from an even offset) has one owner.
    let mut range_owner: HashMap<u64, &str> = HashMap::new();
    for (&id, &node) in &recycled {
        let start = floor + (id - floor) / 2 * 2;
        assert_eq!(
            *range_owner.entry(start).or_insert(node),
            node,
            "range {start}"
        );
    }
    let v = ranges(&a, 0).await;
    assert!(v["reused"].as_u64().unwrap() >= 4, "{v}");
}
