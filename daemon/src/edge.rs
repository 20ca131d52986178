//! The one place that tells the edge a link changed.
//!
//! Every write the nginx workers must see (create, edit, delete, import, and
//! the click fold that exhausts or renews links) logs its change in its own
//! transaction (`store::changes`) and ends with [`Edge::link_changed`] or
//! [`Edge::links_changed`]: it drops the daemon's cached copy, then pushes
//! the logged changes not pushed yet, in log order, as invalidation and alias
//! events followed by their position, to every subscribed worker, returning
//! once they are written (see [`EventHub::publish`]), so the change is at the
//! edge before the reply that made it. A worker that comes back after an
//! outage is replayed the log from its position ([`Edge::replay`]).
//!
//! On PostgreSQL the log is shared by every node: each daemon follows it
//! (`pg::feed`) and hands what it reads to [`Edge::followed`], which drops
//! the daemon's cached copies and pushes what was not pushed yet by the
//! same path, so a change made on any node reaches every node's workers.

use shortlink_core::ipc::{ChangePosition, Event};
use shortlink_core::Codec;

use crate::codes;
use crate::db::Store;
use crate::events::EventHub;
use crate::store::cache::LinkCache;
use crate::store::changes::Change;
use crate::store::links::Link;
use crate::store::StoreResult;

/// How the edge knows one link: its generated code (from the id) and its
/// alias.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EdgeKeys<'a> {
    /// The link id; the edge caches it under the codec's encoding of it.
    pub id: u64,
    /// The alias, cached at the edge and listed in its alias set.
    pub alias: Option<&'a str>,
}

impl<'a> From<&'a Link> for EdgeKeys<'a> {
    fn from(link: &'a Link) -> Self {
        Self {
            id: link.id,
            alias: link.alias.as_deref(),
        }
    }
}

/// One link's change: how the edge knew it before and how it knows it now
/// (`None`: it did not exist, or no longer does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkChange<'a> {
    /// Before the write; `None` for a new link.
    pub old: Option<EdgeKeys<'a>>,
    /// After the write; `None` for a deleted link.
    pub new: Option<EdgeKeys<'a>>,
}

impl<'a> LinkChange<'a> {
    /// The change from `old` to `new`.
    pub fn new(old: Option<&'a Link>, new: Option<&'a Link>) -> Self {
        Self {
            old: old.map(EdgeKeys::from),
            new: new.map(EdgeKeys::from),
        }
    }

    /// True when the write logged this change (`store::changes`): anything
    /// but the creation of a link without an alias.
    pub fn is_logged(&self) -> bool {
        self.old.is_some() || self.new.is_some_and(|k| k.alias.is_some())
    }

    /// A link whose edge view changed under the same codes (a visit limit
    /// reached, an expiry renewed).
    pub fn in_place(id: u64, alias: Option<&'a str>) -> Self {
        let keys = EdgeKeys { id, alias };
        Self {
            old: Some(keys),
            new: Some(keys),
        }
    }
}

/// Tells the daemon's cache and the nginx workers that links changed.
///
/// The cross-node change feed (PostgreSQL) plugs in here: each daemon
/// follows the shared change log through this type ([`Edge::followed`]),
/// so a change made on any node reaches every node's cache and workers by
/// the same path.
#[derive(Clone, Copy)]
pub struct Edge<'a> {
    codec: &'a Codec,
    store: &'a Store,
    hub: &'a EventHub,
}

impl std::fmt::Debug for Edge<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Edge")
            .field("cached_links", &self.cache().len())
            .field("hub", self.hub)
            .finish()
    }
}

impl<'a> Edge<'a> {
    /// The edge of one daemon: its codec (for generated codes), its store
    /// (the change log and the link cache) and its subscribed workers.
    pub fn new(codec: &'a Codec, store: &'a Store, hub: &'a EventHub) -> Self {
        Self { codec, store, hub }
    }

    fn cache(&self) -> &'a LinkCache {
        self.store.cache()
    }

    /// One link changed from `old` to `new` (`None`: did not exist / no
    /// longer exists); returns once the workers have the events.
    pub async fn link_changed(&self, old: Option<&Link>, new: Option<&Link>) {
        self.links_changed([LinkChange::new(old, new)]).await;
    }

    /// Many links changed (a batch, an import, a fold): one push for all of
    /// them; returns once the workers have the events.
    pub async fn links_changed<'l>(&self, changes: impl IntoIterator<Item = LinkChange<'l>>) {
        let changes: Vec<LinkChange<'l>> = changes.into_iter().collect();
        for old in changes.iter().filter_map(|c| c.old) {
            self.cache().forget(old.id, old.alias);
        }
        // A link created without an alias has no events and was not
        // logged (its generated code cannot be cached at the edge yet).
        if !changes.iter().any(LinkChange::is_logged) {
            return;
        }
        if let Err(e) = self.push_logged().await {
            // The workers cannot be told: make them reconnect, which
            // replays the log from their position.
            tracing::error!(error = %e, "cannot read the edge change log; resyncing the workers");
            self.hub.cut_off_all("the change log could not be read");
        }
    }

    /// Pushes every logged change not pushed yet, in log order, then its
    /// position. One push at a time: a write whose change another push
    /// already carried returns once that push is written.
    async fn push_logged(&self) -> StoreResult<()> {
        let mut pushed = self.hub.feed.lock().await;
        let from = pushed.unwrap_or(self.store.changes_at_open().seq);
        let (head, rows) = self.store.changes_since(from).await?;
        if head.seq <= from {
            return Ok(());
        }
        match rows {
            Some(rows) => {
                // Rows of other nodes' writes may come with this node's.
                self.forget(&rows);
                let mut events = self.replay(&rows);
                events.push(Event::Position(head));
                self.hub.publish_at(events, head.seq).await;
            }
            // Pruned before it was pushed (a huge import): the workers
            // reconnect and resync.
            None => self
                .hub
                .cut_off_all("changes were pruned before they were pushed"),
        }
        *pushed = Some(head.seq);
        Ok(())
    }

    /// Changes read from the shared log by this daemon's follower, in log
    /// order, from any node (this one included): drops the daemon's cached
    /// copies of every link and alias named, then pushes the ones not
    /// pushed yet to the workers, followed by their position.
    pub async fn followed(&self, changes: &[Change]) {
        self.forget(changes);
        let mut pushed = self.hub.feed.lock().await;
        let from = pushed.unwrap_or(self.store.changes_at_open().seq);
        let fresh: Vec<Change> = changes.iter().filter(|c| c.seq > from).cloned().collect();
        let Some(last) = fresh.last().map(|c| c.seq) else {
            return;
        };
        let mut events = self.replay(&fresh);
        events.push(Event::Position(ChangePosition {
            store: self.store.changes_at_open().store,
            seq: last,
        }));
        self.hub.publish_at(events, last).await;
        *pushed = Some(last);
    }

    /// The shared log lost changes this daemon had not read (pruned while
    /// it was away): drops every cached link and cuts the workers off (they
    /// reconnect, find their position gone and drop their zones); the feed
    /// goes on from `head`.
    pub async fn resync(&self, head: u64) {
        let mut pushed = self.hub.feed.lock().await;
        self.cache().clear();
        self.hub
            .cut_off_all("the shared change log was pruned past this daemon's position");
        *pushed = Some(head);
    }

    /// Drops the cached copies of the links and aliases `changes` name.
    fn forget(&self, changes: &[Change]) {
        for c in changes {
            self.cache().forget(c.link_id, c.old_alias.as_deref());
            if let Some(alias) = c.new_alias.as_deref() {
                self.cache().forget(c.link_id, Some(alias));
            }
        }
    }

    /// The events that apply logged `changes` at the edge, in order. Rows
    /// are grouped as long as no alias appears twice in a group (so an
    /// alias added then removed ends removed).
    pub fn replay(&self, changes: &[Change]) -> Vec<Event> {
        let mut events = Vec::new();
        let mut group: Vec<LinkChange<'_>> = Vec::new();
        let mut touched = std::collections::HashSet::new();
        for c in changes {
            let aliases = [c.old_alias.as_deref(), c.new_alias.as_deref()];
            if aliases.iter().flatten().any(|a| touched.contains(a)) {
                events.extend(self.events(&group));
                group.clear();
                touched.clear();
            }
            touched.extend(aliases.into_iter().flatten());
            group.push(LinkChange {
                old: Some(EdgeKeys {
                    id: c.link_id,
                    alias: c.old_alias.as_deref(),
                }),
                new: Some(EdgeKeys {
                    id: c.link_id,
                    alias: c.new_alias.as_deref(),
                }),
            });
        }
        events.extend(self.events(&group));
        events
    }

    /// The subscription's start for a worker at `since`: the alias
    /// snapshot, then either the changes after `since` or `None` (the
    /// worker must drop its cache), and the position they lead to.
    pub async fn resume(
        &self,
        since: Option<ChangePosition>,
    ) -> StoreResult<(Vec<String>, Option<Vec<Change>>, ChangePosition)> {
        let r = self.store.resume(since).await?;
        Ok((r.aliases, r.changes, r.head))
    }

    /// The events for `changes`, in the order the workers apply them: the
    /// old codes are purged, removed aliases leave the alias set, new ones
    /// join it and are purged (a negative entry may hold them).
    pub fn events(&self, changes: &[LinkChange<'_>]) -> Vec<Event> {
        let mut events = Vec::new();
        let mut removed = Vec::new();
        let mut added = Vec::new();
        for change in changes {
            if let Some(old) = change.old {
                events.push(Event::Invalidate {
                    code: codes::generated_for_id(self.codec, old.id),
                });
                if let Some(alias) = old.alias {
                    events.push(Event::Invalidate { code: alias.into() });
                }
            }
            let old_alias = change.old.and_then(|k| k.alias);
            let new_alias = change.new.and_then(|k| k.alias);
            if old_alias != new_alias {
                removed.extend(old_alias.map(str::to_string));
                added.extend(new_alias.map(str::to_string));
            }
        }
        if !removed.is_empty() {
            events.push(Event::AliasesRemoved { aliases: removed });
        }
        if !added.is_empty() {
            events.push(Event::Aliases {
                aliases: added.clone(),
            });
            events.extend(added.into_iter().map(|code| Event::Invalidate { code }));
        }
        events
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use shortlink_core::DeploymentKey;

    use super::*;
    use crate::store::changes;
    use crate::store::tests::temp_store;

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
            vec![
                Event::Aliases {
                    aliases: vec!["a".into()]
                },
                inv("a")
            ]
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
                inv("b"),
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
                inv("a")
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
        // A batch of creates: one alias event for all, then the purges.
        let (x, y) = (link(8, Some("x")), link(9, Some("y")));
        assert_eq!(
            edge.events(&[
                LinkChange::new(None, Some(&x)),
                LinkChange::new(None, Some(&plain)),
                LinkChange::new(None, Some(&y)),
            ]),
            vec![
                Event::Aliases {
                    aliases: vec!["x".into(), "y".into()]
                },
                inv("x"),
                inv("y"),
            ]
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
                move |c| crate::store::links::insert(c, &old, None)
            })
            .await
            .unwrap();
        let deleted = sqlite
            .write(|c| crate::store::links::delete(c, 3))
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
}
