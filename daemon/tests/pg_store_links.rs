//! `PgStore`'s links on a real PostgreSQL, with the answers the SQLite
//! store gives (store/contract.rs): inserts, edits, deletes and finds, the
//! change-log rows and wake-ups they make, and edits from two nodes.

mod pg_common;
mod pg_store_common;

use pg_common::config_for;
use pg_store_common::{change_rows, edit, import_row, new_link, open};
use shortlinkd::store::{
    CodeRef, ImportStore, Inserted, Link, LinkEdit, LinkError, LinkStore, Updated,
};
use testpg::PgCluster;

fn ids(links: &[Option<Link>]) -> Vec<Option<u64>> {
    links.iter().map(|l| l.as_ref().map(|l| l.id)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inserts_refuse_items_alone_and_edits_log_their_changes() {
    let cluster = PgCluster::start("links");
    let store = open(&config_for(&cluster, "links")).await;
    let mut taken = new_link(1, Some("taken"), "https://e.com/1", &[]);
    taken.dedupe_hash = [9; 32];
    let out = store
        .insert_links(
            vec![
                taken,
                new_link(2, Some("taken"), "https://e.com/2", &[]),
                new_link(3, None, "https://e.com/3", &["free", "taken"]),
                new_link(4, Some("own"), "https://e.com/4", &["own"]),
                new_link(5, None, "https://e.com/5", &["free"]),
            ],
            0,
        )
        .await
        .unwrap();
    assert!(matches!(&out[0], Inserted::New(l) if l.id == 1));
    assert!(matches!(&out[1], Inserted::AliasTaken(a) if a == "taken"));
    assert!(matches!(out[2], Inserted::TargetAlias(1)));
    assert!(matches!(out[3], Inserted::TargetAlias(0)));
    assert!(matches!(&out[4], Inserted::New(l) if l.id == 5));
    // The taken alias in a batch of its own, after a good aliased item:
    // the good one is stored, the taken one refused alone.
    let out = store
        .insert_links(
            vec![
                new_link(6, Some("six"), "https://e.com/6", &[]),
                new_link(7, Some("taken"), "https://e.com/7", &[]),
                new_link(8, None, "https://e.com/8", &[]),
            ],
            0,
        )
        .await
        .unwrap();
    assert!(matches!(&out[0], Inserted::New(l) if l.id == 6));
    assert!(matches!(&out[1], Inserted::AliasTaken(a) if a == "taken"));
    assert!(matches!(&out[2], Inserted::New(l) if l.id == 8));
    // Dedupe answers the live link and stores nothing.
    let mut again = new_link(9, None, "https://e.com/1", &[]);
    (again.dedupe_hash, again.dedupe) = ([9; 32], true);
    let out = store.insert_links(vec![again], 0).await.unwrap();
    assert!(matches!(&out[0], Inserted::Existing(l) if l.id == 1));
    // An id already used is no alias conflict: the whole write fails,
    // the good item before it included.
    let err = store
        .insert_links(
            vec![
                new_link(10, None, "https://e.com/10", &[]),
                new_link(5, None, "https://e.com/5b", &[]),
            ],
            0,
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("inserting a link"), "{err}");
    // The store's write counters see the three writes and the failure.
    let stats = store.stats();
    let load = |n: &std::sync::atomic::AtomicU64| n.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(
        (
            load(&stats.transactions),
            load(&stats.writes),
            load(&stats.write_errors)
        ),
        (3, 3, 1)
    );
    assert_eq!(store.count_links().await.unwrap(), 4);
    let found = store
        .find_links(vec![
            CodeRef::Id(5),
            CodeRef::Alias("taken".into()),
            CodeRef::Id(2),
            CodeRef::Invalid,
            CodeRef::Alias("six".into()),
        ])
        .await
        .unwrap();
    assert_eq!(ids(&found), [Some(5), Some(1), None, None, Some(6)]);
    let by_alias = store.find_link(CodeRef::Alias("six".into())).await;
    assert_eq!(by_alias.unwrap().unwrap().url, "https://e.com/6");
    assert!(store.find_link(CodeRef::Id(10)).await.unwrap().is_none());
    // Only the stored aliases were logged.
    assert_eq!(change_rows(&cluster, "links"), ["1|-|taken", "6|-|six"]);

    // Edits: each refusal stores and logs nothing.
    assert!(matches!(
        store.update_link(99, edit(None, &[])).await.unwrap(),
        Updated::NotFound
    ));
    let refuse = LinkEdit {
        apply: Box::new(|_| Err(LinkError::NotFound("x".into()))),
        ..edit(None, &[])
    };
    assert!(matches!(
        store.update_link(5, refuse).await.unwrap(),
        Updated::Refused(LinkError::NotFound(_))
    ));
    assert!(matches!(
        store.update_link(5, edit(Some("taken"), &[])).await.unwrap(),
        Updated::AliasTaken(a) if a == "taken"
    ));
    assert!(matches!(
        store
            .update_link(5, edit(Some("new"), &["x", "new"]))
            .await
            .unwrap(),
        Updated::TargetAlias(1)
    ));
    let checked = LinkEdit {
        check: Box::new(|old, new| {
            (old.alias != new.alias).then(|| LinkError::NotFound("checked".into()))
        }),
        ..edit(Some("new"), &["free"])
    };
    assert!(matches!(
        store.update_link(5, checked).await.unwrap(),
        Updated::Refused(LinkError::NotFound(m)) if m == "checked"
    ));
    assert_eq!(change_rows(&cluster, "links").len(), 2);
    // Clicks counted meanwhile are in the answer: it is the stored row.
    cluster.psql("links", "UPDATE links SET clicks = 4 WHERE id = 5");
    match store.update_link(5, edit(Some("new"), &[])).await.unwrap() {
        Updated::Done { old, new } => {
            assert_eq!((old.alias, new.alias), (None, Some("new".into())));
            assert_eq!((new.clicks, new.updated_at), (4, old.updated_at + 1));
        }
        other => panic!("{other:?}"),
    }
    match store.update_link(6, edit(None, &[])).await.unwrap() {
        Updated::Done { new, .. } => assert_eq!(new.alias, None),
        other => panic!("{other:?}"),
    }
    let by_alias = store.find_link(CodeRef::Alias("new".into())).await.unwrap();
    assert_eq!(by_alias.map(|l| l.id), Some(5));
    assert!(store
        .find_link(CodeRef::Alias("six".into()))
        .await
        .unwrap()
        .is_none());
    // An edit clears the dedupe hash: the link no longer is the request.
    let mut again = new_link(11, None, "https://e.com/5", &[]);
    (again.dedupe_hash, again.dedupe) = ([5; 32], true);
    let out = store.insert_links(vec![again], 0).await.unwrap();
    assert!(matches!(&out[0], Inserted::New(l) if l.id == 11));

    // Deletes: the deleted link, logged; a second delete finds nothing.
    let deleted = store.delete_link(5).await.unwrap().unwrap();
    assert_eq!(deleted.alias.as_deref(), Some("new"));
    assert!(store.delete_link(5).await.unwrap().is_none());
    let deleted = store.delete_link(8).await.unwrap().unwrap();
    assert_eq!(deleted.url, "https://e.com/8");
    assert_eq!(
        change_rows(&cluster, "links"),
        [
            "1|-|taken",
            "6|-|six",
            "5|-|new",
            "6|six|-",
            "5|new|-",
            "8|-|-"
        ]
    );
    let taken = store
        .aliases_taken(vec!["taken".into(), "six".into(), "nope".into()], None)
        .await
        .unwrap();
    assert_eq!(taken.len(), 1);
    assert_eq!(taken["taken"].as_deref(), Some("https://e.com/1"));
    let hidden = store
        .aliases_taken(vec!["taken".into()], Some(999))
        .await
        .unwrap();
    assert_eq!(
        hidden["taken"], None,
        "another team's holder: taken, URL unsaid"
    );
}

/// Each kind of write wakes a listening follower at once: `NOTIFY` is sent
/// after the commit (the follower's poll is far longer than the test).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_wake_a_listening_follower_after_their_commit() {
    use shortlinkd::store::postgres::follow::{follow, FollowOptions, Followed};
    use std::time::Duration;

    let cluster = PgCluster::start("wake");
    let store = open(&config_for(&cluster, "wake")).await;
    let (tx, mut rx) = tokio::sync::mpsc::channel(16);
    let stop = tokio_util::sync::CancellationToken::new();
    let options = FollowOptions {
        poll: Duration::from_secs(600),
        listen: true,
    };
    let follower = tokio::spawn(follow(store.pg().clone(), 0, options, tx, stop.clone()));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut next = async || match tokio::time::timeout(Duration::from_secs(5), rx.recv()).await {
        Ok(Some(Followed::Changes(c))) => c.iter().map(|c| c.link_id).collect::<Vec<_>>(),
        other => panic!("no change heard within 5 s: {other:?}"),
    };
    store
        .insert_links(vec![new_link(1, Some("a"), "https://e.com/1", &[])], 0)
        .await
        .unwrap();
    assert_eq!(next().await, [1]);
    store.update_link(1, edit(Some("b"), &[])).await.unwrap();
    assert_eq!(next().await, [1]);
    store
        .import_links(vec![import_row(9, Some(40), None, "https://e.com/40")], 0)
        .await
        .unwrap();
    assert_eq!(next().await, [40]);
    store.delete_link(1).await.unwrap().unwrap();
    assert_eq!(next().await, [1]);
    stop.cancel();
    follower.await.unwrap();
}

/// Edits of one link from two nodes at once each see the one before: the
/// link's row is locked from the read to the commit, so none is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_edits_from_two_stores_lose_nothing() {
    let cluster = PgCluster::start("edits");
    let config = config_for(&cluster, "edits");
    let (a, b) = (open(&config).await, open(&config).await);
    a.insert_links(vec![new_link(1, None, "https://e.com/1", &[])], 0)
        .await
        .unwrap();
    let (a, b) = (std::sync::Arc::new(a), std::sync::Arc::new(b));
    let gate = std::sync::Arc::new(tokio::sync::Barrier::new(8));
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let store = if i % 2 == 0 { a.clone() } else { b.clone() };
            let gate = gate.clone();
            tokio::spawn(async move {
                gate.wait().await;
                let add_tag = LinkEdit {
                    apply: Box::new(move |old: &Link| {
                        let mut new = old.clone();
                        new.tags.push(format!("t{i}"));
                        Ok(new)
                    }),
                    alias_targets: Vec::new(),
                    check: Box::new(|_, _| None),
                };
                store.update_link(1, add_tag).await.unwrap()
            })
        })
        .collect();
    for t in tasks {
        assert!(matches!(t.await.unwrap(), Updated::Done { .. }));
    }
    let mut tags = a.find_link(CodeRef::Id(1)).await.unwrap().unwrap().tags;
    tags.sort();
    let want: Vec<String> = (0..8).map(|i| format!("t{i}")).collect();
    assert_eq!(tags, want);
}

/// A link's own `forward_query` (unset, on, off) is stored, read, edited
/// and imported on PostgreSQL as on SQLite.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forward_query_is_kept_in_all_three_states() {
    let cluster = PgCluster::start("links-fq");
    let store = open(&config_for(&cluster, "links_fq")).await;
    let with = |id: u64, f: Option<bool>| {
        let mut n = new_link(id, None, &format!("https://e.com/{id}"), &[]);
        n.link.forward_query = f;
        n
    };
    store
        .insert_links(
            vec![with(1, None), with(2, Some(true)), with(3, Some(false))],
            0,
        )
        .await
        .unwrap();
    let read = |links: &[Option<Link>]| -> Vec<Option<bool>> {
        links
            .iter()
            .map(|l| l.as_ref().unwrap().forward_query)
            .collect()
    };
    let found = store
        .find_links((1..=3).map(CodeRef::Id).collect())
        .await
        .unwrap();
    assert_eq!(read(&found), vec![None, Some(true), Some(false)]);

    let flip = LinkEdit {
        apply: Box::new(|old: &Link| {
            let mut new = old.clone();
            new.forward_query = match old.forward_query {
                None => Some(false),
                Some(_) => None,
            };
            Ok(new)
        }),
        alias_targets: Vec::new(),
        check: Box::new(|_, _| None),
    };
    assert!(matches!(
        store.update_link(1, flip).await.unwrap(),
        Updated::Done { ref new, .. } if new.forward_query == Some(false)
    ));
    let one = store.find_link(CodeRef::Id(1)).await.unwrap().unwrap();
    assert_eq!(one.forward_query, Some(false));

    let mut row = import_row(10, None, None, "https://e.com/imported");
    row.new.link.forward_query = Some(true);
    store.import_links(vec![row], 0).await.unwrap();
    let page = store
        .links_page(shortlinkd::store::ListQuery {
            limit: 100,
            ..Default::default()
        })
        .await
        .unwrap();
    let imported = page
        .iter()
        .find(|l| l.url == "https://e.com/imported")
        .expect("the imported link");
    assert_eq!(imported.forward_query, Some(true));
}

/// Two nodes creating one URL with dedupe at the same instant store it
/// once; batches inserting the same aliases in opposite orders on two
/// nodes queue rather than deadlock, and each alias is stored once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn nodes_racing_for_one_url_or_alias_are_served_in_turn() {
    let cluster = PgCluster::start("races");
    let config = config_for(&cluster, "races");
    let (a, b) = (open(&config).await, open(&config).await);
    let (a, b) = (std::sync::Arc::new(a), std::sync::Arc::new(b));
    for round in 0..10u64 {
        let gate = std::sync::Arc::new(tokio::sync::Barrier::new(8));
        let tasks: Vec<_> = (0..8u64)
            .map(|i| {
                let store = if i % 2 == 0 { a.clone() } else { b.clone() };
                let gate = gate.clone();
                tokio::spawn(async move {
                    let url = format!("https://e.com/same/{round}");
                    let mut new = new_link(1000 + round * 8 + i, None, &url, &[]);
                    (new.dedupe_hash, new.dedupe) = ([round as u8; 32], true);
                    gate.wait().await;
                    store.insert_links(vec![new], 0).await.unwrap()
                })
            })
            .collect();
        let mut made = 0;
        for t in tasks {
            if matches!(t.await.unwrap()[0], Inserted::New(_)) {
                made += 1;
            }
        }
        assert_eq!(made, 1, "round {round}: the URL was stored {made} times");
    }
    assert_eq!(a.count_links().await.unwrap(), 10);

    for round in 0..10u64 {
        let aliases: Vec<String> = (0..6).map(|i| format!("r{round}-{i}")).collect();
        let gate = std::sync::Arc::new(tokio::sync::Barrier::new(2));
        let tasks: Vec<_> = [(a.clone(), false), (b.clone(), true)]
            .into_iter()
            .enumerate()
            .map(|(n, (store, reversed))| {
                let mut names = aliases.clone();
                if reversed {
                    names.reverse();
                }
                let gate = gate.clone();
                tokio::spawn(async move {
                    let batch = names
                        .iter()
                        .enumerate()
                        .map(|(i, alias)| {
                            let id = 5000 + round * 100 + n as u64 * 10 + i as u64;
                            new_link(id, Some(alias), &format!("https://e.com/{alias}"), &[])
                        })
                        .collect();
                    gate.wait().await;
                    store.insert_links(batch, 0).await
                })
            })
            .collect();
        let mut stored = 0;
        for t in tasks {
            let out = t
                .await
                .unwrap()
                .unwrap_or_else(|e| panic!("round {round}: {e}"));
            stored += out.iter().filter(|o| matches!(o, Inserted::New(_))).count();
        }
        assert_eq!(stored, aliases.len(), "round {round}: each alias once");
    }
}

/// A batch whose second link cannot be stored (an id past PostgreSQL's
/// bigint) fails whole after the first link went into the `COPY`: nothing
/// is stored, and the connection goes back to the pool working.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bulk_write_that_fails_midway_stores_nothing() {
    let cluster = PgCluster::start("bulk-abort");
    let store = open(&config_for(&cluster, "bulk-abort")).await;
    let err = store
        .insert_links(
            vec![
                new_link(1, None, "https://e.com/1", &[]),
                new_link(u64::MAX, None, "https://e.com/2", &[]),
                new_link(3, None, "https://e.com/3", &[]),
            ],
            0,
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("past bigint"), "{err}");
    assert_eq!(store.count_links().await.unwrap(), 0);
    for i in 0..10 {
        let pair = vec![
            new_link(10 + 2 * i, None, "https://e.com/a", &[]),
            new_link(11 + 2 * i, None, "https://e.com/b", &[]),
        ];
        store.insert_links(pair, 0).await.unwrap();
    }
    assert_eq!(store.count_links().await.unwrap(), 20);
    assert!(store.find_link(CodeRef::Id(1)).await.unwrap().is_none());
}
