//! The edge's events per kind of change, the push of logged and followed
//! changes, and replay order.

use std::sync::Arc;

use shortlink_core::DeploymentKey;

use super::*;
use crate::store::sqlite::changes;
use crate::store::sqlite::tests::temp_store;

fn link(id: u64, alias: Option<&str>) -> Link {
    Link {
        id,
        alias: alias.map(Into::into),
        url: "https://example.com/".into(),
        ..Link::default()
    }
}

fn inv(code: &str) -> Event {
    Event::Invalidate { code: code.into() }
}

/// The events are the ones each path built by hand before, in the same
/// order.
#[test]
fn events_per_kind_of_change() {
    let codec = Codec::new(&DeploymentKey::from_bytes([5; 32]));
    let ((_dir, sqlite), hub) = (temp_store(), EventHub::default());
    let store = Store::from(sqlite.clone());
    let edge = Edge::new(&codec, &store, &hub);
    let code = |id| codec.encode(id).as_str().to_string();
    let (plain, aliased, renamed) = (link(7, None), link(7, Some("a")), link(7, Some("b")));

    // Created: a new generated code cannot be cached at the edge.
    assert!(edge
        .events(&[LinkChange::new(None, Some(&plain))])
        .is_empty());
    assert_eq!(
        edge.events(&[LinkChange::new(None, Some(&aliased))]),
        vec![Event::Aliases {
            aliases: vec!["a".into()]
        },]
    );
    // Edited, alias kept.
    assert_eq!(
        edge.events(&[LinkChange::new(Some(&aliased), Some(&aliased))]),
        vec![inv(&code(7)), inv("a")]
    );
    // Edited, alias renamed.
    assert_eq!(
        edge.events(&[LinkChange::new(Some(&aliased), Some(&renamed))]),
        vec![
            inv(&code(7)),
            inv("a"),
            Event::AliasesRemoved {
                aliases: vec!["a".into()]
            },
            Event::Aliases {
                aliases: vec!["b".into()]
            },
        ]
    );
    // Edited, alias removed / added.
    assert_eq!(
        edge.events(&[LinkChange::new(Some(&aliased), Some(&plain))]),
        vec![
            inv(&code(7)),
            inv("a"),
            Event::AliasesRemoved {
                aliases: vec!["a".into()]
            },
        ]
    );
    assert_eq!(
        edge.events(&[LinkChange::new(Some(&plain), Some(&aliased))]),
        vec![
            inv(&code(7)),
            Event::Aliases {
                aliases: vec!["a".into()]
            },
        ]
    );
    // Deleted.
    assert_eq!(
        edge.events(&[LinkChange::new(Some(&aliased), None)]),
        vec![
            inv(&code(7)),
            inv("a"),
            Event::AliasesRemoved {
                aliases: vec!["a".into()]
            },
        ]
    );
    // A batch of creates: one alias event for all.
    let (x, y) = (link(8, Some("x")), link(9, Some("y")));
    assert_eq!(
        edge.events(&[
            LinkChange::new(None, Some(&x)),
            LinkChange::new(None, Some(&plain)),
            LinkChange::new(None, Some(&y)),
        ]),
        vec![Event::Aliases {
            aliases: vec!["x".into(), "y".into()]
        },]
    );
    // A fold: every link purged under its codes, nothing else.
    assert_eq!(
        edge.events(&[
            LinkChange::in_place(8, Some("x")),
            LinkChange::in_place(9, None)
        ]),
        vec![inv(&code(8)), inv("x"), inv(&code(9))]
    );
}

#[tokio::test]
async fn a_change_drops_the_cached_copy_and_reaches_subscribers_with_its_position() {
    let codec = Codec::new(&DeploymentKey::from_bytes([5; 32]));
    let ((_dir, sqlite), hub) = (temp_store(), EventHub::default());
    let store = Store::from(sqlite.clone());
    let edge = Edge::new(&codec, &store, &hub);
    let old = link(3, Some("old"));
    sqlite
        .write({
            let old = old.clone();
            move |c| crate::store::sqlite::links::insert(c, &old, None)
        })
        .await
        .unwrap();
    let deleted = sqlite
        .write(|c| crate::store::sqlite::links::delete(c, 3))
        .await
        .unwrap()
        .unwrap();
    store.cache().put(Arc::new(old.clone()));
    let (_id, mut rx) = hub.subscribe();
    let reader = tokio::spawn(async move {
        let msg = rx.recv().await.unwrap();
        msg.ack.unwrap().send(()).unwrap();
        (msg.frames, msg.seq, rx)
    });
    edge.link_changed(Some(&deleted), None).await;
    assert!(store.cache().get(3).is_none());
    assert_eq!(store.cache().alias_id("old"), None);
    let (frames, seq, mut rx) = reader.await.unwrap();
    // The insert with its alias and the delete (the store was opened
    // empty, so the feed starts at 0) are pushed in log order, then the
    // position.
    let head = sqlite.read(changes::head).await.unwrap();
    assert_eq!((seq, head.seq), (2, 2));
    let rows = sqlite
        .read(move |c| changes::between(c, 0, 2))
        .await
        .unwrap()
        .unwrap();
    let mut want = edge.replay(&rows);
    want.push(Event::Position(head));
    assert_eq!(frames, crate::events::encode_events(want));
    // A link created without an alias is neither logged nor pushed.
    assert!(!LinkChange::new(None, Some(&link(4, None))).is_logged());
    edge.link_changed(None, Some(&link(4, None))).await;
    assert!(rx.try_recv().is_err(), "nothing was pushed");
    assert_eq!(sqlite.read(changes::head).await.unwrap().seq, 2);
}

/// Changes a follower read from a shared log (other nodes' writes):
/// the cached copies go, the ones not pushed yet reach the workers with
/// their position, ones already pushed are not sent again; a resync
/// clears the cache and cuts the workers off.
#[tokio::test]
async fn followed_changes_drop_cached_links_and_reach_workers_once() {
    let codec = Codec::new(&DeploymentKey::from_bytes([5; 32]));
    let ((_dir, sqlite), hub) = (temp_store(), EventHub::default());
    let store = Store::from(sqlite.clone());
    let edge = Edge::new(&codec, &store, &hub);
    let row = |seq, id, old: Option<&str>, new: Option<&str>| Change {
        seq,
        link_id: id,
        old_alias: old.map(Into::into),
        new_alias: new.map(Into::into),
    };
    let rows = [row(1, 3, Some("a"), Some("b")), row(2, 4, None, None)];
    store.cache().put(Arc::new(link(3, Some("a"))));
    store.cache().put(Arc::new(link(4, None)));
    let (_id, mut rx) = hub.subscribe();
    let reader = tokio::spawn(async move {
        let msg = rx.recv().await.unwrap();
        msg.ack.unwrap().send(()).unwrap();
        (msg.frames, msg.seq, rx)
    });
    edge.followed(&rows).await;
    assert!(store.cache().get(3).is_none() && store.cache().get(4).is_none());
    assert_eq!(store.cache().alias_id("a"), None);
    let (frames, seq, mut rx) = reader.await.unwrap();
    let mut want = edge.replay(&rows);
    want.push(Event::Position(ChangePosition {
        store: store.changes_at_open().store,
        seq: 2,
    }));
    assert_eq!((frames, seq), (crate::events::encode_events(want), 2));
    assert_eq!(*hub.feed.lock().await, Some(2));

    // Handed again (pushed already by a write of this node): the cache
    // still forgets, nothing is sent twice.
    store.cache().put(Arc::new(link(3, Some("b"))));
    edge.followed(&rows[1..]).await;
    edge.followed(&[row(1, 3, Some("a"), Some("b"))]).await;
    assert!(store.cache().get(3).is_none());
    assert!(rx.try_recv().is_err(), "nothing was pushed again");

    store.cache().put(Arc::new(link(5, None)));
    edge.resync(40).await;
    assert!(store.cache().is_empty());
    assert!(rx.recv().await.is_none(), "the worker was cut off");
    assert_eq!(*hub.feed.lock().await, Some(40));
}

/// An alias added then removed in one replay ends removed, and removed
/// then added ends added.
#[test]
fn replay_keeps_the_order_of_changes_to_one_alias() {
    let codec = Codec::new(&DeploymentKey::from_bytes([5; 32]));
    let ((_dir, sqlite), hub) = (temp_store(), EventHub::default());
    let store = Store::from(sqlite.clone());
    let edge = Edge::new(&codec, &store, &hub);
    let row = |seq, id, old: Option<&str>, new: Option<&str>| Change {
        seq,
        link_id: id,
        old_alias: old.map(Into::into),
        new_alias: new.map(Into::into),
    };
    let last_alias_event = |events: Vec<Event>| {
        events.into_iter().rev().find_map(|e| match e {
            Event::Aliases { aliases } if aliases == ["a"] => Some(true),
            Event::AliasesRemoved { aliases } if aliases == ["a"] => Some(false),
            _ => None,
        })
    };
    let added_then_removed = [row(1, 1, None, Some("a")), row(2, 1, Some("a"), None)];
    assert_eq!(
        last_alias_event(edge.replay(&added_then_removed)),
        Some(false)
    );
    let removed_then_added = [row(1, 1, Some("a"), None), row(2, 2, None, Some("a"))];
    assert_eq!(
        last_alias_event(edge.replay(&removed_then_added)),
        Some(true)
    );
    // Rows touching different aliases share one alias event.
    let two = [row(1, 1, None, Some("a")), row(2, 2, None, Some("b"))];
    let adds = edge
        .replay(&two)
        .into_iter()
        .filter(|e| matches!(e, Event::Aliases { .. }))
        .count();
    assert_eq!(adds, 1);
}
