//! What every store promises about id recycling, checked through [`Store`]
//! alone on SQLite and on PostgreSQL (a private cluster): leases are
//! recorded; a range is purged only when every id in it is past the
//! cutoff (its links, expired or deleted, go, with a change logged per
//! id); purged is not available until released; claims go lowest first,
//! once each.

use super::{NewLink, RangeState, Store};
use crate::store::{CodeRef, Link};
use crate::timestamp::unix_now;

fn expiring(id: u64, expires_at: Option<i64>) -> NewLink {
    NewLink {
        link: Link {
            id,
            url: format!("https://e.com/{id}"),
            alias: id.is_multiple_of(2).then(|| format!("old-{id}")),
            expires_at,
            ..Link::default()
        },
        dedupe_hash: [id as u8; 32],
        dedupe: false,
        alias_targets: Vec::new(),
    }
}

async fn check_recycling(store: &Store) {
    let now = unix_now();
    let dead = store.lease_ids(1_000_000, 4, vec![]).await.unwrap();
    let kept = store.lease_ids(1_000_000, 4, vec![]).await.unwrap();
    assert_eq!(dead.end, kept.start);
    let links = vec![
        expiring(dead.start, Some(now - 10)),
        expiring(dead.start + 1, Some(now - 10)),
        expiring(dead.start + 2, None),
        expiring(kept.start, Some(now - 10)),
        expiring(kept.start + 1, None), // live
    ];
    store.insert_links(links, now).await.unwrap();
    // Deleted: its row goes, its deletion time stays.
    store.delete_link(dead.start + 2).await.unwrap().unwrap();
    let view = store.id_ranges(10).await.unwrap();
    let find = |start: u64| view.ranges.iter().find(|r| r.start == start).cloned();
    assert_eq!(find(dead.start).map(|r| r.state), Some(RangeState::Leased));
    assert!(find(dead.start).unwrap().leased_at >= now - 5);

    // Before the cutoff reaches the lease: nothing.
    let early = store.purge_recyclable_ids(now - 60, 100).await.unwrap();
    assert!(early.iter().all(|p| p.range != dead), "{early:?}");
    let before = store.changes_since(0).await.unwrap().0.seq;
    let purged = store.purge_recyclable_ids(now + 5, 100).await.unwrap();
    let mine: Vec<_> = purged.iter().filter(|p| p.range == dead).collect();
    assert_eq!(mine.len(), 1, "{purged:?}");
    assert_eq!(mine[0].links, 2);
    assert_eq!(
        mine[0].aliases,
        vec![(dead.start, format!("old-{}", dead.start))]
    );
    assert!(
        purged.iter().all(|p| p.range != kept),
        "a live link keeps its range"
    );
    assert_eq!(
        store.find_link(CodeRef::Id(dead.start)).await.unwrap(),
        None
    );
    assert!(store
        .find_link(CodeRef::Id(kept.start))
        .await
        .unwrap()
        .is_some());
    let (head, rows) = store.changes_since(before).await.unwrap();
    let rows = rows.unwrap();
    for id in dead.clone() {
        assert!(
            rows.iter()
                .any(|c| c.link_id == id && c.new_alias.is_none()),
            "{id}"
        );
    }
    assert!(head.seq >= before + 4);

    // Purged, not yet released: not handed out.
    assert_eq!(store.claim_recycled_ids(dead.start).await.unwrap(), None);
    let released = store.release_purged_ids(now + 5).await.unwrap();
    assert!(released.contains(&dead), "{released:?}");
    assert_eq!(
        store.claim_recycled_ids(dead.start).await.unwrap(),
        Some(dead.clone())
    );
    assert_eq!(store.claim_recycled_ids(dead.start).await.unwrap(), None);
    let view = store.id_ranges(1000).await.unwrap();
    let again = view.ranges.iter().find(|r| r.start == dead.start).unwrap();
    assert_eq!((again.state, again.reuses), (RangeState::Leased, 1));
    assert!(view.reused >= 1);
}

#[tokio::test]
async fn sqlite_keeps_the_recycling_contract() {
    let (_dir, sqlite) = crate::store::sqlite::tests::temp_store();
    let store = Store::from(sqlite);
    check_recycling(&store).await;
    store.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_keeps_the_recycling_contract() {
    let (_cluster, store) = super::contract::postgres_store("contract-recycle").await;
    check_recycling(&store).await;
    store.close();
}
