//! `PgStore`'s links, imports and id leases on a real PostgreSQL, with the
//! answers the SQLite store gives (db/contract.rs, store/links/list.rs).

mod pg_common;

use pg_common::config_for;
use shortlink_core::DeploymentKey;
use shortlinkd::codes::CodeRef;
use shortlinkd::config::Config;
use shortlinkd::db::{
    IdStore, ImportLink, ImportStore, Imported, Inserted, LinkEdit, LinkStore, NewLink, Updated,
};
use shortlinkd::links::LinkError;
use shortlinkd::pg::store::PgStore;
use shortlinkd::store::links::{Link, LinkState, ListQuery, ListSort};
use testpg::PgCluster;

async fn open(config: &Config) -> PgStore {
    PgStore::open(config, &DeploymentKey::from_bytes([7; 32]))
        .await
        .unwrap()
}

fn new_link(id: u64, alias: Option<&str>, url: &str, targets: &[&str]) -> NewLink {
    NewLink {
        link: Link {
            id,
            alias: alias.map(Into::into),
            url: url.into(),
            ..Link::default()
        },
        dedupe_hash: [id as u8; 32],
        dedupe: false,
        alias_targets: targets.iter().map(|t| t.to_string()).collect(),
    }
}

fn edit(alias: Option<&str>, targets: &[&str]) -> LinkEdit {
    let alias = alias.map(String::from);
    LinkEdit {
        apply: Box::new(move |old: &Link| {
            let mut new = old.clone();
            new.alias = alias;
            new.updated_at = old.updated_at + 1;
            Ok(new)
        }),
        alias_targets: targets.iter().map(|t| t.to_string()).collect(),
        check: Box::new(|_, _| None),
    }
}

/// The change log as `link_id|old_alias|new_alias` rows, in seq order.
fn change_rows(cluster: &PgCluster, db: &str) -> Vec<String> {
    let out = cluster.psql(
        db,
        "SELECT string_agg(concat_ws('|', link_id, coalesce(old_alias, '-'), \
         coalesce(new_alias, '-')), ',' ORDER BY seq) FROM edge_changes",
    );
    out.split(',')
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

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
        .aliases_taken(vec!["taken".into(), "six".into(), "nope".into()])
        .await
        .unwrap();
    assert_eq!(taken.len(), 1);
    assert_eq!(taken["taken"], "https://e.com/1");
}

/// A link for the list test: created at `id * 10`.
fn listed(id: u64, expires_at: Option<i64>, tags: &[&str]) -> NewLink {
    let mut n = new_link(id, None, &format!("https://example.com/{id}"), &[]);
    n.link.created_at = id as i64 * 10;
    n.link.expires_at = expires_at;
    n.link.tags = tags.iter().map(|t| t.to_string()).collect();
    n
}

/// Every page of `query`, following each page's `next` until there is
/// none; every page's total is the same.
async fn pages(store: &PgStore, mut query: ListQuery) -> (Vec<Vec<u64>>, u64) {
    let mut out = Vec::new();
    let mut totals = Vec::new();
    loop {
        let page = store.list_links(query.clone()).await.unwrap();
        totals.push(page.total);
        if !page.links.is_empty() {
            out.push(page.links.iter().map(|l| l.id).collect());
        }
        match page.next {
            Some(next) => query.after = Some(next),
            None => break,
        }
    }
    totals.dedup();
    assert_eq!(totals.len(), 1, "{totals:?}");
    (out, totals[0])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_filter_sort_and_page_like_sqlite() {
    let cluster = PgCluster::start("list");
    let store = open(&config_for(&cluster, "list")).await;
    let mut off = listed(4, None, &[]);
    off.link.disabled = true;
    let mut used = listed(5, None, &["c"]);
    used.link.max_visits = Some(3);
    used.link.alias = Some("five-x".into());
    let out = store
        .insert_links(
            vec![
                listed(1, Some(300), &["a"]),
                listed(2, None, &["a", "b"]),
                listed(3, Some(100), &["b"]),
                off,
                used,
            ],
            0,
        )
        .await
        .unwrap();
    assert!(out.iter().all(|o| matches!(o, Inserted::New(_))));
    cluster.psql(
        "list",
        "UPDATE links SET clicks = CASE id WHEN 1 THEN 5 WHEN 2 THEN 9 WHEN 3 THEN 5 \
         WHEN 5 THEN 3 ELSE 0 END",
    );
    let q = |sort, ascending| ListQuery {
        limit: 2,
        sort,
        ascending,
        now: 200,
        ..Default::default()
    };
    for (sort, ascending, want) in [
        (
            ListSort::Created,
            false,
            vec![vec![5, 4], vec![3, 2], vec![1]],
        ),
        (
            ListSort::Created,
            true,
            vec![vec![1, 2], vec![3, 4], vec![5]],
        ),
        (
            ListSort::Clicks,
            false,
            vec![vec![2, 3], vec![1, 5], vec![4]],
        ),
        (
            ListSort::Clicks,
            true,
            vec![vec![4, 5], vec![1, 3], vec![2]],
        ),
        (
            ListSort::Expires,
            true,
            vec![vec![3, 1], vec![2, 4], vec![5]],
        ),
        (
            ListSort::Expires,
            false,
            vec![vec![5, 4], vec![2, 1], vec![3]],
        ),
    ] {
        let got = pages(&store, q(sort, ascending)).await;
        assert_eq!(got, (want, 5), "{sort:?} ascending {ascending}");
    }
    // A page that ends the list exactly has a `next`, and the page after
    // it is empty with no `next`.
    let mut query = q(ListSort::Created, false);
    query.limit = 5;
    let page = store.list_links(query.clone()).await.unwrap();
    assert_eq!(page.next, Some((1, 1)));
    query.after = page.next;
    let last = store.list_links(query).await.unwrap();
    assert!(last.links.is_empty() && last.next.is_none() && last.total == 5);

    let matching = |f: &dyn Fn(&mut ListQuery)| {
        let mut query = q(ListSort::Created, false);
        query.limit = 100;
        f(&mut query);
        query
    };
    let tags = |t: &[&str]| t.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let cases: Vec<(ListQuery, Vec<u64>)> = vec![
        (matching(&|q| q.tags = tags(&["a", "b"])), vec![3, 2, 1]),
        (
            matching(&|q| {
                q.tags = tags(&["a", "b"]);
                q.all_tags = true
            }),
            vec![2],
        ),
        (
            matching(&|q| {
                q.tags = tags(&["b", "b"]);
                q.all_tags = true
            }),
            vec![3, 2],
        ),
        (matching(&|q| q.state = Some(LinkState::Active)), vec![2, 1]),
        (matching(&|q| q.state = Some(LinkState::Disabled)), vec![4]),
        (matching(&|q| q.state = Some(LinkState::Expired)), vec![3]),
        (matching(&|q| q.state = Some(LinkState::Exhausted)), vec![5]),
        (
            matching(&|q| {
                q.created_after = Some(20);
                q.created_before = Some(40)
            }),
            vec![3, 2],
        ),
        // A URL substring, an alias substring (case-sensitive), a code.
        (matching(&|q| q.q = Some("ple.com/3".into())), vec![3]),
        (matching(&|q| q.q = Some("ve-".into())), vec![5]),
        (matching(&|q| q.q = Some("VE-".into())), vec![]),
        (
            matching(&|q| {
                q.q = Some("zz".into());
                q.code_id = Some(4)
            }),
            vec![4],
        ),
    ];
    for (query, want) in cases {
        let page = store.list_links(query.clone()).await.unwrap();
        let got: Vec<u64> = page.links.iter().map(|l| l.id).collect();
        assert_eq!((&got, page.total), (&want, want.len() as u64), "{query:?}");
        let exported = store.links_page(query).await.unwrap();
        assert_eq!(exported.iter().map(|l| l.id).collect::<Vec<_>>(), want);
    }
    let mut states = store.count_links_by_state(200).await.unwrap();
    states.sort();
    let expected = [
        ("active", 2),
        ("disabled", 1),
        ("exhausted", 1),
        ("expired", 1),
    ];
    let expected: Vec<(String, u64)> = expected.iter().map(|(s, n)| (s.to_string(), *n)).collect();
    assert_eq!(states, expected);
    // The stored row comes back whole.
    let one = store.find_link(CodeRef::Id(5)).await.unwrap().unwrap();
    assert_eq!(
        (one.alias.as_deref(), one.max_visits, one.clicks, one.tags),
        (Some("five-x"), Some(3), 3, vec!["c".to_string()])
    );
}

fn import_row(id: u64, keep: Option<u64>, alias: Option<&str>, url: &str) -> ImportLink {
    let mut new = new_link(id, alias, url, &[]);
    new.dedupe_hash = [0; 32];
    url.bytes()
        .zip(new.dedupe_hash.iter_mut())
        .for_each(|(b, h)| *h = b);
    ImportLink {
        new,
        keep_id: keep,
        clicks: Some((7, 2)),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn imports_keep_free_ids_and_count_what_is_there() {
    let cluster = PgCluster::start("import");
    let store = open(&config_for(&cluster, "import")).await;
    store
        .insert_links(vec![new_link(50, None, "https://e.com/other", &[])], 0)
        .await
        .unwrap();
    let rows = || {
        vec![
            // Keeps 500; its code may be cached as missing: logged.
            import_row(1001, Some(500), None, "https://e.com/kept"),
            // 50 is another link's: a new id.
            import_row(1002, Some(50), None, "https://e.com/moved"),
            import_row(1003, None, Some("al"), "https://e.com/aliased"),
            // The same URL twice in one file: two links.
            import_row(1004, None, None, "https://e.com/twice"),
            import_row(1005, None, None, "https://e.com/twice"),
        ]
    };
    let first = store.import_links(rows(), 0).await.unwrap();
    let written: Vec<(u64, bool, bool)> = first
        .iter()
        .map(|o| match o {
            Imported::Written {
                outcome: Inserted::New(l),
                kept,
                moved,
            } => (l.id, *kept, *moved),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        written,
        [
            (500, true, false),
            (1002, false, true),
            (1003, false, false),
            (1004, false, false),
            (1005, false, false)
        ]
    );
    let kept = store.find_link(CodeRef::Id(500)).await.unwrap().unwrap();
    assert_eq!((kept.clicks, kept.bot_clicks), (7, 2));
    assert_eq!(
        change_rows(&cluster, "import"),
        ["500|-|-", "1003|-|al"],
        "the kept code and the alias are logged"
    );
    // The allocator moved past the kept id in the import's transaction.
    assert!(store.lease_ids(1, 10).await.unwrap().start > 500);

    // Again: everything is there already, nothing is written.
    let again = store.import_links(rows(), 0).await.unwrap();
    assert!(
        again.iter().all(|o| matches!(o, Imported::Present)),
        "{again:?}"
    );
    assert_eq!(store.count_links().await.unwrap(), 6);
    assert_eq!(change_rows(&cluster, "import").len(), 2);
    // An alias taken by another URL is refused like a create.
    let clash = store
        .import_links(
            vec![import_row(1010, None, Some("al"), "https://e.com/x")],
            0,
        )
        .await
        .unwrap();
    assert!(matches!(
        &clash[0],
        Imported::Written { outcome: Inserted::AliasTaken(a), .. } if a == "al"
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn leases_from_two_stores_never_overlap() {
    let cluster = PgCluster::start("leases");
    let config = config_for(&cluster, "leases");
    let (a, b) = (open(&config).await, open(&config).await);
    let (a, b) = (std::sync::Arc::new(a), std::sync::Arc::new(b));
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let store = if i % 2 == 0 { a.clone() } else { b.clone() };
            tokio::spawn(async move {
                let mut got = Vec::new();
                for _ in 0..10 {
                    got.push(store.lease_ids(100, 7).await.unwrap());
                }
                got
            })
        })
        .collect();
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    all.sort_by_key(|r| r.start);
    assert_eq!(all.len(), 80);
    assert_eq!(all[0].start, 100);
    for w in all.windows(2) {
        assert_eq!(w[0].end, w[1].start, "{:?} then {:?}", w[0], w[1]);
    }
    b.reserve_ids_through(5000).await.unwrap();
    assert_eq!(a.lease_ids(100, 10).await.unwrap(), 5001..5011);
    // Never back.
    a.reserve_ids_through(10).await.unwrap();
    assert_eq!(b.lease_ids(100, 1).await.unwrap(), 5011..5012);
    let err = a.lease_ids(100, 0).await.unwrap_err().to_string();
    assert!(err.contains("at least one id"), "{err}");
}

/// Each kind of write wakes a listening follower at once: `NOTIFY` is sent
/// after the commit (the follower's poll is far longer than the test).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_wake_a_listening_follower_after_their_commit() {
    use shortlinkd::pg::follow::{follow, FollowOptions, Followed};
    use std::time::Duration;

    let cluster = PgCluster::start("wake");
    let store = open(&config_for(&cluster, "wake")).await;
    let (tx, mut rx) = tokio::sync::mpsc::channel(16);
    let stop = tokio_util::sync::CancellationToken::new();
    let options = FollowOptions {
        poll: Duration::from_secs(600),
        listen: true,
    };
    let follower = tokio::spawn(follow(
        store.pg().clone(),
        shortlinkd::pg::changes::LogPosition::default(),
        options,
        tx,
        stop.clone(),
    ));
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
