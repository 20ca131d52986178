//! `LinkCache`: one LRU of links in an nginx shared-memory zone, used by every
//! worker, plus the set of known aliases.
//!
//! Links sit in a chained hash table (one bucket array sized from the zone)
//! and a queue in recency order, both in the zone's slab pool and guarded by
//! the pool's mutex, as `ngx_http_limit_req_module` does with its rbtree. A
//! hash table, not a tree: a lookup touches a bucket and a node instead of a
//! node per tree level, and those cache misses were the largest cost of a
//! hit. A hit moves its entry to the front of the queue at most once a
//! second, so hot entries are not rewritten (and their cache lines not
//! bounced between workers) on every request. Entries carry their own cache
//! deadline (`ttl` or `negative_ttl`); an allocation that fails evicts from
//! the back of the queue until it fits, then the answer is served without
//! caching. Aliases are a small rbtree beside it.
//!
//! The zone survives `nginx -s reload` when its name and size are unchanged
//! (nginx hands the old data to `init_zone`); if the deployment key changed,
//! every entry is dropped, since codes mean something else under a new key.

use core::ffi::c_void;
use core::mem::{offset_of, size_of};
use core::ptr::{self, NonNull};
use core::sync::atomic::{AtomicU64, Ordering};

use nginx_sys::{
    ngx_int_t, ngx_msec_t, ngx_queue_t, ngx_rbtree_insert, ngx_rbtree_key_t, ngx_rbtree_node_t,
    ngx_rbtree_t, ngx_shm_zone_t, ngx_slab_alloc_locked, ngx_slab_free_locked, ngx_slab_pool_t,
    ngx_str_t, NGX_ERROR, NGX_OK,
};
use shortlink_core::device::DeviceClass;
use shortlink_core::ipc::{EdgeLink, LookupResult};
use shortlink_core::Fingerprint;

mod front;

/// Per-zone settings, from `shortlink_zone`.
pub struct ZoneConf {
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
struct Shared {
    /// [`LAYOUT`]: a zone kept across a reload must have been made by this
    /// layout of the module.
    magic: u64,
    /// Bumped by every purge or replacement: workers' front caches
    /// (`front.rs`) trust only entries copied under the current value.
    generation: AtomicU64,
    /// `bucket_mask + 1` chain heads.
    buckets: *mut *mut LinkNode,
    bucket_mask: usize,
    /// Most recently used at the head.
    lru: ngx_queue_t,
    aliases: ngx_rbtree_t,
    aliases_sentinel: ngx_rbtree_node_t,
    fingerprint: [u8; 8],
    /// Bumped by each alias snapshot; entries older than the last finished
    /// snapshot are gone from the daemon.
    alias_generation: u64,
    /// The alias set matches the daemon (a snapshot completed and nothing
    /// failed to fit since). When false, alias-shaped misses ask the daemon.
    aliases_complete: bool,
    entries: usize,
}

/// Identifies this layout of the zone ("SLZONE" + version).
const LAYOUT: u64 = u64::from_be_bytes(*b"SLZONE03");
/// A hit requeues its entry at most this often; front-cache slots live as long.
const REQUEUE_MS: ngx_msec_t = 1000;
/// Zone bytes per hash bucket (about one entry per 256 bytes, load ~0.5).
const BYTES_PER_BUCKET: usize = 512;

const KIND_FOUND: u8 = 0;
const KIND_NOT_FOUND: u8 = 1;
const KIND_GONE: u8 = 2;

/// Index of each target in `LinkNode::lens`.
const T_MAIN: usize = 0;
const T_DESKTOP: usize = 1;
const T_MOBILE: usize = 2;
const T_IOS: usize = 3;
const T_ANDROID: usize = 4;

/// A cached answer; code and targets follow the struct in the same allocation.
#[repr(C)]
struct LinkNode {
    /// Next node in the same bucket.
    next: *mut LinkNode,
    hash: u64,
    queue: ngx_queue_t,
    /// `ngx_current_msec` after which the entry is stale.
    fresh_until: ngx_msec_t,
    /// When a hit last moved it to the front of the queue.
    touched: ngx_msec_t,
    id: u64,
    /// Unix seconds; `i64::MIN` for none.
    expires_at: i64,
    status: u16,
    kind: u8,
    disabled: bool,
    code_len: u8,
    lens: [u16; 5],
}

/// A known alias; its bytes follow the struct.
#[repr(C)]
struct AliasNode {
    rb: ngx_rbtree_node_t,
    generation: u64,
    len: u8,
}

/// What the zone knows about a code.
pub enum Cached {
    Miss,
    NotFound,
    Gone,
    Found(Hit),
}

/// A cached link, with the target for the caller's device copied out
/// (into the request's pool, by the caller's `copy`).
pub struct Hit {
    pub id: u64,
    pub status: Option<u16>,
    pub expires_at: Option<i64>,
    pub disabled: bool,
    pub target: ngx_str_t,
}

/// Handle on the zone; cheap to copy, valid for the worker's life.
#[derive(Clone, Copy)]
pub struct LinkCache {
    pool: NonNull<ngx_slab_pool_t>,
}

fn hash(bytes: &[u8]) -> ngx_rbtree_key_t {
    // FNV-1a: short keys, no secret needed (the codes are already keyed).
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h as ngx_rbtree_key_t
}

/// Locks the slab pool for the life of the guard.
struct Locked(NonNull<ngx_slab_pool_t>);

impl Locked {
    fn new(pool: NonNull<ngx_slab_pool_t>) -> Self {
        // SAFETY: the pool is a live, initialised slab pool of our zone.
        unsafe { nginx_sys::ngx_shmtx_lock(&mut (*pool.as_ptr()).mutex) };
        Locked(pool)
    }

    fn pool(&self) -> *mut ngx_slab_pool_t {
        self.0.as_ptr()
    }

    #[allow(clippy::mut_from_ref)]
    fn shared(&self) -> &mut Shared {
        // SAFETY: init_zone stored the header in pool->data; we hold the lock.
        unsafe { &mut *(*self.0.as_ptr()).data.cast::<Shared>() }
    }
}

impl Drop for Locked {
    fn drop(&mut self) {
        // SAFETY: we locked it in `new`.
        unsafe { nginx_sys::ngx_shmtx_unlock(&mut (*self.0.as_ptr()).mutex) };
    }
}

impl LinkCache {
    /// The cache in an initialised zone.
    ///
    /// # Safety
    /// `zone` must be this module's zone, initialised by [`init_zone`], and
    /// used only while it is mapped (a worker's whole life).
    pub unsafe fn from_zone(zone: *mut ngx_shm_zone_t) -> Option<Self> {
        // SAFETY: per the contract, shm.addr is the slab pool.
        let pool = NonNull::new(unsafe { (*zone).shm.addr }.cast::<ngx_slab_pool_t>())?;
        // SAFETY: as above.
        if unsafe { (*pool.as_ptr()).data }.is_null() {
            return None;
        }
        Some(Self { pool })
    }

    /// The entry for `code`, dropping it if stale; a hit moves it to the
    /// front of the LRU.
    pub fn lookup(
        &self,
        code: &[u8],
        now: ngx_msec_t,
        device: DeviceClass,
        copy: impl FnOnce(&[u8]) -> Option<ngx_str_t>,
    ) -> Cached {
        let h = hash(code) as u64;
        let generation = self.generation();
        let mut copy = Some(copy);
        if let Some(found) = front::get(code, h, generation, now, |f| {
            let target = (copy.take()?)(&f.target)?;
            Some(Hit {
                id: f.id,
                status: (f.status != 0).then_some(f.status),
                expires_at: (f.expires_at != i64::MIN).then_some(f.expires_at),
                disabled: f.disabled,
                target,
            })
        }) {
            return found.map_or(Cached::Miss, Cached::Found);
        }
        let Some(copy) = copy else {
            return Cached::Miss;
        };
        let lock = Locked::new(self.pool);
        let shared = lock.shared();
        let Some(node) = find_link(shared, code) else {
            return Cached::Miss;
        };
        // SAFETY: find_link returns live nodes of our table; we hold the lock.
        let n = unsafe { &mut *node };
        if (n.fresh_until.wrapping_sub(now) as isize) < 0 {
            // SAFETY: node is in the table and the queue.
            unsafe { remove_link(&lock, node) };
            return Cached::Miss;
        }
        if now.wrapping_sub(n.touched) >= REQUEUE_MS {
            n.touched = now;
            // SAFETY: both queue links are live members of the LRU.
            unsafe {
                nginx_sys::ngx_queue_remove(&mut n.queue);
                nginx_sys::ngx_queue_insert_after(&mut shared.lru, &mut n.queue);
            }
        }
        match n.kind {
            KIND_NOT_FOUND => Cached::NotFound,
            KIND_GONE => Cached::Gone,
            _ => {
                let pick = |order: &[usize]| {
                    order
                        .iter()
                        .copied()
                        .find(|&t| n.lens[t] > 0)
                        .unwrap_or(T_MAIN)
                };
                let which = match device {
                    DeviceClass::Ios => pick(&[T_IOS, T_MOBILE]),
                    DeviceClass::Android => pick(&[T_ANDROID, T_MOBILE]),
                    DeviceClass::Mobile => pick(&[T_MOBILE]),
                    DeviceClass::Desktop => pick(&[T_DESKTOP]),
                    DeviceClass::Other => T_MAIN,
                };
                // SAFETY: the node's data holds code_len + sum(lens) bytes.
                let bytes = unsafe { node_field(node, which) };
                if n.lens[T_DESKTOP..].iter().all(|&l| l == 0) && code.len() <= front::MAX_CODE {
                    let generation = shared.generation.load(Ordering::Acquire);
                    let link = front::Front {
                        id: n.id,
                        status: n.status,
                        expires_at: n.expires_at,
                        disabled: n.disabled,
                        fresh_until: n.fresh_until,
                        target: bytes.into(),
                    };
                    front::put(code, h, generation, now, link);
                }
                let Some(target) = copy(bytes) else {
                    return Cached::Miss;
                };
                Cached::Found(Hit {
                    id: n.id,
                    status: (n.status != 0).then_some(n.status),
                    expires_at: (n.expires_at != i64::MIN).then_some(n.expires_at),
                    disabled: n.disabled,
                    target,
                })
            }
        }
    }

    /// Stores the daemon's answer for `code`, replacing any older one.
    /// Returns false when it did not fit even after evicting.
    pub fn insert(
        &self,
        code: &[u8],
        result: &LookupResult,
        fresh_for: ngx_msec_t,
        now: ngx_msec_t,
    ) -> bool {
        if code.is_empty() || code.len() > u8::MAX as usize {
            return false;
        }
        let empty = EdgeLink::default();
        let (kind, link) = match result {
            LookupResult::Found(link) => (KIND_FOUND, link),
            LookupResult::NotFound => (KIND_NOT_FOUND, &empty),
            LookupResult::Gone => (KIND_GONE, &empty),
        };
        let fields: [&[u8]; 5] = [
            link.target.as_bytes(),
            link.targets.desktop.as_deref().unwrap_or("").as_bytes(),
            link.targets.mobile.as_deref().unwrap_or("").as_bytes(),
            link.targets.ios.as_deref().unwrap_or("").as_bytes(),
            link.targets.android.as_deref().unwrap_or("").as_bytes(),
        ];
        if fields.iter().any(|f| f.len() > u16::MAX as usize) {
            return false;
        }
        let size =
            size_of::<LinkNode>() + code.len() + fields.iter().map(|f| f.len()).sum::<usize>();

        let lock = Locked::new(self.pool);
        if let Some(old) = find_link(lock.shared(), code) {
            lock.shared().generation.fetch_add(1, Ordering::AcqRel);
            // SAFETY: a live node of our table.
            unsafe { remove_link(&lock, old) };
        }
        let Some(mem) = alloc_evicting(&lock, size) else {
            return false;
        };
        let node = mem.cast::<LinkNode>();
        let mut lens = [0u16; 5];
        for (l, f) in lens.iter_mut().zip(fields) {
            *l = f.len() as u16;
        }
        // SAFETY: `mem` is a fresh allocation of `size` bytes, aligned by
        // the slab allocator for any node type.
        unsafe {
            ptr::write(
                node,
                LinkNode {
                    next: ptr::null_mut(),
                    hash: hash(code) as u64,
                    queue: core::mem::zeroed(),
                    fresh_until: now.wrapping_add(fresh_for),
                    touched: now,
                    id: link.id,
                    expires_at: link.expires_at.unwrap_or(i64::MIN),
                    status: link.status.unwrap_or(0),
                    kind,
                    disabled: link.disabled,
                    code_len: code.len() as u8,
                    lens,
                },
            );
            let mut at = mem.add(size_of::<LinkNode>());
            for part in [code].into_iter().chain(fields) {
                ptr::copy_nonoverlapping(part.as_ptr(), at, part.len());
                at = at.add(part.len());
            }
            let shared = lock.shared();
            let bucket = shared
                .buckets
                .add((*node).hash as usize & shared.bucket_mask);
            (*node).next = *bucket;
            *bucket = node;
            nginx_sys::ngx_queue_insert_after(&mut shared.lru, &mut (*node).queue);
            shared.entries += 1;
        }
        true
    }

    /// Drops the entry for `code`; true when there was one.
    pub fn purge(&self, code: &[u8]) -> bool {
        let lock = Locked::new(self.pool);
        match find_link(lock.shared(), code) {
            Some(node) => {
                lock.shared().generation.fetch_add(1, Ordering::AcqRel);
                // SAFETY: a live node of our table.
                unsafe { remove_link(&lock, node) };
                true
            }
            None => false,
        }
    }

    /// The zone's generation: read without the lock, one atomic load.
    fn generation(&self) -> u64 {
        // SAFETY: init_zone stored the header in pool->data; the counter is atomic.
        unsafe {
            (*(*self.pool.as_ptr()).data.cast::<Shared>())
                .generation
                .load(Ordering::Acquire)
        }
    }

    /// Drops every cached link (not the alias set); returns how many.
    pub fn purge_all(&self) -> usize {
        purge_links(&Locked::new(self.pool))
    }

    /// Is `alias` a known alias? `None` when the set is incomplete and the
    /// daemon has to be asked.
    pub fn alias_known(&self, alias: &[u8]) -> Option<bool> {
        let lock = Locked::new(self.pool);
        let shared = lock.shared();
        if find_alias(shared, alias).is_some() {
            return Some(true);
        }
        shared.aliases_complete.then_some(false)
    }

    /// Starts a snapshot: returns its generation.
    pub fn alias_snapshot_begin(&self) -> u64 {
        let lock = Locked::new(self.pool);
        let shared = lock.shared();
        shared.alias_generation += 1;
        shared.alias_generation
    }

    /// Adds aliases (part of snapshot `generation`, or live additions).
    pub fn alias_add<'a>(&self, aliases: impl Iterator<Item = &'a [u8]>, generation: u64) {
        let lock = Locked::new(self.pool);
        for alias in aliases {
            if alias.is_empty() || alias.len() > u8::MAX as usize {
                continue;
            }
            if let Some(node) = find_alias(lock.shared(), alias) {
                // SAFETY: a live alias node; we hold the lock.
                unsafe { (*node).generation = generation.max((*node).generation) };
                continue;
            }
            let Some(mem) = alloc_evicting(&lock, size_of::<AliasNode>() + alias.len()) else {
                // Without room for every alias, the set can no longer prove
                // that a string is not one.
                lock.shared().aliases_complete = false;
                continue;
            };
            let node = mem.cast::<AliasNode>();
            // SAFETY: fresh allocation of the right size.
            unsafe {
                ptr::write(
                    node,
                    AliasNode {
                        rb: core::mem::zeroed(),
                        generation,
                        len: alias.len() as u8,
                    },
                );
                ptr::copy_nonoverlapping(
                    alias.as_ptr(),
                    mem.add(size_of::<AliasNode>()),
                    alias.len(),
                );
                (*node).rb.key = hash(alias);
                ngx_rbtree_insert(&mut lock.shared().aliases, &mut (*node).rb);
            }
        }
    }

    /// Removes aliases.
    pub fn alias_remove<'a>(&self, aliases: impl Iterator<Item = &'a [u8]>) {
        let lock = Locked::new(self.pool);
        for alias in aliases {
            if let Some(node) = find_alias(lock.shared(), alias) {
                // SAFETY: a live alias node; we hold the lock.
                unsafe { remove_alias(&lock, node) };
            }
        }
    }

    /// Ends snapshot `generation`: aliases it did not mention are dropped,
    /// and the set is complete unless something failed to fit.
    pub fn alias_snapshot_end(&self, generation: u64, all_fitted: bool) {
        let lock = Locked::new(self.pool);
        let shared = lock.shared();
        if generation != shared.alias_generation {
            // A newer snapshot (another worker's) is under way; it decides.
            return;
        }
        let stale: Vec<*mut AliasNode> = alias_nodes(shared)
            .into_iter()
            // SAFETY: nodes listed from the live tree under the lock.
            .filter(|&n| unsafe { (*n).generation } < generation)
            .collect();
        for node in stale {
            // SAFETY: as above.
            unsafe { remove_alias(&lock, node) };
        }
        shared.aliases_complete = all_fitted;
    }

    /// Marks the alias set as not proven complete (link to daemon lost
    /// events, for example).
    pub fn alias_set_incomplete(&self) {
        Locked::new(self.pool).shared().aliases_complete = false;
    }
}

/// Bytes of field `which` (`T_*`), or of the code for `usize::MAX`.
///
/// # Safety
/// `node` must be a live link node.
unsafe fn node_field<'a>(node: *mut LinkNode, which: usize) -> &'a [u8] {
    // SAFETY: per the contract; layout is code then the five targets.
    unsafe {
        let n = &*node;
        let base = node.cast::<u8>().add(size_of::<LinkNode>());
        if which == usize::MAX {
            return core::slice::from_raw_parts(base, n.code_len as usize);
        }
        let skip: usize =
            n.code_len as usize + n.lens[..which].iter().map(|&l| l as usize).sum::<usize>();
        core::slice::from_raw_parts(base.add(skip), n.lens[which] as usize)
    }
}

/// Walks a tree for `key`/`bytes`; `bytes_of` gives a node's bytes.
fn find_in(
    tree: &ngx_rbtree_t,
    bytes: &[u8],
    bytes_of: impl Fn(*mut ngx_rbtree_node_t) -> &'static [u8],
) -> Option<*mut ngx_rbtree_node_t> {
    let key = hash(bytes);
    let mut node = tree.root;
    let sentinel = tree.sentinel;
    while node != sentinel {
        // SAFETY: nodes reachable from the root are live until removed under the lock.
        let n = unsafe { &*node };
        node = if key < n.key {
            n.left
        } else if key > n.key {
            n.right
        } else {
            match bytes.cmp(bytes_of(node)) {
                core::cmp::Ordering::Less => n.left,
                core::cmp::Ordering::Greater => n.right,
                core::cmp::Ordering::Equal => return Some(node),
            }
        };
    }
    None
}

fn find_link(shared: &Shared, code: &[u8]) -> Option<*mut LinkNode> {
    let h = hash(code) as u64;
    // SAFETY: the bucket array and every chained node are live under the lock.
    unsafe {
        let mut node = *shared.buckets.add(h as usize & shared.bucket_mask);
        while !node.is_null() {
            if (*node).hash == h && node_field(node, usize::MAX) == code {
                return Some(node);
            }
            node = (*node).next;
        }
    }
    None
}

fn alias_bytes(node: *mut AliasNode) -> &'static [u8] {
    // SAFETY: alias bytes follow the node; caller holds the lock.
    unsafe {
        core::slice::from_raw_parts(
            node.cast::<u8>().add(size_of::<AliasNode>()),
            (*node).len as usize,
        )
    }
}

fn find_alias(shared: &Shared, alias: &[u8]) -> Option<*mut AliasNode> {
    find_in(&shared.aliases, alias, |n| {
        alias_bytes(n.cast::<AliasNode>())
    })
    .map(|n| n.cast::<AliasNode>())
}

fn alias_nodes(shared: &Shared) -> Vec<*mut AliasNode> {
    let mut out = Vec::new();
    let mut stack = vec![shared.aliases.root];
    while let Some(node) = stack.pop() {
        if node == shared.aliases.sentinel || node.is_null() {
            continue;
        }
        // SAFETY: live tree nodes under the lock.
        unsafe {
            stack.push((*node).left);
            stack.push((*node).right);
        }
        out.push(node.cast::<AliasNode>());
    }
    out
}

/// Empties the links tree and the LRU of the locked zone.
fn purge_links(lock: &Locked) -> usize {
    let shared = lock.shared();
    shared.generation.fetch_add(1, Ordering::AcqRel);
    let mut nodes = Vec::with_capacity(shared.entries);
    let mut q = shared.lru.next;
    while !ptr::eq(q, &shared.lru) {
        // SAFETY: LRU members are LinkNode queue fields; we hold the lock.
        unsafe {
            nodes.push(
                q.cast::<u8>()
                    .sub(offset_of!(LinkNode, queue))
                    .cast::<LinkNode>(),
            );
            q = (*q).next;
        }
    }
    for &node in &nodes {
        // SAFETY: live nodes collected above.
        unsafe { remove_link(lock, node) };
    }
    nodes.len()
}

/// # Safety
/// `node` must be a live link node of the locked zone.
unsafe fn remove_link(lock: &Locked, node: *mut LinkNode) {
    let shared = lock.shared();
    // SAFETY: per the contract; the node is in its bucket's chain.
    unsafe {
        let mut link = shared
            .buckets
            .add((*node).hash as usize & shared.bucket_mask);
        while !(*link).is_null() && *link != node {
            link = &mut (**link).next;
        }
        if *link == node {
            *link = (*node).next;
        }
        nginx_sys::ngx_queue_remove(&mut (*node).queue);
        ngx_slab_free_locked(lock.pool(), node.cast());
    }
    shared.entries -= 1;
}

/// # Safety
/// `node` must be a live alias node of the locked zone.
unsafe fn remove_alias(lock: &Locked, node: *mut AliasNode) {
    // SAFETY: per the contract.
    unsafe {
        nginx_sys::ngx_rbtree_delete(&mut lock.shared().aliases, &mut (*node).rb);
        ngx_slab_free_locked(lock.pool(), node.cast());
    }
}

/// Most entries evicted to make room for one new entry. Entries of another
/// size class free no slot of the size we need until a whole slab page is
/// empty, so one eviction is not always enough.
const MAX_EVICTIONS: usize = 512;

/// Allocates from the zone; when it is full, evicts the least recently used
/// link entries one by one until the allocation succeeds.
fn alloc_evicting(lock: &Locked, size: usize) -> Option<*mut u8> {
    for _ in 0..=MAX_EVICTIONS {
        // SAFETY: the pool is locked by `lock`.
        let mem = unsafe { ngx_slab_alloc_locked(lock.pool(), size) };
        if !mem.is_null() {
            return Some(mem.cast());
        }
        let shared = lock.shared();
        // SAFETY: the LRU is a valid queue head.
        if unsafe { nginx_sys::ngx_queue_empty(&shared.lru) } {
            return None;
        }
        let last = shared.lru.prev;
        // SAFETY: a non-empty LRU's last element is a LinkNode's queue field.
        let node = unsafe {
            last.cast::<u8>()
                .sub(offset_of!(LinkNode, queue))
                .cast::<LinkNode>()
        };
        // SAFETY: live node.
        unsafe { remove_link(lock, node) };
    }
    None
}

/// `init` callback of the zone: builds the header, or adopts the previous
/// cycle's (dropping its entries if the key changed).
///
/// # Safety
/// Called by nginx with our zone; `data` is the old zone's `data` or null.
pub unsafe extern "C" fn init_zone(zone: *mut ngx_shm_zone_t, data: *mut c_void) -> ngx_int_t {
    // SAFETY: nginx passes our zone; its data is our ZoneConf (set when added).
    let conf = unsafe { &*(*zone).data.cast::<ZoneConf>() };
    // SAFETY: the slab pool sits at the start of the mapping.
    let pool = unsafe { (*zone).shm.addr.cast::<ngx_slab_pool_t>() };
    let Some(pool) = NonNull::new(pool) else {
        return NGX_ERROR as ngx_int_t;
    };
    // SAFETY: reading the pool header nginx initialised.
    let existing = unsafe { (*pool.as_ptr()).data };
    if !data.is_null() && !existing.is_null() {
        let lock = Locked::new(pool);
        let shared = lock.shared();
        if shared.magic != LAYOUT {
            // Workers of the running cycle still use the old layout: it
            // cannot be rebuilt under them.
            ngx::ngx_log_error!(
                nginx_sys::NGX_LOG_EMERG,
                (*zone).shm.log,
                "shortlink_zone \"{}\" was made by another version of the module; give the zone a new name or restart nginx",
                (*zone).shm.name
            );
            return NGX_ERROR as ngx_int_t;
        }
        if shared.fingerprint != conf.fingerprint.0 {
            purge_links(&lock);
            let shared = lock.shared();
            for node in alias_nodes(shared) {
                // SAFETY: live alias nodes.
                unsafe { remove_alias(&lock, node) };
            }
            shared.aliases_complete = false;
            shared.fingerprint = conf.fingerprint.0;
        }
        return NGX_OK as ngx_int_t;
    }
    let lock = Locked::new(pool);
    // SAFETY: the pool is initialised and locked; the header is allocated
    // once per zone and lives as long as the mapping.
    unsafe {
        let shared = ngx_slab_alloc_locked(lock.pool(), size_of::<Shared>()).cast::<Shared>();
        if shared.is_null() {
            return NGX_ERROR as ngx_int_t;
        }
        ptr::write_bytes(shared, 0, 1);
        let count = ((*zone).shm.size / BYTES_PER_BUCKET)
            .next_power_of_two()
            .max(64);
        let buckets = ngx_slab_alloc_locked(lock.pool(), count * size_of::<*mut LinkNode>());
        if buckets.is_null() {
            return NGX_ERROR as ngx_int_t;
        }
        ptr::write_bytes(buckets.cast::<*mut LinkNode>(), 0, count);
        (*shared).magic = LAYOUT;
        (*shared).buckets = buckets.cast();
        (*shared).bucket_mask = count - 1;
        nginx_sys::ngx_rbtree_init(
            &mut (*shared).aliases,
            &mut (*shared).aliases_sentinel,
            Some(insert_alias_value),
        );
        nginx_sys::ngx_queue_init(&mut (*shared).lru);
        (*shared).fingerprint = conf.fingerprint.0;
        (*lock.pool()).data = shared.cast();
        // Running out of room is normal for an LRU: no [crit] per eviction.
        (*lock.pool()).set_log_nomem(0);
    }
    NGX_OK as ngx_int_t
}

/// rbtree insert: by hash, then by the entry's bytes.
unsafe fn insert_by(
    mut temp: *mut ngx_rbtree_node_t,
    node: *mut ngx_rbtree_node_t,
    sentinel: *mut ngx_rbtree_node_t,
    bytes_of: impl Fn(*mut ngx_rbtree_node_t) -> &'static [u8],
) {
    // SAFETY: nginx calls insert callbacks with live nodes of one tree.
    unsafe {
        let p = loop {
            let slot = if (*node).key < (*temp).key {
                &mut (*temp).left
            } else if (*node).key > (*temp).key {
                &mut (*temp).right
            } else if bytes_of(node) < bytes_of(temp) {
                &mut (*temp).left
            } else {
                &mut (*temp).right
            };
            if *slot == sentinel {
                break slot;
            }
            temp = *slot;
        };
        *p = node;
        (*node).parent = temp;
        (*node).left = sentinel;
        (*node).right = sentinel;
        nginx_sys::ngx_rbt_red(node);
    }
}

unsafe extern "C" fn insert_alias_value(
    temp: *mut ngx_rbtree_node_t,
    node: *mut ngx_rbtree_node_t,
    sentinel: *mut ngx_rbtree_node_t,
) {
    // SAFETY: nodes of the aliases tree are AliasNodes.
    unsafe { insert_by(temp, node, sentinel, |n| alias_bytes(n.cast::<AliasNode>())) }
}
