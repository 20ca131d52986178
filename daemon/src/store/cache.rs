//! In-memory LRU of hot links, in front of either store's reads.
//!
//! Keyed by link id, with a second small LRU from alias to id. Every change
//! to a link goes through [`LinkCache::forget`] right after its commit.
//!
//! Whether links read for the edge are kept is the store's choice
//! ([`LinkCache::new`], [`LinkCache::without_reads`]): the edge keeps what
//! it was told in its own shared zone, so a second copy here pays only
//! when a read costs more than keeping it.

use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use lru::LruCache;

use super::Link;

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
    /// Whether [`LinkCache::put_if_current`] keeps what it is given.
    keeps_reads: bool,
}

impl LinkCache {
    /// A cache holding up to `capacity` links, those written and those
    /// read: for a store whose reads are round trips (PostgreSQL).
    pub fn new(capacity: usize) -> Self {
        Self::with(capacity, true)
    }

    /// A cache holding up to `capacity` links just written, and not those
    /// read: for a store that reads in-process (SQLite, from pages its
    /// mmap holds). There, keeping each link read for the edge (an LRU
    /// insert that evicts and frees another link) cost more than the reads
    /// it saved: the runtime's CPU per edge miss fell from 5.5 to 4.4 µs
    /// without it (`bench/NOTES.md`, "the daemon's cache on the miss path").
    pub fn without_reads(capacity: usize) -> Self {
        Self::with(capacity, false)
    }

    fn with(capacity: usize, keeps_reads: bool) -> Self {
        let cap = NonZeroUsize::new(capacity.max(1)).expect("non-zero");
        Self {
            by_id: Mutex::new(LruCache::new(cap)),
            by_alias: Mutex::new(LruCache::new(cap)),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            generation: AtomicU64::new(0),
            keeps_reads,
        }
    }

    /// Whether links read from the database are kept.
    #[cfg(test)]
    pub fn keeps_reads(&self) -> bool {
        self.keeps_reads
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
    /// `generation` was taken (the read may predate the change), or the
    /// cache keeps no reads (then nothing is allocated for it).
    pub fn put_if_current(&self, link: Link, generation: u64) {
        if !self.keeps_reads {
            return;
        }
        let link = Arc::new(link);
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
        let stale = Link {
            id: 1,
            url: "https://old.example/".into(),
            ..Link::default()
        };
        cache.forget(1, None);
        cache.put_if_current(stale.clone(), gen);
        assert!(cache.get(1).is_none());
        let gen = cache.generation();
        cache.put_if_current(stale, gen);
        assert_eq!(cache.get(1).unwrap().url, "https://old.example/");
    }

    #[test]
    fn a_cache_without_reads_keeps_only_what_was_written() {
        let cache = LinkCache::without_reads(10);
        let read = Link {
            id: 1,
            alias: Some("read".into()),
            ..Link::default()
        };
        cache.put_if_current(read, cache.generation());
        assert!(cache.get(1).is_none() && cache.alias_id("read").is_none());
        let written = Arc::new(Link {
            id: 2,
            alias: Some("new".into()),
            ..Link::default()
        });
        cache.put(written);
        assert_eq!(cache.alias_id("new"), Some(2));
        assert_eq!(cache.get(2).unwrap().id, 2);
        assert!(!cache.keeps_reads() && LinkCache::new(10).keeps_reads());
    }
}
