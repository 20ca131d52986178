//! `LinkCache`: one LRU of links in an nginx shared-memory zone, used by every
//! worker, plus the set of known aliases and a per-worker front cache.
//!
//! * `zone.rs`: the zone's header and its lock; `node.rs`: the layout of one
//!   cached answer; `init.rs`: `init_zone`, which builds the header or adopts
//!   the previous cycle's zone across `nginx -s reload`.
//! * `links.rs`: the link table (a chained hash table) and its LRU queue, as
//!   `ngx_http_limit_req_module` keeps its rbtree and queue: entries expire by
//!   their own deadline, and a full zone evicts from the back of the queue.
//! * `aliases.rs`: the alias set, an nginx string rbtree, kept in sync with
//!   the daemon.
//! * `front.rs`: hot links in each worker's own memory, valid while the
//!   zone's generation is unchanged.
//! * `position.rs`: the daemon change-log position the entries reflect.
//! * `figures.rs`: the counters `shortlink_status` answers, a row per worker.
//! * `hit.rs`: [`Hit`], what the request path answers with, made by one
//!   function from a zone entry, a front slot or a daemon answer.
//! * The header also holds the visits this node leased for limited links
//!   (`shortlink_core::visit_slots`), spent under the zone's lock.

use core::ptr::NonNull;
use core::sync::atomic::Ordering;

use nginx_sys::{ngx_msec_t, ngx_shm_zone_t, ngx_slab_pool_t, ngx_str_t};
use shortlink_core::country::Country;
use shortlink_core::device::DeviceClass;
use shortlink_core::visit_slots::Returned;

mod aliases;
mod figures;
mod front;
mod hit;
mod init;
mod links;
mod node;
mod position;
mod zone;

pub use figures::{Row, Rows};
pub use hit::Hit;
pub use init::init_zone;
pub use zone::{Locked, ZoneConf};

use zone::{purges_of, Shared};

/// What the zone knows about a code.
pub enum Cached {
    Miss,
    NotFound,
    Gone,
    Found(Hit),
}

/// Why an answer or an alias was not stored.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// Nothing more could be evicted to make room.
    #[error("zone is full")]
    Full,
    /// A code or target longer than an entry can record.
    #[error("entry is too large for the zone")]
    TooLarge,
}

/// Handle on the zone; cheap to copy, valid for the worker's life.
#[derive(Clone, Copy)]
pub struct LinkCache {
    pool: NonNull<ngx_slab_pool_t>,
}

impl LinkCache {
    /// The cache in an initialised zone.
    ///
    /// # Safety
    /// `zone` must be this module's zone, initialised by [`init_zone`], and
    /// used only while it is mapped (a worker's whole life).
    pub unsafe fn from_zone(zone: *mut ngx_shm_zone_t) -> Option<Self> {
        // SAFETY: per the contract, shm.addr is the zone's slab pool.
        let pool = NonNull::new(unsafe { (*zone).shm.addr }.cast::<ngx_slab_pool_t>())?;
        // SAFETY: as above; a null data means init_zone has not run.
        if unsafe { (*pool.as_ptr()).data }.is_null() {
            return None;
        }
        Some(Self { pool })
    }

    fn lock(&self) -> Locked {
        Locked::new(self.pool)
    }

    /// The entry for `code` with the target for a visitor of `device` class
    /// from `country` (read only for a link with country targets), kept on
    /// the variant its signed cookie value `kept` names (read only when a
    /// variant is picked), copied
    /// out by `copy` (into the request's pool): from the front cache when
    /// it holds a current copy, else from the zone, dropping a stale
    /// entry. Always
    /// inlined into the request path: once `Hit` grew by the link's
    /// `forward_query` and creation day the compiler made it a call, which
    /// cost a cached redirect about 40 instructions (bench/callgrind.py).
    #[inline(always)]
    pub fn lookup<'k>(
        &self,
        code: &[u8],
        now: ngx_msec_t,
        device: DeviceClass,
        country: impl FnOnce() -> Country,
        kept: impl FnOnce() -> Option<&'k str>,
        copy: impl FnOnce(&[u8]) -> Option<ngx_str_t>,
    ) -> Cached {
        let h = self.hash(code);
        let generation = self.generation();
        let mut args = Some((country, kept, copy));
        if let Some(found) = front::get(code, h, generation, now, |f| {
            let (country, kept, copy) = args.take()?;
            Hit::of(f, device, country, kept, copy)
        }) {
            return found.map_or(Cached::Miss, Cached::Found);
        }
        let Some((country, kept, copy)) = args else {
            return Cached::Miss;
        };
        links::lookup(&self.lock(), code, h, now, device, country, kept, copy)
    }

    /// Spends one visit this node leased for link `id` under the limit
    /// `limit`: true when there was one. Visits leased under another limit
    /// come back to be returned to the daemon.
    pub fn spend_visit(&self, id: u64, limit: u64) -> (bool, Option<Returned>) {
        match self.lock().shared().visits() {
            Some(mut t) => t.spend(id, limit),
            None => (false, None),
        }
    }

    /// Keeps `count` visits leased for link `id` under `limit` for any
    /// worker to spend; what that displaces comes back to be returned.
    pub fn deposit_visits(&self, id: u64, limit: u64, count: u32) -> Option<Returned> {
        match self.lock().shared().visits() {
            Some(mut t) => t.deposit(id, limit, count),
            // No table: nothing kept, everything goes back.
            None => Some(Returned { link: id, count }).filter(|r| r.count > 0),
        }
    }

    /// The figures `shortlink_status` answers: atomics, read and written
    /// without the lock.
    pub fn status_rows(&self) -> &'static Rows {
        // SAFETY: init_zone stored the header in pool->data, mapped for the
        // worker's life; only the atomic rows are referenced.
        unsafe { &(*(*self.pool.as_ptr()).data.cast::<Shared>()).status }
    }

    /// Entries held, and the zone's bytes in use and free (whole free
    /// pages of the slab pool).
    pub fn usage(&self) -> (usize, usize, usize) {
        let lock = self.lock();
        let pool = lock.pool();
        // SAFETY: the pool is locked; start, end and pfree are the slab
        // allocator's own bookkeeping; ngx_pagesize is set at start.
        let (total, free) = unsafe {
            let page = nginx_sys::ngx_pagesize;
            let total = ((*pool).end as usize).saturating_sub((*pool).start as usize);
            (total, (*pool).pfree * page)
        };
        (lock.shared().entries, total.saturating_sub(free), free)
    }

    /// The purges that concern `code` (every purge of the table and of
    /// its stripe's codes), read before a lookup goes out and handed back
    /// to [`LinkCache::insert`] with its answer.
    pub fn purges(&self, code: &[u8]) -> u64 {
        // SAFETY: see `header`; only atomic counters are referenced.
        let shared = unsafe { &*self.header() };
        purges_of(shared, self.hash(code))
    }

    /// The zone's hash of `code` (`shortlink_core::zone_hash`): its key is
    /// read without the lock, as it is never written after the zone is made.
    #[inline(always)]
    fn hash(&self, code: &[u8]) -> u64 {
        // SAFETY: see `header`; `hash_key` is set before any worker runs
        // and never written again.
        unsafe { (*self.header()).hash_key }.hash(code)
    }

    /// The zone's generation: read without the lock, one atomic load.
    fn generation(&self) -> u64 {
        // SAFETY: see `header`; only the atomic counter is referenced.
        unsafe { &(*self.header()).generation }.load(Ordering::Acquire)
    }

    /// The zone's header, which init_zone stored in pool->data. Without the
    /// lock only its atomic counters and its hash key (written once, before
    /// any worker runs) may be referenced through it.
    fn header(&self) -> *const Shared {
        // SAFETY: the pool is the zone's live slab pool (`from_zone`).
        unsafe { (*self.pool.as_ptr()).data.cast::<Shared>() }
    }
}
