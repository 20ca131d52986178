//! In-memory LRU of hot links, in front of the reader threads.
//!
//! Keyed by link id, with a second small LRU from alias to id. Every change
//! to a link goes through [`LinkCache::forget`] right after its commit.

use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use lru::LruCache;

use super::links::Link;

/// Hot links by id and alias; misses fall through to SQLite.
pub struct LinkCache {
    by_id: Mutex<LruCache<u64, Arc<Link>>>,
    by_alias: Mutex<LruCache<String, u64>>,
    /// Lookups answered from memory.
    pub hits: AtomicU64,
    /// Lookups that went to the database.
    pub misses: AtomicU64,
    /// Bumped by every [`LinkCache::forget`], so a read that started before
    /// a change cannot put the old row back afterwards.
    generation: AtomicU64,
}

impl LinkCache {
    /// A cache holding up to `capacity` links.
    pub fn new(capacity: usize) -> Self {
        let cap = NonZeroUsize::new(capacity.max(1)).expect("non-zero");
        Self {
            by_id: Mutex::new(LruCache::new(cap)),
            by_alias: Mutex::new(LruCache::new(cap)),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            generation: AtomicU64::new(0),
        }
    }

    /// The cached link with this id, counting the hit or miss.
    pub fn get(&self, id: u64) -> Option<Arc<Link>> {
        let found = self.by_id.lock().expect("cache lock").get(&id).cloned();
        self.count(found.is_some());
        found
    }

    /// The id cached for this alias (no hit counting: a link lookup follows).
    pub fn alias_id(&self, alias: &str) -> Option<u64> {
        self.by_alias
            .lock()
            .expect("cache lock")
            .get(alias)
            .copied()
    }

    /// Remembers a link just written (nothing older can be in flight).
    pub fn put(&self, link: Arc<Link>) {
        if let Some(alias) = &link.alias {
            self.by_alias
                .lock()
                .expect("cache lock")
                .put(alias.clone(), link.id);
        }
        self.by_id.lock().expect("cache lock").put(link.id, link);
    }

    /// Take this before reading a link from the database; pass it to
    /// [`LinkCache::put_if_current`].
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Caches a link read from the database unless some link changed since
    /// `generation` was taken (the read may predate the change).
    pub fn put_if_current(&self, link: Arc<Link>, generation: u64) {
        let mut by_id = self.by_id.lock().expect("cache lock");
        if self.generation.load(Ordering::Acquire) != generation {
            return;
        }
        if let Some(alias) = &link.alias {
            self.by_alias
                .lock()
                .expect("cache lock")
                .put(alias.clone(), link.id);
        }
        by_id.put(link.id, link);
    }

    /// Drops a link that changed or went away (and its alias mapping).
    pub fn forget(&self, id: u64, alias: Option<&str>) {
        let old = {
            let mut by_id = self.by_id.lock().expect("cache lock");
            self.generation.fetch_add(1, Ordering::AcqRel);
            by_id.pop(&id)
        };
        let mut aliases = self.by_alias.lock().expect("cache lock");
        if let Some(alias) = alias {
            aliases.pop(alias);
        }
        if let Some(old_alias) = old.as_ref().and_then(|l| l.alias.as_deref()) {
            aliases.pop(old_alias);
        }
    }

    /// Drops every link (the change log cannot say what changed).
    pub fn clear(&self) {
        let mut by_id = self.by_id.lock().expect("cache lock");
        self.generation.fetch_add(1, Ordering::AcqRel);
        by_id.clear();
        self.by_alias.lock().expect("cache lock").clear();
    }

    fn count(&self, hit: bool) {
        if hit {
            self.hits.fetch_add(1, Ordering::Relaxed);
        } else {
            self.misses.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Links currently held.
    pub fn len(&self) -> usize {
        self.by_id.lock().expect("cache lock").len()
    }

    /// True when nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_older_than_a_change_is_not_cached() {
        let cache = LinkCache::new(10);
        let gen = cache.generation();
        let stale = Arc::new(Link {
            id: 1,
            url: "https://old.example/".into(),
            ..Link::default()
        });
        cache.forget(1, None);
        cache.put_if_current(Arc::clone(&stale), gen);
        assert!(cache.get(1).is_none());
        let gen = cache.generation();
        cache.put_if_current(stale, gen);
        assert_eq!(cache.get(1).unwrap().url, "https://old.example/");
    }
}
