//! The zone itself: its settings ([`ZoneConf`]), the header at the start of
//! the slab pool ([`Shared`]), the pool's lock, and `init_zone`, which builds
//! the header or adopts the previous cycle's.
//!
//! The zone survives `nginx -s reload` when its name and size are unchanged
//! (nginx hands the old data to `init_zone`); if the deployment key changed,
//! every entry is dropped, since codes mean something else under a new key.

use core::ffi::c_void;
use core::mem::size_of;
use core::ptr::{self, NonNull};
use core::sync::atomic::AtomicU64;

use nginx_sys::{
    ngx_int_t, ngx_log_t, ngx_msec_t, ngx_queue_t, ngx_rbtree_node_t, ngx_rbtree_t, ngx_shm_zone_t,
    ngx_slab_alloc_locked, ngx_slab_pool_t, ngx_str_rbtree_insert_value, NGX_ERROR, NGX_LOG_EMERG,
    NGX_OK,
};
use shortlink_core::Fingerprint;

use super::links::{self, LinkNode};
use crate::guard::guard;

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
    magic: u64,
    /// Bumped by every purge or replacement: workers' front caches
    /// (`front.rs`) trust only entries copied under the current value.
    pub generation: AtomicU64,
    /// `bucket_mask + 1` chain heads.
    pub buckets: *mut *mut LinkNode,
    pub bucket_mask: usize,
    /// Most recently used at the head.
    pub lru: ngx_queue_t,
    pub entries: usize,
    /// Known aliases: `ngx_str_node_t`s keyed by hash, then bytes.
    pub aliases: ngx_rbtree_t,
    aliases_sentinel: ngx_rbtree_node_t,
    /// Bumped by each alias snapshot; entries older than the last finished
    /// snapshot are gone from the daemon.
    pub alias_generation: u64,
    /// The alias set matches the daemon (a snapshot completed and nothing
    /// failed to fit since). When false, alias-shaped misses ask the daemon.
    pub aliases_complete: bool,
    fingerprint: [u8; 8],
    /// The daemon's change-log position the entries reflect (see
    /// `position.rs`); meaningful when `position_known`.
    pub position_store: u64,
    pub position_seq: u64,
    pub position_known: bool,
}

/// Identifies this layout of the zone ("SLZONE" + version).
const LAYOUT: u64 = u64::from_be_bytes(*b"SLZONE05");
/// Zone bytes per hash bucket (about one entry per 256 bytes, load ~0.5).
const BYTES_PER_BUCKET: usize = 512;

/// Why a zone could not be set up.
#[derive(Debug, thiserror::Error)]
enum ZoneError {
    #[error(
        "shortlink_zone \"{0}\" was made by another version of the module; \
         give the zone a new name or restart nginx"
    )]
    OtherLayout(String),
    #[error("shortlink_zone \"{0}\" has no room for its header")]
    NoRoom(String),
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

/// `init` callback of the zone: builds the header, or adopts the previous
/// cycle's (dropping its entries if the key changed).
///
/// # Safety
/// Called by nginx with our zone; `data` is the old zone's `data` or null.
pub unsafe extern "C" fn init_zone(zone: *mut ngx_shm_zone_t, data: *mut c_void) -> ngx_int_t {
    // SAFETY: nginx passes our zone, live for the cycle.
    let log = unsafe { (*zone).shm.log };
    guard(
        "zone init",
        || log,
        NGX_ERROR as ngx_int_t,
        || {
            // SAFETY: as above; its data is our ZoneConf (set when it was added).
            let (zone, conf) = unsafe { (&*zone, &*(*zone).data.cast::<ZoneConf>()) };
            match init(zone, conf, !data.is_null()) {
                Ok(()) => NGX_OK as ngx_int_t,
                Err(e) => {
                    emerg(log, &e);
                    NGX_ERROR as ngx_int_t
                }
            }
        },
    )
}

fn emerg(log: *mut ngx_log_t, e: &ZoneError) {
    ngx::ngx_log_error!(NGX_LOG_EMERG, log, "{}", e);
}

fn init(zone: &ngx_shm_zone_t, conf: &ZoneConf, reused: bool) -> Result<(), ZoneError> {
    let Some(pool) = NonNull::new(zone.shm.addr.cast::<ngx_slab_pool_t>()) else {
        return Err(ZoneError::NoRoom(zone.shm.name.to_string()));
    };
    // SAFETY: nginx initialised the slab pool at the start of the mapping.
    let existing = unsafe { (*pool.as_ptr()).data };
    let lock = Locked::new(pool);
    if reused && !existing.is_null() {
        return adopt(&lock, zone, conf);
    }
    let shared = lock.alloc(size_of::<Shared>()).cast::<Shared>();
    let count = (zone.shm.size / BYTES_PER_BUCKET)
        .next_power_of_two()
        .max(64);
    let buckets = lock.alloc(count * size_of::<*mut LinkNode>());
    if shared.is_null() || buckets.is_null() {
        return Err(ZoneError::NoRoom(zone.shm.name.to_string()));
    }
    // SAFETY: both are fresh allocations of the sizes written; the header
    // lives as long as the mapping, and an all-zero Shared is valid before
    // its fields are set here.
    unsafe {
        ptr::write_bytes(shared, 0, 1);
        ptr::write_bytes(buckets.cast::<*mut LinkNode>(), 0, count);
        (*shared).magic = LAYOUT;
        (*shared).buckets = buckets.cast();
        (*shared).bucket_mask = count - 1;
        nginx_sys::ngx_rbtree_init(
            &mut (*shared).aliases,
            &mut (*shared).aliases_sentinel,
            Some(ngx_str_rbtree_insert_value),
        );
        nginx_sys::ngx_queue_init(&mut (*shared).lru);
        (*shared).fingerprint = conf.fingerprint.0;
        (*lock.pool()).data = shared.cast();
        // Running out of room is normal for an LRU: no [crit] per eviction.
        (*lock.pool()).set_log_nomem(0);
    }
    Ok(())
}

/// Takes over the previous cycle's zone.
fn adopt(lock: &Locked, zone: &ngx_shm_zone_t, conf: &ZoneConf) -> Result<(), ZoneError> {
    if lock.shared().magic != LAYOUT {
        // Workers of the running cycle still use the old layout: it cannot
        // be rebuilt under them.
        return Err(ZoneError::OtherLayout(zone.shm.name.to_string()));
    }
    if lock.shared().fingerprint != conf.fingerprint.0 {
        links::purge_locked(lock);
        super::aliases::clear_locked(lock);
        lock.shared().fingerprint = conf.fingerprint.0;
        // Another key may mean another daemon and database.
        lock.shared().position_known = false;
    }
    Ok(())
}
