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
//! (`change_feed`) and hands what it reads to [`Edge::followed`], which drops
//! the daemon's cached copies and pushes what was not pushed yet by the
//! same path, so a change made on any node reaches every node's workers.

use shortlink_core::ipc::{ChangePosition, Event};
use shortlink_core::Codec;

use crate::codes;
use crate::events::EventHub;
use crate::store::{Change, Link, LinkCache, Store, StoreResult};

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
    /// join it (the edge then drops a "not found" it may hold for them; an
    /// answer that found the new link stays cached).
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
            events.push(Event::Aliases { aliases: added });
        }
        events
    }
}

#[cfg(test)]
mod tests;
