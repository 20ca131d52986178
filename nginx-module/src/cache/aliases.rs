//! The alias set: which custom aliases exist, so a string that is neither a
//! generated code nor a known alias is answered at the edge without asking
//! the daemon. An nginx string rbtree (`ngx_str_rbtree_insert_value`) in the
//! zone, filled by snapshots and live changes from the daemon.

use core::mem::size_of;
use core::ptr;

use nginx_sys::{
    ngx_rbtree_insert, ngx_rbtree_key_t, ngx_rbtree_node_t, ngx_str_node_t, ngx_str_rbtree_lookup,
    ngx_str_t,
};

use super::links::alloc_evicting;
use super::zone::{Locked, Shared};
use super::{CacheError, LinkCache};

/// A known alias; its bytes follow the struct, and `sn.str_` points at them.
#[repr(C)]
struct AliasNode {
    sn: ngx_str_node_t,
    /// The snapshot that last mentioned it.
    generation: u64,
}

/// The node of `alias`, whose tree key is `key` ([`LinkCache::alias_key`]).
fn find(shared: &mut Shared, alias: &[u8], key: u32) -> Option<*mut AliasNode> {
    let mut name = ngx_str_t {
        len: alias.len(),
        data: alias.as_ptr().cast_mut(),
    };
    // SAFETY: the tree is live under the lock; nginx only reads the name.
    let sn = unsafe { ngx_str_rbtree_lookup(&mut shared.aliases, &mut name, key) };
    (!sn.is_null()).then_some(sn.cast::<AliasNode>())
}

/// Every node of the tree, for sweeps.
fn nodes(shared: &Shared) -> Vec<*mut AliasNode> {
    let mut out = Vec::new();
    let mut stack = vec![shared.aliases.root];
    while let Some(node) = stack.pop() {
        if node == shared.aliases.sentinel || node.is_null() {
            continue;
        }
        // SAFETY: nodes reachable from the root are live under the lock.
        unsafe {
            stack.push((*node).left);
            stack.push((*node).right);
        }
        out.push(node.cast::<AliasNode>());
    }
    out
}

/// Unlinks a live alias node of the locked zone and frees it.
fn remove(lock: &Locked, node: *mut AliasNode) {
    // SAFETY: node is a live node of the tree; nothing refers to it once
    // it is deleted.
    unsafe {
        nginx_sys::ngx_rbtree_delete(&mut lock.shared().aliases, &mut (*node).sn.node);
        lock.free(node.cast());
    }
}

/// Drops every alias and marks the set incomplete (the key changed).
pub fn clear_locked(lock: &Locked) {
    for node in nodes(lock.shared()) {
        remove(lock, node);
    }
    lock.shared().aliases_complete = false;
}

impl LinkCache {
    /// The tree's key of `alias` (`ngx_str_rbtree_lookup` takes 32 bits),
    /// from the zone's hash: computed before the lock is taken.
    fn alias_key(&self, alias: &[u8]) -> u32 {
        self.hash(alias) as u32
    }

    /// Is `alias` a known alias? `None` when the set is incomplete and the
    /// daemon has to be asked.
    pub fn alias_known(&self, alias: &[u8]) -> Option<bool> {
        let key = self.alias_key(alias);
        let lock = self.lock();
        let shared = lock.shared();
        if find(shared, alias, key).is_some() {
            return Some(true);
        }
        shared.aliases_complete.then_some(false)
    }

    /// Starts a snapshot: returns its generation.
    pub fn alias_snapshot_begin(&self) -> u64 {
        let lock = self.lock();
        let shared = lock.shared();
        shared.alias_generation += 1;
        shared.alias_generation
    }

    /// Adds aliases (part of snapshot `generation`, or live additions).
    /// Those that do not fit leave the set incomplete: `Err(Full)`.
    pub fn alias_add<'a>(
        &self,
        aliases: impl Iterator<Item = &'a [u8]>,
        generation: u64,
    ) -> Result<(), CacheError> {
        let lock = self.lock();
        let mut result = Ok(());
        for alias in aliases {
            if alias.is_empty() || alias.len() > u8::MAX as usize {
                continue;
            }
            let key = self.alias_key(alias);
            if let Some(node) = find(lock.shared(), alias, key) {
                // SAFETY: a live alias node; we hold the lock.
                unsafe { (*node).generation = generation.max((*node).generation) };
                continue;
            }
            let Some(mem) = alloc_evicting(&lock, size_of::<AliasNode>() + alias.len()) else {
                // Without room for every alias, the set can no longer prove
                // that a string is not one.
                lock.shared().aliases_complete = false;
                result = Err(CacheError::Full);
                continue;
            };
            let node = mem.cast::<AliasNode>();
            // SAFETY: a fresh allocation of the node plus the alias bytes,
            // aligned by the slab allocator; a zeroed rbtree node is plain
            // data, linked by ngx_rbtree_insert under the lock.
            unsafe {
                let bytes = mem.add(size_of::<AliasNode>());
                ptr::copy_nonoverlapping(alias.as_ptr(), bytes, alias.len());
                let mut sn: ngx_str_node_t = core::mem::zeroed();
                sn.node.key = key as ngx_rbtree_key_t;
                sn.str_ = ngx_str_t {
                    len: alias.len(),
                    data: bytes,
                };
                ptr::write(node, AliasNode { sn, generation });
                let rb: *mut ngx_rbtree_node_t = &mut (*node).sn.node;
                ngx_rbtree_insert(&mut lock.shared().aliases, rb);
            }
        }
        result
    }

    /// Removes aliases.
    pub fn alias_remove<'a>(&self, aliases: impl Iterator<Item = &'a [u8]>) {
        let lock = self.lock();
        for alias in aliases {
            if let Some(node) = find(lock.shared(), alias, self.alias_key(alias)) {
                remove(&lock, node);
            }
        }
    }

    /// Ends snapshot `generation`: aliases it did not mention are dropped,
    /// and the set is complete unless something failed to fit.
    pub fn alias_snapshot_end(&self, generation: u64, all_fitted: bool) {
        let lock = self.lock();
        if generation != lock.shared().alias_generation {
            // A newer snapshot (another worker's) is under way; it decides.
            return;
        }
        for node in nodes(lock.shared()) {
            // SAFETY: nodes listed from the live tree under the lock.
            if unsafe { (*node).generation } < generation {
                remove(&lock, node);
            }
        }
        lock.shared().aliases_complete = all_fitted;
    }

    /// Marks the alias set as not proven complete (the link to the daemon
    /// lost events, for example).
    pub fn alias_set_incomplete(&self) {
        self.lock().shared().aliases_complete = false;
    }
}
