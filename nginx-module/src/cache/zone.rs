//! The zone itself: its settings ([`ZoneConf`]), the header at the start of
//! the slab pool ([`Shared`]) and the pool's lock. `init.rs` builds the
//! header or adopts the previous cycle's.

use core::ptr::NonNull;
use core::sync::atomic::{AtomicU64, Ordering};

use nginx_sys::{
    ngx_msec_t, ngx_queue_t, ngx_rbtree_node_t, ngx_rbtree_t, ngx_shm_zone_t,
    ngx_slab_alloc_locked, ngx_slab_pool_t,
};
use shortlink_core::visit_slots::{VisitSlot, VisitSlots};
use shortlink_core::zone_hash::ZoneHashKey;
use shortlink_core::Fingerprint;

use super::figures::Rows;
use super::node::LinkNode;

/// Per-zone settings, from `shortlink_zone`.
pub struct ZoneConf {
    /// The shared zone nginx made for the directive.
    pub zone: *mut ngx_shm_zone_t,
    /// How long a found link is served from the zone.
    pub ttl: ngx_msec_t,
    /// How long "not found" and "gone" answers are served from the zone.
    pub negative_ttl: ngx_msec_t,
    /// Fingerprint of the key the entries were made under.
    pub fingerprint: Fingerprint,
}

/// The zone's header, at the start of the slab pool's `data`.
#[repr(C)]
pub struct Shared {
    /// [`LAYOUT`]: a zone kept across a reload must have been made by this
    /// layout of the module.
    pub(super) magic: u64,
    /// Bumped by every purge or replacement: workers' front caches
    /// (`front.rs`) trust only entries copied under the current value.
    pub generation: AtomicU64,
    /// Bumped by every purge of the whole table: a lookup answered across
    /// one may carry a link as it was before a change, so it is not stored
    /// (`links.rs`).
    pub table_purges: AtomicU64,
    /// The same for the purge of one code, whether or not the zone held it,
    /// in the stripe its hash picks ([`purge_stripe`]): a purge keeps out
    /// the answers on their way for its own stripe's codes only, not every
    /// answer then in flight.
    pub code_purges: [AtomicU64; PURGE_STRIPES],
    /// `bucket_mask + 1` chain heads.
    pub buckets: *mut *mut LinkNode,
    pub bucket_mask: usize,
    /// Most recently used at the head.
    pub lru: ngx_queue_t,
    pub entries: usize,
    /// Known aliases: `ngx_str_node_t`s keyed by hash, then bytes.
    pub aliases: ngx_rbtree_t,
    pub(super) aliases_sentinel: ngx_rbtree_node_t,
    /// Bumped by each alias snapshot; entries older than the last finished
    /// snapshot are gone from the daemon.
    pub alias_generation: u64,
    /// The alias set matches the daemon (a snapshot completed and nothing
    /// failed to fit since). When false, alias-shaped misses ask the daemon.
    pub aliases_complete: bool,
    pub(super) fingerprint: [u8; 8],
    /// The key of every hash of a code or alias in this zone
    /// (`shortlink_core::zone_hash`): drawn when the zone is made, kept
    /// across reloads with the zone, never written after.
    pub hash_key: ZoneHashKey,
    /// The daemon's change-log position the entries reflect (see
    /// `position.rs`); meaningful when `position_known`.
    pub position_store: u64,
    pub position_seq: u64,
    pub position_known: bool,
    /// The figures `shortlink_status` answers (`status/rows.rs`).
    pub status: Rows,
    /// Visits of limited links this node was leased and has not spent:
    /// `visit_count` slots allocated with the header ([`Shared::visits`]).
    pub(super) visit_slots: *mut VisitSlot,
    pub(super) visit_count: usize,
    pub(super) visit_victim: u32,
}

impl Shared {
    /// The visit table (none if the zone had no room for one).
    pub fn visits(&mut self) -> Option<VisitSlots<'_>> {
        if self.visit_slots.is_null() {
            return None;
        }
        // SAFETY: init_zone allocated visit_count slots at visit_slots in
        // this zone and never frees them; the caller holds the zone's lock
        // (this header is reached only through `Locked::shared`), and the
        // slice borrows `self` mutably, so no other reference to it lives.
        let slots = unsafe { core::slice::from_raw_parts_mut(self.visit_slots, self.visit_count) };
        VisitSlots::new(slots, &mut self.visit_victim)
    }
}

/// Identifies this layout of the zone ("SLZONE" + version).
pub(super) const LAYOUT: u64 = u64::from_be_bytes(*b"SLZONE15");

/// Purge counters per zone (a power of two): two codes share one with a
/// chance of 1 in this many, and then an answer for one is not stored
/// across a purge of the other (a miss more, never a stale entry).
pub const PURGE_STRIPES: usize = 256;

/// The purge counter of the code whose hash is `h`.
pub fn purge_stripe(shared: &Shared, h: u64) -> &AtomicU64 {
    &shared.code_purges[h as usize & (PURGE_STRIPES - 1)]
}

/// The purges that concern the code whose hash is `h`: both counters only
/// grow, so their sum is unchanged exactly when neither moved.
pub fn purges_of(shared: &Shared, h: u64) -> u64 {
    let table = shared.table_purges.load(Ordering::Acquire);
    table.wrapping_add(purge_stripe(shared, h).load(Ordering::Acquire))
}

/// Locks the slab pool for the life of the guard.
pub struct Locked(NonNull<ngx_slab_pool_t>);

impl Locked {
    /// Waits for the pool's mutex (shared by every worker).
    pub fn new(pool: NonNull<ngx_slab_pool_t>) -> Self {
        // SAFETY: the pool is a live, initialised slab pool of our zone.
        unsafe { nginx_sys::ngx_shmtx_lock(&mut (*pool.as_ptr()).mutex) };
        Locked(pool)
    }

    /// The locked slab pool.
    pub fn pool(&self) -> *mut ngx_slab_pool_t {
        self.0.as_ptr()
    }

    /// The header. Callers keep one such reference at a time.
    #[allow(clippy::mut_from_ref)]
    pub fn shared(&self) -> &mut Shared {
        // SAFETY: init_zone stored the header in pool->data; we hold the lock.
        unsafe { &mut *(*self.0.as_ptr()).data.cast::<Shared>() }
    }

    /// Allocates `size` bytes from the locked pool; null when it is full.
    pub fn alloc(&self, size: usize) -> *mut u8 {
        // SAFETY: the pool is locked by self.
        unsafe { ngx_slab_alloc_locked(self.pool(), size) }.cast()
    }

    /// Returns an allocation of this pool.
    ///
    /// # Safety
    /// `p` must come from [`Locked::alloc`] on this zone, and be unreachable.
    pub unsafe fn free(&self, p: *mut u8) {
        // SAFETY: per the contract; the pool is locked by self.
        unsafe { nginx_sys::ngx_slab_free_locked(self.pool(), p.cast()) };
    }
}

impl Drop for Locked {
    fn drop(&mut self) {
        // SAFETY: we locked it in `new`.
        unsafe { nginx_sys::ngx_shmtx_unlock(&mut (*self.0.as_ptr()).mutex) };
    }
}
