//! Two real daemons (`shortlinkd serve --database postgres://…`) on one
//! private PostgreSQL: what one node writes, the other serves, its own
//! cache never answers a stale link, and a worker subscribed to the other
//! node hears the change; a worker's position survives a daemon restart.

mod common;

use std::time::{Duration, Instant};

use common::{Daemon, Ipc};
use serde_json::{json, Value};
use shortlink_core::ipc::{ChangePosition, Event, LookupResult, Reply};
use testpg::PgCluster;

/// How long a change made on one node may take to reach the other (the
/// issue asks for 1 s at the p99; a loaded test machine gets slack).
const REACH: Duration = Duration::from_secs(3);

async fn node(cluster: &PgCluster, url: &str) -> Daemon {
    common::on_cluster(cluster, url, &[]).await
}

fn code(v: &Value) -> String {
    v["code"].as_str().unwrap().to_string()
}

/// The target `node` answers a worker's lookup of `code` with (`None`:
/// not found or gone).
async fn target(lookups: &mut Ipc, id: u32, code: &str) -> Option<String> {
    match lookups.lookup(id, code).await {
        LookupResult::Found(link) => Some(link.target),
        LookupResult::NotFound | LookupResult::Gone => None,
    }
}

/// Waits (up to `within`) until a subscribed worker hears `want`, then
/// for the position pushed after it; that position.
async fn hear(worker: &mut Ipc, want: &Event, within: Duration) -> Option<ChangePosition> {
    let deadline = Instant::now() + within;
    let mut heard = false;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match worker.recv_timeout(left).await {
            Ok(Some(Reply::Event(e))) if &e == want => heard = true,
            Ok(Some(Reply::Event(Event::Position(p)))) if heard => return Some(p),
            Ok(Some(_)) => {}
            Ok(None) | Err(()) => return None,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_on_one_node_reaches_the_other_nodes_cache_and_workers() {
    let cluster = PgCluster::start("two-nodes");
    let url = cluster.create_db("links");
    let a = node(&cluster, &url).await;
    let mut b = node(&cluster, &url).await;
    let mut worker = b.ipc().await;
    worker.subscribe(1).await;
    let mut lookups = b.ipc().await;

    // Created on A: B's API and B's lookups know it, and B's worker hears
    // the new alias.
    let made = a
        .create(json!({"url": "https://e.com/one", "alias": "one-alias"}))
        .await;
    let generated = code(&made);
    let (s, got) = b
        .req("GET", &format!("/api/v1/links/{generated}"), None)
        .await;
    assert_eq!((s, got["url"].as_str()), (200, Some("https://e.com/one")));
    assert_eq!(
        target(&mut lookups, 1, "one-alias").await.as_deref(),
        Some("https://e.com/one")
    );
    let joined = Event::Aliases {
        aliases: vec!["one-alias".into()],
    };
    assert!(
        hear(&mut worker, &joined, REACH).await.is_some(),
        "B's worker did not hear of the alias made on A"
    );

    // B now holds the link in its cache; edited on A, B answers the new
    // target (never the cached one) and its worker is told to purge.
    assert_eq!(
        target(&mut lookups, 2, &generated).await.as_deref(),
        Some("https://e.com/one")
    );
    let (s, _) = a
        .req(
            "PATCH",
            &format!("/api/v1/links/{generated}"),
            Some(json!({"url": "https://e.com/edited"})),
        )
        .await;
    assert_eq!(s, 200);
    let purge = Event::Invalidate {
        code: generated.clone(),
    };
    let heard = hear(&mut worker, &purge, REACH).await;
    assert!(heard.is_some(), "B's worker did not hear of the edit on A");
    assert_eq!(
        target(&mut lookups, 3, &generated).await.as_deref(),
        Some("https://e.com/edited"),
        "B's cache answered the link as it was before the edit"
    );
    assert_eq!(
        target(&mut lookups, 4, "one-alias").await.as_deref(),
        Some("https://e.com/edited")
    );

    // Deleted on A: gone on B, alias removed at B's worker.
    let (s, _) = a
        .req("DELETE", &format!("/api/v1/links/{generated}"), None)
        .await;
    assert_eq!(s, 204);
    let removed = Event::AliasesRemoved {
        aliases: vec!["one-alias".into()],
    };
    let at = hear(&mut worker, &removed, REACH)
        .await
        .expect("B's worker did not hear of the delete on A");
    assert_eq!(target(&mut lookups, 5, &generated).await, None);
    assert_eq!(target(&mut lookups, 6, "one-alias").await, None);

    // A worker's position means the same after B restarts: B is stopped,
    // A makes a link meanwhile, and the worker resumes on the restarted B
    // without dropping its zone, replayed what it missed.
    drop((worker, lookups));
    b.sigterm();
    let later = a
        .create(json!({"url": "https://e.com/two", "alias": "two-alias"}))
        .await;
    b.spawn().await;
    let mut back = b.ipc().await;
    let r = back.resume(7, Some(at)).await;
    assert!(!r.reset, "the restarted daemon could replay: {r:?}");
    assert_eq!(r.aliases, ["two-alias"]);
    let joined = Event::Aliases {
        aliases: vec!["two-alias".into()],
    };
    assert!(r.replayed.contains(&joined), "{:?}", r.replayed);
    assert_eq!((r.position.store, r.position.seq), (at.store, at.seq + 1));
    assert_eq!(
        target(&mut back, 8, &code(&later)).await.as_deref(),
        Some("https://e.com/two")
    );
}

/// Clicks sent to both nodes (one batch to both, as a retry through
/// another node would): counted once in the shared tables, both nodes'
/// stats exact, and the nodes' clicks metrics together count each click
/// once (a node counts what its folds wrote, whoever took the batch).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clicks_sent_to_both_nodes_count_once_and_move_each_nodes_metric() {
    let cluster = PgCluster::start("two-clicks");
    let url = cluster.create_db("links");
    let a = node(&cluster, &url).await;
    let b = node(&cluster, &url).await;
    let made = a.create(json!({"url": "https://e.com/clicked"})).await;
    let id = made["id"].as_u64().unwrap();
    let (mut wa, mut wb) = (a.ipc().await, b.ipc().await);
    wa.clicks(1, common::batch(1, id, 3, false)).await;
    wb.clicks(1, common::batch(2, id, 4, false)).await;
    let twice = common::batch(3, id, 5, false);
    wa.clicks(2, twice.clone()).await;
    wb.clicks(2, twice).await;
    for node in [&a, &b] {
        let (s, stats) = node
            .req("GET", &format!("/api/v1/links/{}/stats", code(&made)), None)
            .await;
        assert_eq!((s, stats["total"].as_u64()), (200, Some(12)), "{stats}");
    }
    let deadline =
        Instant::now() + shortlinkd::stats::FOLD_ALL_EVERY + shortlinkd::stats::FOLD_EVERY * 3;
    let (ma, mb) = loop {
        let (ma, mb) = (
            a.metric("shortlinkd_clicks_total").await,
            b.metric("shortlinkd_clicks_total").await,
        );
        if ma + mb == 12.0 || Instant::now() > deadline {
            break (ma, mb);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(ma + mb, 12.0, "A {ma}, B {mb}");
}

/// A session listening on the change channel: a message per notification.
async fn listener(cluster: &PgCluster, db: &str) -> tokio::sync::mpsc::UnboundedReceiver<()> {
    let (client, mut conn) =
        tokio_postgres::connect(&cluster.url_with_password(db), tokio_postgres::NoTls)
            .await
            .unwrap();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let (listening_tx, listening) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let listen = format!("LISTEN {}", shortlinkd::store::postgres::changes::CHANNEL);
        let mut listen = Box::pin(client.batch_execute(&listen));
        let mut listening_tx = Some(listening_tx);
        loop {
            // Drive the connection; run the LISTEN until it is done.
            let message = std::future::poll_fn(|cx| {
                if let Some(t) = listening_tx.take() {
                    match std::future::Future::poll(listen.as_mut(), cx) {
                        std::task::Poll::Ready(r) => {
                            r.unwrap();
                            let _ = t.send(());
                        }
                        std::task::Poll::Pending => listening_tx = Some(t),
                    }
                }
                conn.poll_message(cx)
            })
            .await;
            match message {
                Some(Ok(tokio_postgres::AsyncMessage::Notification(_))) => {
                    if tx.send(()).is_err() {
                        return;
                    }
                }
                Some(Ok(_)) => {}
                _ => return,
            }
        }
    });
    listening.await.unwrap();
    rx
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_notifications_off_changes_travel_by_the_poll_alone() {
    let cluster = PgCluster::start("two-nodes-poll");
    let url = cluster.create_db("links");
    let password = cluster.password_file();
    let quiet = |url: &str| {
        vec![
            "--database".to_string(),
            url.to_string(),
            "--database-password-file".to_string(),
            password.to_str().unwrap().to_string(),
            "--database-notify=false".to_string(),
        ]
    };
    let args = quiet(&url);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let a = Daemon::start_with(&args).await;
    let b = Daemon::start_with(&args).await;
    let mut heard = listener(&cluster, "links").await;
    let mut lookups = b.ipc().await;

    let made = a.create(json!({"url": "https://e.com/polled"})).await;
    let generated = code(&made);
    assert_eq!(
        target(&mut lookups, 1, &generated).await.as_deref(),
        Some("https://e.com/polled")
    );
    let (s, _) = a
        .req(
            "PATCH",
            &format!("/api/v1/links/{generated}"),
            Some(json!({"url": "https://e.com/polled-again"})),
        )
        .await;
    assert_eq!(s, 200);
    // B's cache hears of it by its poll.
    let deadline = Instant::now() + REACH;
    let mut id = 2;
    while target(&mut lookups, id, &generated).await.as_deref()
        != Some("https://e.com/polled-again")
    {
        assert!(
            Instant::now() < deadline,
            "the edit never reached B by polling"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
        id += 1;
    }
    // Nobody sent a NOTIFY.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        heard.try_recv().is_err(),
        "a daemon sent NOTIFY with notifications off"
    );

    // The same with notifications on: the listener hears the edit.
    let mut on = Daemon::start_with(&[
        "--database",
        &url,
        "--database-password-file",
        password.to_str().unwrap(),
    ])
    .await;
    let (s, _) = on
        .req(
            "PATCH",
            &format!("/api/v1/links/{generated}"),
            Some(json!({"url": "https://e.com/notified"})),
        )
        .await;
    assert_eq!(s, 200);
    let got = tokio::time::timeout(Duration::from_secs(3), heard.recv()).await;
    assert!(
        matches!(got, Ok(Some(()))),
        "no NOTIFY with notifications on"
    );
    on.sigterm();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_import_never_keeps_an_id_another_node_is_about_to_hand_out() {
    let cluster = PgCluster::start("lease-import");
    let url = cluster.create_db("links");
    let a = node(&cluster, &url).await;
    let b = node(&cluster, &url).await;
    // B's first create: the ids after it sit in B's leased segment.
    let first = b.create(json!({"url": "https://e.com/b-first"})).await;
    let at = first["id"].as_u64().unwrap();
    let codec = b.codec();
    let ahead = codec.encode(at + 3).to_string();
    // An export from elsewhere carries that very code; A imports it.
    a.create(json!({"url": "https://e.com/template"})).await;
    let out = a.cli(&["export", "-"]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let csv = common::stdout(&out);
    let (header, row) = csv.split_once('\n').unwrap();
    let template = row.split(',').next().unwrap();
    let row = row.replacen(template, &ahead, 1).replacen(
        "https://e.com/template",
        "https://e.com/imported",
        1,
    );
    let file = a.data_dir().join("foreign.csv");
    std::fs::write(&file, format!("{header}\n{row}")).unwrap();
    let out = a.cli(&["--json", "import", file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", common::stderr(&out));

    // B hands out its segment: every create succeeds, each code its own.
    let mut codes = vec![first["code"].as_str().unwrap().to_string()];
    for i in 0..8 {
        let (s, made) = b
            .req(
                "POST",
                "/api/v1/links",
                Some(json!({"url": format!("https://e.com/b-{i}")})),
            )
            .await;
        assert_eq!(s, 201, "create {i} on B: {made}");
        codes.push(code(&made));
    }
    assert!(codes.contains(&ahead), "B handed out {ahead}: {codes:?}");
    // The imported link got a code of its own, and says so.
    let (s, got) = a.req("GET", &format!("/api/v1/links/{ahead}"), None).await;
    assert_eq!((s, got["url"].as_str()), (200, Some("https://e.com/b-2")));
    let (s, list) = a.req("GET", "/api/v1/links?q=e.com%2Fimported", None).await;
    assert_eq!(s, 200, "{list}");
    let imported = &list["links"][0];
    assert_eq!(imported["url"], "https://e.com/imported", "{list}");
    assert_ne!(imported["code"].as_str(), Some(ahead.as_str()));
}
