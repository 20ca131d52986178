//! `init_zone`: builds the zone's header, or adopts the previous cycle's.
//!
//! The zone survives `nginx -s reload` when its name and size are unchanged
//! (nginx hands the old data to `init_zone`); if the deployment key changed,
//! every entry is dropped, since codes mean something else under a new key.

use core::ffi::c_void;
use core::mem::size_of;
use core::ptr::{self, NonNull};

use nginx_sys::{
    ngx_int_t, ngx_log_t, ngx_shm_zone_t, ngx_slab_pool_t, ngx_str_rbtree_insert_value, NGX_ERROR,
    NGX_LOG_EMERG, NGX_OK,
};

use shortlink_core::visit_slots::{slots_for_zone, VisitSlot};
use shortlink_core::zone_hash::ZoneHashKey;

use super::links;
use super::node::LinkNode;
use super::zone::{Locked, Shared, ZoneConf, LAYOUT};
use crate::guard::guard;

/// Zone bytes per hash bucket. An entry of a ~100-byte URL takes about 256
/// bytes, so a full zone has up to one entry per bucket (the count is
/// rounded up to a power of two) and a hit reads 1.5 entries on average;
/// at 512 bytes it read 2 (another cache miss in every other hit) for 1.6 %
/// more entries.
const BYTES_PER_BUCKET: usize = 256;

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
    #[error("shortlink_zone \"{0}\": no random key for its hash ({1})")]
    NoRandom(String, String),
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
    let hash_key = ZoneHashKey::random()
        .map_err(|e| ZoneError::NoRandom(zone.shm.name.to_string(), e.to_string()))?;
    let shared = lock.alloc(size_of::<Shared>()).cast::<Shared>();
    let count = (zone.shm.size / BYTES_PER_BUCKET)
        .next_power_of_two()
        .max(64);
    let buckets = lock.alloc(count * size_of::<*mut LinkNode>());
    let visit_count = slots_for_zone(zone.shm.size);
    let visit_slots = lock.alloc(visit_count * size_of::<VisitSlot>());
    if shared.is_null() || buckets.is_null() || visit_slots.is_null() {
        return Err(ZoneError::NoRoom(zone.shm.name.to_string()));
    }
    // SAFETY: all three are fresh allocations of the sizes written; the header
    // lives as long as the mapping, and an all-zero Shared is valid before
    // its fields are set here.
    unsafe {
        ptr::write_bytes(shared, 0, 1);
        ptr::write_bytes(buckets.cast::<*mut LinkNode>(), 0, count);
        ptr::write_bytes(visit_slots.cast::<VisitSlot>(), 0, visit_count);
        (*shared).visit_slots = visit_slots.cast();
        (*shared).visit_count = visit_count;
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
        (*shared).hash_key = hash_key;
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
        if let Some(mut t) = lock.shared().visits() {
            t.clear();
        }
        lock.shared().fingerprint = conf.fingerprint.0;
        // Another key may mean another daemon and database.
        lock.shared().position_known = false;
    }
    Ok(())
}
