//! What every implementation of the store interface promises, checked
//! through [`Store`] alone: [`check_all`] runs against a fresh, empty store
//! of each implementation, SQLite and PostgreSQL (a private cluster).

use shortlink_core::device::DeviceClass;
use shortlink_core::ipc::{BatchId, ClickBatch, ClickCount};

use super::{Inserted, LinkEdit, NewLink, Store, Updated};
use crate::codes::CodeRef;
use crate::links::LinkError;
use crate::store::links::Link;

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

/// Every check, in order, on a fresh, empty store.
pub async fn check_all(store: &Store) {
    inserts(store).await;
    edits(store).await;
    changes(store).await;
    ids_and_clicks(store).await;
}

#[tokio::test]
async fn sqlite_keeps_the_contract() {
    let (_dir, sqlite) = crate::store::tests::temp_store();
    let store = Store::from(sqlite);
    check_all(&store).await;
    store.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_keeps_the_contract() {
    let cluster = testpg::PgCluster::start("contract");
    let url = cluster.create_db("contract");
    let config = crate::config::Config {
        database: Some(crate::config::DatabaseUrl::parse(&url).unwrap()),
        database_password_file: Some(cluster.password_file()),
        ..crate::config::Config::default()
    };
    let key = shortlink_core::DeploymentKey::from_bytes([7; 32]);
    let pg = crate::pg::store::PgStore::open(&config, &key)
        .await
        .unwrap();
    let store = Store::new(std::sync::Arc::new(pg));
    check_all(&store).await;
    store.close();
}
