//! The edge lookup: what an nginx worker gets for a code it does not hold.
//!
//! Every lookup goes the same way: `from_cache` answers from the daemon's
//! link cache (or from the code alone) without I/O, `read` fetches what
//! the cache missed in one read transaction, and `remember` caches what
//! was read (if the store's cache keeps reads: `LinkCache::without_reads`)
//! and gives the edge's answer. A single lookup
//! ([`Links::edge_lookup`]) and the IPC server's bursts
//! ([`Links::edge_lookup_cached`] then [`EdgeMisses::resolve`]) differ only
//! in how many codes they carry, and in the bursts' deadline: a worker
//! waits for them, so their read is bounded by `edge_timeout_ms`
//! ([`EdgeDeadline`]), and one past it is dropped, nothing of it cached.

use std::sync::atomic::Ordering;

use shortlink_core::ipc::{EdgeLink, LookupResult};
use shortlink_core::password_page::password_tag;
use shortlink_core::{Codec, RedirectStatus};

use super::ops::Links;
use crate::codes;
use crate::edge_deadline::EdgeDeadline;
use crate::store::{CodeRef, Link, LinkCache, LinkState, Store, StoreError, StoreResult};
use crate::timestamp::unix_now;

/// The edge's view of a link at `now`.
pub fn edge_result(link: &Link, now: i64) -> LookupResult {
    if link.broken {
        // The checker's verdict: visitors get the fallback, not a dead page.
        return LookupResult::Gone;
    }
    match link.state(now) {
        LinkState::Active => LookupResult::Found(EdgeLink {
            id: link.id,
            target: link.url.clone(),
            status: link.redirect.and_then(RedirectStatus::from_code),
            expires_at: link.expires_at,
            targets: link.targets.clone(),
            disabled: false,
            forward_query: link.forward_query,
            created_at: link.created_at,
            country_targets: link.country_targets.clone(),
            password_tag: link.password_hash.as_deref().map(password_tag),
            max_visits: link.max_visits.map(|m| m.max(0) as u64),
            variants: link.variants.clone(),
        }),
        _ => LookupResult::Gone,
    }
}

/// The answer for `code` from the cache or the code alone (no I/O), or
/// what must be read from the database.
fn from_cache(
    cache: &LinkCache,
    codec: &Codec,
    code: &str,
    now: i64,
) -> Result<LookupResult, CodeRef> {
    match codes::resolve(codec, code) {
        CodeRef::Id(id) => match cache.get(id) {
            Some(link) => Ok(edge_result(&link, now)),
            None => Err(CodeRef::Id(id)),
        },
        CodeRef::Alias(alias) => {
            let hit = match cache.alias_id(&alias) {
                Some(id) => cache.get(id),
                None => {
                    cache.misses.fetch_add(1, Ordering::Relaxed);
                    None
                }
            };
            match hit {
                Some(link) => Ok(edge_result(&link, now)),
                None => Err(CodeRef::Alias(alias)),
            }
        }
        CodeRef::Invalid => Ok(LookupResult::NotFound),
    }
}

/// Reads the links behind `refs` in one read (a burst of misses costs one
/// read, not one each).
async fn read(store: &Store, refs: Vec<CodeRef>) -> StoreResult<Vec<Option<Link>>> {
    store.find_links(refs).await
}

/// Caches a link read from the database (unless some link changed since
/// `generation` was taken) and gives the edge's answer.
fn remember(cache: &LinkCache, link: Option<Link>, generation: u64, now: i64) -> LookupResult {
    match link {
        Some(link) => {
            let result = edge_result(&link, now);
            cache.put_if_current(link, generation);
            result
        }
        None => LookupResult::NotFound,
    }
}

/// Edge lookups the cache could not answer, to be read from the database
/// with [`EdgeMisses::resolve`].
pub struct EdgeMisses<T> {
    items: Vec<(T, String)>,
    refs: Vec<CodeRef>,
    generation: u64,
    now: i64,
}

impl<T> EdgeMisses<T> {
    /// Lookups left.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// True when the cache answered everything.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Like [`EdgeMisses::resolve`], on this thread when the store can
    /// read without waiting (SQLite's inline readers): `Err(self)` when it
    /// cannot now, to be resolved with `resolve`.
    pub fn resolve_now(
        self,
        store: &Store,
        answer: impl FnMut(T, &str, Result<LookupResult, &StoreError>),
    ) -> Result<(), Self> {
        let Some(found) = store.find_links_now(&self.refs) else {
            return Err(self);
        };
        self.found(store.cache(), found, answer);
        Ok(())
    }

    /// Caches the links read for these lookups and answers each.
    fn found(
        self,
        cache: &LinkCache,
        links: Vec<Option<Link>>,
        mut answer: impl FnMut(T, &str, Result<LookupResult, &StoreError>),
    ) {
        for ((tag, code), link) in self.items.into_iter().zip(links) {
            answer(
                tag,
                &code,
                Ok(remember(cache, link, self.generation, self.now)),
            );
        }
    }

    /// Reads every missed link in one job on one reader thread, inside one
    /// read transaction, within `deadline`, caches what it found and calls
    /// `answer` once per item (with `StoreError::Unavailable` for each when
    /// the read missed the deadline: nothing of it is cached).
    pub async fn resolve(
        mut self,
        store: &Store,
        deadline: &EdgeDeadline,
        mut answer: impl FnMut(T, &str, Result<LookupResult, &StoreError>),
    ) {
        if self.items.is_empty() {
            return;
        }
        match deadline
            .read(read(store, std::mem::take(&mut self.refs)))
            .await
        {
            Ok(found) => self.found(store.cache(), found, answer),
            Err(e) => {
                for (tag, code) in self.items {
                    answer(tag, &code, Err(&e));
                }
            }
        }
    }
}

impl Links<'_> {
    /// What the edge needs to answer a code: found, not found, or gone.
    pub async fn edge_lookup(&self, code: &str) -> StoreResult<LookupResult> {
        let cache = self.store.cache();
        let generation = cache.generation();
        let now = unix_now();
        match from_cache(cache, &self.rules.codec, code, now) {
            Ok(result) => Ok(result),
            Err(miss) => {
                let link = read(self.store, vec![miss]).await?.pop().flatten();
                Ok(remember(cache, link, generation, now))
            }
        }
    }

    /// Answers edge lookups from the cache alone (no I/O, no await):
    /// `answer` is called with the tag and result of every code the cache
    /// knows or that cannot match; the rest is returned for
    /// [`EdgeMisses::resolve`].
    pub fn edge_lookup_cached<T>(
        &self,
        items: impl IntoIterator<Item = (T, String)>,
        mut answer: impl FnMut(T, &str, Result<LookupResult, &StoreError>),
    ) -> EdgeMisses<T> {
        let cache = self.store.cache();
        let mut misses = EdgeMisses {
            items: Vec::new(),
            refs: Vec::new(),
            generation: cache.generation(),
            now: unix_now(),
        };
        for (tag, code) in items {
            match from_cache(cache, &self.rules.codec, &code, misses.now) {
                Ok(result) => answer(tag, &code, Ok(result)),
                Err(miss) => {
                    misses.items.push((tag, code));
                    misses.refs.push(miss);
                }
            }
        }
        misses
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::links::fixture::Parts;
    use crate::links::{CreateLink, UpdateLink};

    /// A cache that keeps reads (PostgreSQL's) keeps what a lookup read,
    /// unless a change came between the read and the answer; the answer is
    /// the same either way.
    #[test]
    fn a_cache_that_keeps_reads_keeps_what_was_read() {
        let cache = LinkCache::new(10);
        let link = |id| Link {
            id,
            url: "https://example.com/r".into(),
            alias: Some(format!("a{id}")),
            ..Link::default()
        };
        let found = |r: LookupResult, id| matches!(r, LookupResult::Found(l) if l.id == id);
        assert!(found(
            remember(&cache, Some(link(1)), cache.generation(), 0),
            1
        ));
        assert_eq!(cache.get(1).unwrap().id, 1);
        assert_eq!(cache.alias_id("a1"), Some(1));
        let before = cache.generation();
        cache.forget(9, None);
        assert!(found(remember(&cache, Some(link(2)), before, 0), 2));
        assert!(cache.get(2).is_none(), "read before a change: not kept");
        assert_eq!(
            remember(&cache, None, cache.generation(), 0),
            LookupResult::NotFound
        );
    }

    /// A single lookup and a burst answer alike, from the database (SQLite's
    /// cache keeps no reads), and a change is seen at once.
    #[tokio::test]
    async fn single_and_burst_lookups_agree() {
        let dir = tempfile::tempdir().unwrap();
        let parts = Parts::open(dir.path());
        let links = parts.links();
        let req = CreateLink {
            url: "https://example.com/x".into(),
            alias: Some("promo".into()),
            ..CreateLink::default()
        };
        let link = links.create(&req, None).await.unwrap().link().clone();
        let code = codes::generated(&parts.rules.codec, &link);
        let cache = parts.store.cache();
        let found = |r: &LookupResult| matches!(r, LookupResult::Found(l) if l.id == link.id);

        // Dropped from the cache: the first lookup reads, and SQLite's
        // cache keeps no reads, so the next reads again.
        cache.forget(link.id, link.alias.as_deref());
        assert!(!cache.keeps_reads());
        assert!(found(&links.edge_lookup(&code).await.unwrap()));
        let misses = cache.misses.load(Ordering::Relaxed);
        assert!(found(&links.edge_lookup("promo").await.unwrap()));
        assert_eq!(cache.misses.load(Ordering::Relaxed), misses + 1);
        assert_eq!(
            links.edge_lookup("no/such").await.unwrap(),
            LookupResult::NotFound
        );

        cache.forget(link.id, link.alias.as_deref());
        let mut answered = Vec::new();
        let items = vec![
            (0, code.clone()),
            (1, "promo".to_string()),
            (2, "nope-nope".to_string()),
            (3, "a/b".to_string()),
        ];
        let misses = links.edge_lookup_cached(items, |i, _, r| answered.push((i, r.unwrap())));
        assert_eq!(answered, vec![(3, LookupResult::NotFound)]);
        assert_eq!(misses.len(), 3);
        let deadline = EdgeDeadline::new(std::time::Duration::from_secs(60));
        misses
            .resolve(&parts.store, &deadline, |i, _, r| {
                answered.push((i, r.unwrap()))
            })
            .await;
        assert_eq!(answered.len(), 4);
        assert!(found(&answered[1].1) && found(&answered[2].1));
        assert_eq!(answered[3], (2, LookupResult::NotFound));
        // Not kept (SQLite): the next burst reads it again.
        let misses = links.edge_lookup_cached([(0, code.clone())], |_, _, _| panic!("kept"));
        assert_eq!(misses.len(), 1);

        // The same burst read on this thread (SQLite's inline readers).
        cache.forget(link.id, link.alias.as_deref());
        let items = vec![
            (0, code.clone()),
            (1, "promo".to_string()),
            (2, "nope-nope".to_string()),
        ];
        let misses = links.edge_lookup_cached(items, |_, _, _| panic!("all three missed"));
        let mut inline = Vec::new();
        assert!(misses
            .resolve_now(&parts.store, |i, _, r| inline.push((i, r.unwrap())))
            .is_ok());
        assert_eq!(inline.len(), 3);
        assert!(found(&inline[0].1) && found(&inline[1].1));
        assert_eq!(inline[2], (2, LookupResult::NotFound));

        // A disabled link is gone at once, from the cache as from the database.
        let off = UpdateLink {
            disabled: Some(true),
            ..UpdateLink::default()
        };
        links.update("promo", off).await.unwrap();
        assert_eq!(links.edge_lookup(&code).await.unwrap(), LookupResult::Gone);
        assert_eq!(
            links.edge_lookup("promo").await.unwrap(),
            LookupResult::Gone
        );
        parts.store.close();
    }
}
