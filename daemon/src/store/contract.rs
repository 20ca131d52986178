//! What every implementation of the store interface promises, checked
//! through [`Store`] alone: [`check_all`] runs against a fresh, empty store
//! of each implementation, SQLite and PostgreSQL (a private cluster).

use shortlink_core::device::DeviceClass;
use shortlink_core::ipc::{BatchId, ClickBatch, ClickCount};

use super::{Inserted, LinkEdit, NewLink, Store, Updated};
use crate::store::{CodeRef, Link, LinkError};

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
            Ok(new)
        }),
        alias_targets: targets.iter().map(|t| t.to_string()).collect(),
        check: Box::new(|_, _| None),
    }
}

/// Inserts: each item refused alone, in order, with the first refused
/// alias target named by its index; dedupe answers the live link.
async fn inserts(store: &Store) {
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
    let mut again = new_link(6, None, "https://e.com/1", &[]);
    (again.dedupe_hash, again.dedupe) = ([9; 32], true);
    let out = store.insert_links(vec![again], 0).await.unwrap();
    assert!(matches!(&out[0], Inserted::Existing(l) if l.id == 1));
    assert_eq!(store.count_links().await.unwrap(), 2);
    let found = store
        .find_links(vec![
            CodeRef::Id(5),
            CodeRef::Alias("taken".into()),
            CodeRef::Id(2),
        ])
        .await
        .unwrap();
    let ids: Vec<Option<u64>> = found.iter().map(|l| l.as_ref().map(|l| l.id)).collect();
    assert_eq!(ids, [Some(5), Some(1), None]);
    // A burst longer than one statement's worth of codes, ids and aliases
    // mixed, some repeated, each answered in its place.
    let codes: Vec<CodeRef> = (0..45u64)
        .map(|i| match i % 5 {
            0 => CodeRef::Alias(if i % 10 == 0 { "taken" } else { "nope" }.into()),
            _ => CodeRef::Id(i % 7),
        })
        .collect();
    let want: Vec<Option<u64>> = codes
        .iter()
        .map(|c| match c {
            CodeRef::Alias(a) => (a == "taken").then_some(1),
            CodeRef::Id(id) => [1, 5].contains(id).then_some(*id),
            CodeRef::Invalid => None,
        })
        .collect();
    let found = store.find_links(codes.clone()).await.unwrap();
    let ids: Vec<Option<u64>> = found.iter().map(|l| l.as_ref().map(|l| l.id)).collect();
    assert_eq!(ids, want);
    // Read on the caller's thread where the store can (SQLite's inline
    // readers; `None` sends the caller to `find_links`): the same links.
    if let Some(found) = store.find_links_now(&codes) {
        let ids: Vec<Option<u64>> = found.iter().map(|l| l.as_ref().map(|l| l.id)).collect();
        assert_eq!(ids, want);
    }
}

/// Edits: refusals store nothing; a done edit answers both versions.
async fn edits(store: &Store) {
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
    match store.update_link(5, edit(Some("new"), &[])).await.unwrap() {
        Updated::Done { old, new } => {
            assert_eq!((old.alias, new.alias), (None, Some("new".into())))
        }
        other => panic!("{other:?}"),
    }
    let by_alias = store.find_link(CodeRef::Alias("new".into())).await.unwrap();
    assert_eq!(by_alias.map(|l| l.id), Some(5));
}

/// The change log carries every alias change in order; a delete is
/// logged too.
async fn changes(store: &Store) {
    let start = store.changes_at_open();
    let (head, rows) = store.changes_since(start.seq).await.unwrap();
    let rows = rows.unwrap();
    // Link 1 with its alias, then link 5 given one.
    let logged: Vec<(u64, Option<String>)> = rows
        .iter()
        .map(|c| (c.link_id, c.new_alias.clone()))
        .collect();
    assert_eq!(logged, [(1, Some("taken".into())), (5, Some("new".into()))]);
    let deleted = store.delete_link(5).await.unwrap().unwrap();
    assert_eq!(deleted.alias.as_deref(), Some("new"));
    assert!(store.delete_link(5).await.unwrap().is_none());
    let resume = store.resume(Some(head)).await.unwrap();
    assert_eq!(resume.aliases, ["taken"]);
    let after = resume.changes.unwrap();
    assert_eq!(after.len(), 1);
    assert_eq!(
        (after[0].link_id, after[0].old_alias.as_deref()),
        (5, Some("new"))
    );
    assert_eq!(resume.head.seq, head.seq + 1);
}

/// Leases never overlap; clicks count once per batch id, visible before
/// and after the fold.
async fn ids_and_clicks(store: &Store) {
    let a = store.lease_ids(100, 10, vec![]).await.unwrap();
    let b = store.lease_ids(100, 10, vec![]).await.unwrap();
    assert!(a.start >= 100 && a.end <= b.start, "{a:?} {b:?}");
    store.reserve_ids_through(500).await.unwrap();
    assert!(store.lease_ids(100, 10, vec![]).await.unwrap().start > 500);
    let batch = ClickBatch {
        batch_id: BatchId([1; 16]),
        clicks: vec![ClickCount {
            link_id: 1,
            hour: 10,
            device: DeviceClass::Desktop,
            bot: false,
            referrer: None,
            count: 3,
            country: shortlink_core::country::Country::parse("DE").unwrap(),
            variant: 0,
        }],
    };
    let counted = store
        .append_clicks(vec![batch.clone(), batch.clone()], 36_000)
        .await
        .unwrap();
    assert_eq!(counted, [true, false]);
    let clicks = |l: Option<Link>| l.map(|l| l.clicks);
    assert_eq!(
        clicks(store.find_link(CodeRef::Id(1)).await.unwrap()),
        Some(3)
    );
    store.fold_clicks().await.unwrap();
    assert_eq!(
        store.append_clicks(vec![batch], 36_000).await.unwrap(),
        [false]
    );
    assert_eq!(
        clicks(store.find_link(CodeRef::Id(1)).await.unwrap()),
        Some(3)
    );
    assert_eq!(store.link_stats(1, 0, 20, false).await.unwrap().total, 3);
}

/// Takedowns: a host covers its subdomains only; a creator its own
/// links; each is taken down (a state apart from the owner's switch) and
/// logged for the edge; an undo lifts what no other takedown in force
/// covers and leaves the owner's switch as it was.
async fn takedowns(store: &Store) {
    use super::{Matcher, NewTakedown, Undone};
    let link = |id: u64, alias: Option<&str>, url: &str, by: &str, off: bool| {
        let mut n = new_link(id, alias, url, &[]);
        n.link.created_by = Some(by.into());
        n.link.disabled = off;
        n
    };
    store
        .insert_links(
            vec![
                link(100, None, "https://evil.com/a", "key:1", false),
                link(101, Some("ev"), "https://a.Evil.com/b", "key:2", false),
                link(102, None, "https://notevil.com/?u=evil.com", "key:1", false),
                link(103, None, "https://evil.com/c", "key:2", true),
            ],
            0,
        )
        .await
        .unwrap();
    let before = store.changes_since(0).await.unwrap().0;
    let host = |by: &str| NewTakedown {
        kind: "host",
        selector: "evil.com".into(),
        reason: "phishing".into(),
        by: by.into(),
        at: 50,
        matcher: Matcher::Urls {
            contains: Some("evil.com".into()),
            test: std::sync::Arc::new(|u: &str| {
                url::Url::parse(u).is_ok_and(|u| {
                    u.host_str()
                        .is_some_and(|h| h == "evil.com" || h.ends_with(".evil.com"))
                })
            }),
        },
        switch_off: true,
        once: false,
        unless_first: false,
    };
    // Taken down (only an undo lifts it), and switched off by its owner.
    let down = |id: u64| async move {
        store
            .find_link(CodeRef::Id(id))
            .await
            .unwrap()
            .unwrap()
            .taken_down
    };
    let owner_off = |id: u64| async move {
        store
            .find_link(CodeRef::Id(id))
            .await
            .unwrap()
            .unwrap()
            .disabled
    };
    let t1 = store.take_down(host("user:alice")).await.unwrap().unwrap();
    assert_eq!((t1.record.matched, t1.record.disabled), (3, 3));
    assert_eq!(t1.record.created_by, "user:alice");
    let mut changed = t1.changed.clone();
    changed.sort();
    assert_eq!(
        changed,
        [(100, None), (101, Some("ev".into())), (103, None)]
    );
    assert!(down(100).await && down(101).await && !down(102).await && down(103).await);
    assert!(
        !owner_off(100).await && owner_off(103).await,
        "the owner's switch stays"
    );
    // The switches are in the change log, under the alias they keep.
    let (_, rows) = store.changes_since(before.seq).await.unwrap();
    let mut logged: Vec<(u64, Option<String>, Option<String>)> = rows
        .unwrap()
        .into_iter()
        .map(|c| (c.link_id, c.old_alias, c.new_alias))
        .collect();
    logged.sort();
    let ev = Some("ev".to_string());
    assert_eq!(
        logged,
        [(100, None, None), (101, ev.clone(), ev), (103, None, None)]
    );

    let t2 = store
        .take_down(NewTakedown {
            kind: "creator",
            selector: "key:1".into(),
            matcher: Matcher::Creator("key:1".into()),
            ..host("cli")
        })
        .await
        .unwrap()
        .unwrap();
    assert_eq!((t2.record.matched, t2.record.disabled), (2, 1));
    assert!(down(102).await);

    // 100 is still covered by t2; 101 and 103 by nothing any more.
    let Undone::Done { record, changed } = store
        .undo_takedown(t1.record.id, "user:bob".into(), 60)
        .await
        .unwrap()
    else {
        panic!("undo refused")
    };
    let mut changed = changed;
    changed.sort();
    assert_eq!(changed, [(101, Some("ev".into())), (103, None)]);
    assert_eq!(record.restored, Some(2));
    assert_eq!(record.undone_by.as_deref(), Some("user:bob"));
    assert!(down(100).await && !down(101).await && !down(103).await);
    assert!(owner_off(103).await, "the undo leaves the owner's switch");
    assert!(matches!(
        store
            .undo_takedown(t1.record.id, "cli".into(), 61)
            .await
            .unwrap(),
        Undone::Already(_)
    ));
    // With t2 undone nothing covers 100 any more.
    let Undone::Done { changed, .. } = store
        .undo_takedown(t2.record.id, "cli".into(), 62)
        .await
        .unwrap()
    else {
        panic!("undo refused")
    };
    let mut changed: Vec<u64> = changed.into_iter().map(|(id, _)| id).collect();
    changed.sort();
    assert_eq!(changed, [100, 102]);
    assert!(!down(100).await && !down(102).await && owner_off(103).await);
    assert!(matches!(
        store.undo_takedown(999, "cli".into(), 63).await.unwrap(),
        Undone::NotFound
    ));
    let list = store.takedowns(10).await.unwrap();
    assert_eq!(
        list.iter().map(|t| t.id).collect::<Vec<_>>(),
        [t2.record.id, t1.record.id]
    );
    assert_eq!(store.takedown(t1.record.id).await.unwrap(), Some(record));

    // `once`: the same selector twice is applied once; `unless_first`
    // records nothing for lists that follow no others.
    let config = |selector: &str, unless_first| NewTakedown {
        kind: "config",
        selector: selector.into(),
        once: true,
        unless_first,
        ..host("config")
    };
    assert!(store
        .take_down(config("empty", true))
        .await
        .unwrap()
        .is_none());
    assert!(store.take_down(config("a", false)).await.unwrap().is_some());
    assert!(store.take_down(config("a", false)).await.unwrap().is_none());
    assert!(store
        .take_down(config("empty", true))
        .await
        .unwrap()
        .is_some());
}

/// The link checker's store: candidates are the links on, a claim is
/// exclusive until it runs out or the probe is recorded, failures count in
/// a row.
async fn checks(store: &Store) {
    use super::CheckResult;
    let mut off = new_link(201, None, "https://e.com/off", &[]);
    off.link.disabled = true;
    let mut old = new_link(202, None, "https://e.com/old", &[]);
    old.link.expires_at = Some(10);
    store
        .insert_links(
            vec![new_link(200, None, "https://e.com/on", &[]), off, old],
            0,
        )
        .await
        .unwrap();
    let due = store.check_candidates(199, 10, 100, 50).await.unwrap();
    let ids: Vec<u64> = due.iter().map(|t| t.link_id).collect();
    assert_eq!(ids, [200]);
    assert_eq!(due[0].url, "https://e.com/on");
    assert_eq!(
        store.claim_checks(vec![200], 100, 50, 160).await.unwrap(),
        [200]
    );
    assert!(
        store
            .check_candidates(199, 10, 100, 50)
            .await
            .unwrap()
            .is_empty(),
        "claimed: not due"
    );
    assert!(
        store
            .claim_checks(vec![200], 100, 50, 160)
            .await
            .unwrap()
            .is_empty(),
        "claimed"
    );
    let probe = |at: i64, status: Option<u16>, failed: Option<bool>| CheckResult {
        link_id: 200,
        checked_at: at,
        status,
        error: failed.map(|f| if f { "404".into() } else { String::new() }),
        failed,
    };
    // Two failures in a row mark the link broken (fallback_after 2), in
    // the change log; a skip changes nothing; a healthy probe unmarks it.
    let record = |at, status, failed| store.record_check(probe(at, status, failed), 2);
    let r = record(100, Some(404), Some(true)).await.unwrap();
    assert_eq!((r.failures, r.switched), (1, None));
    // Checked at 100: not due again for a sweep that wants "before 100".
    assert!(store
        .claim_checks(vec![200], 170, 100, 230)
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        store.claim_checks(vec![200], 170, 101, 230).await.unwrap(),
        [200]
    );
    let (before, _) = store.changes_since(0).await.unwrap();
    let r = record(170, None, Some(true)).await.unwrap();
    assert_eq!((r.failures, r.switched), (2, Some((200, None))));
    let broken = |id| async move {
        store
            .find_link(CodeRef::Id(id))
            .await
            .unwrap()
            .unwrap()
            .broken
    };
    assert!(broken(200).await);
    let (_, rows) = store.changes_since(before.seq).await.unwrap();
    assert_eq!(
        rows.unwrap().iter().map(|c| c.link_id).collect::<Vec<_>>(),
        [200]
    );
    let r = record(171, None, None).await.unwrap();
    assert_eq!(
        (r.failures, r.switched),
        (2, None),
        "a skip keeps the count"
    );
    assert!(broken(200).await);
    assert_eq!(store.count_failing(2).await.unwrap(), 1);
    let failing = store.failing_checks(2, 0, 10).await.unwrap();
    assert_eq!(failing.len(), 1);
    assert_eq!((failing[0].link_id, failing[0].failures), (200, 2));
    assert_eq!(failing[0].url.as_deref(), Some("https://e.com/on"));
    assert!(store.failing_checks(3, 0, 10).await.unwrap().is_empty());
    let r = record(172, Some(200), Some(false)).await.unwrap();
    assert_eq!((r.failures, r.switched), (0, Some((200, None))));
    assert!(!broken(200).await);
    assert_eq!(store.count_failing(1).await.unwrap(), 0);
    let last = store.link_checks(vec![200, 201]).await.unwrap();
    assert_eq!(last.len(), 1, "201 was never probed");
    assert_eq!((last[0].status, last[0].checked_at), (Some(200), Some(172)));
}

/// Every check, in order, on a fresh, empty store.
pub async fn check_all(store: &Store) {
    inserts(store).await;
    edits(store).await;
    changes(store).await;
    ids_and_clicks(store).await;
    takedowns(store).await;
    checks(store).await;
}

#[tokio::test]
async fn sqlite_keeps_the_contract() {
    let (_dir, sqlite) = crate::store::sqlite::tests::temp_store();
    let store = Store::from(sqlite);
    check_all(&store).await;
    store.close();
}

/// A fresh store on a private PostgreSQL cluster named `name` (the
/// cluster goes when the returned guard drops).
pub async fn postgres_store(name: &str) -> (testpg::PgCluster, Store) {
    let (cluster, pg) = crate::store::postgres::backend::tests::pg_store(name).await;
    (cluster, Store::new(std::sync::Arc::new(pg)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_keeps_the_contract() {
    let (_cluster, store) = postgres_store("contract").await;
    check_all(&store).await;
    store.close();
}
