//! The one place that tells the edge a link changed.
//!
//! Every write the nginx workers must see (create, edit, delete, import, and
//! the click fold that exhausts or renews links) ends with
//! [`Edge::link_changed`] or [`Edge::links_changed`]: it drops the daemon's
//! cached copy, builds the invalidation and alias events, and pushes them to
//! every subscribed worker, returning once they are written (see
//! [`EventHub::publish`]), so the change is at the edge before the reply
//! that made it.

use shortlink_core::ipc::Event;
use shortlink_core::Codec;

use crate::codes;
use crate::events::EventHub;
use crate::store::cache::LinkCache;
use crate::store::links::Link;

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
/// The cross-node change feed (PostgreSQL, a later issue) plugs in here:
/// a write appends its change to the shared log in its transaction, and
/// each daemon applies the log through this type, so a change made on any
/// node reaches every node's cache and workers by the same path.
#[derive(Clone, Copy)]
pub struct Edge<'a> {
    codec: &'a Codec,
    cache: &'a LinkCache,
    hub: &'a EventHub,
}

impl std::fmt::Debug for Edge<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Edge")
            .field("cached_links", &self.cache.len())
            .field("hub", self.hub)
            .finish()
    }
}

impl<'a> Edge<'a> {
    /// The edge of one daemon: its codec (for generated codes), its link
    /// cache and its subscribed workers.
    pub fn new(codec: &'a Codec, cache: &'a LinkCache, hub: &'a EventHub) -> Self {
        Self { codec, cache, hub }
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
            self.cache.forget(old.id, old.alias);
        }
        self.hub.publish(self.events(&changes)).await;
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
        let (cache, hub) = (LinkCache::new(8), EventHub::default());
        let edge = Edge::new(&codec, &cache, &hub);
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
    async fn a_change_drops_the_cached_copy_and_reaches_subscribers() {
        let codec = Codec::new(&DeploymentKey::from_bytes([5; 32]));
        let (cache, hub) = (LinkCache::new(8), EventHub::default());
        let edge = Edge::new(&codec, &cache, &hub);
        let old = link(3, Some("old"));
        cache.put(Arc::new(old.clone()));
        let (_id, mut rx) = hub.subscribe();
        let reader = tokio::spawn(async move {
            let msg = rx.recv().await.unwrap();
            msg.ack.unwrap().send(()).unwrap();
            msg.frames
        });
        edge.link_changed(Some(&old), None).await;
        assert!(cache.get(3).is_none());
        assert_eq!(cache.alias_id("old"), None);
        let frames = reader.await.unwrap();
        let want = crate::events::encode_events(edge.events(&[LinkChange::new(Some(&old), None)]));
        assert_eq!(frames, want);
    }
}
