//! The zone's links: a chained hash table (one bucket array sized from the
//! zone) and a queue in recency order, both in the slab pool under its mutex.
//!
//! A hash table, not a tree: a lookup touches a bucket and a node instead of
//! a node per tree level, and those cache misses were the largest cost of a
//! hit. A hit moves its entry to the front of the queue at most once a
//! second, sooner in a zone that turns over faster (`shortlink_core::recency`),
//! so hot entries are not rewritten (nor their neighbours' cache lines
//! bounced between workers) on every request. Entries carry their own
//! deadline (`ttl` or `negative_ttl`); an allocation that fails evicts from
//! the back of the queue until it fits, then the answer is served without
//! caching, as `ngx_http_limit_req_module` does. A code's bucket comes
//! from the zone's keyed hash (`shortlink_core::zone_hash`), so visitors
//! cannot aim the "not found" answers they cause at one chain.

use core::mem::{offset_of, size_of};
use core::ptr;
use core::sync::atomic::Ordering;

use nginx_sys::{ngx_msec_t, ngx_queue_t, ngx_str_t};
use shortlink_core::country::Country;
use shortlink_core::device::DeviceClass;
use shortlink_core::entry::{self, Table};
use shortlink_core::ipc::LookupResult;
use shortlink_core::preview::day_of;
use shortlink_core::recency;
use shortlink_core::RedirectStatus;

use super::front;
use super::hit::{Hit, LinkView};
use super::node::{
    forward_bits, forward_of, LinkNode, COUNTRIES, DISABLED, KIND_MASK, LIMITED, PROTECTED,
    VARIANTS,
};
use super::zone::{purge_stripe, purges_of, Locked, Shared};
use super::{CacheError, Cached, LinkCache};

/// Most entries evicted to make room for one new entry. Entries of another
/// size class free no slot of the size we need until a whole slab page is
/// empty, so one eviction is not always enough.
const MAX_EVICTIONS: usize = 512;

const KIND_FOUND: u16 = 0;
const KIND_NOT_FOUND: u16 = 1;
const KIND_GONE: u16 = 2;

/// Targets in `LinkNode::lens` order, which is `DeviceClass as usize`:
/// `Other` is the link's main target.
const CLASSES: [DeviceClass; 5] = [
    DeviceClass::Other,
    DeviceClass::Desktop,
    DeviceClass::Mobile,
    DeviceClass::Ios,
    DeviceClass::Android,
];
const _: () = {
    let mut i = 0;
    while i < CLASSES.len() {
        assert!(CLASSES[i] as usize == i);
        i += 1;
    }
};

/// A live node of the locked zone, read through its allocation (the code and
/// targets lie past the struct, so a `&LinkNode` would not reach them).
#[derive(Clone, Copy)]
struct Node(*mut LinkNode);

impl Node {
    fn get(&self) -> &LinkNode {
        // SAFETY: a Node is only made from live nodes of the locked zone.
        unsafe { &*self.0 }
    }

    /// `len` bytes at `skip` past the struct.
    fn bytes(&self, skip: usize, len: usize) -> &[u8] {
        // SAFETY: the allocation holds code_len + sum(lens) bytes past the
        // struct, then the country table when COUNTRIES is set and the
        // variant table when VARIANTS is set (each one's length read from
        // its own head), then 4 bytes of password tag when PROTECTED is
        // set and 8 of visit limit when LIMITED is; callers stay inside
        // those.
        unsafe {
            let base = self.0.cast::<u8>().add(size_of::<LinkNode>());
            core::slice::from_raw_parts(base.add(skip), len)
        }
    }

    fn code(&self) -> &[u8] {
        self.bytes(0, self.get().code_len as usize)
    }

    fn has_device_targets(&self) -> bool {
        self.get().lens[1..].iter().any(|&l| l > 0)
    }

    /// The table at `at` bytes past the struct (made by `entry` on
    /// insert).
    fn table(&self, at: usize) -> Table<'_> {
        let head = self.bytes(at, entry::head_len(self.bytes(at, 1)[0]));
        Table::of(self.bytes(at, entry::table_len(head))).unwrap_or(Table::EMPTY)
    }

    /// Where the tables start: past the code and the targets.
    fn tables_at(&self) -> usize {
        let n = self.get();
        n.code_len as usize + n.lens.iter().map(|&l| l as usize).sum::<usize>()
    }

    /// The link's country targets (`entry::country_table`).
    fn countries(&self) -> Table<'_> {
        match self.get().flags & COUNTRIES {
            0 => Table::EMPTY,
            _ => self.table(self.tables_at()),
        }
    }

    /// The link's A/B variants (`entry::variant_table`), past the country
    /// table.
    fn variants(&self) -> Table<'_> {
        match self.get().flags & VARIANTS {
            0 => Table::EMPTY,
            _ => self.table(self.tables_at() + self.countries().size()),
        }
    }

    /// Where the password tag would start: past the variant table.
    fn tag_at(&self) -> usize {
        self.tables_at() + self.countries().size() + self.variants().size()
    }

    /// The password's tag (`PROTECTED`): four bytes past the variant
    /// table.
    fn tag(&self) -> Option<u32> {
        if self.get().flags & PROTECTED == 0 {
            return None;
        }
        let b = self.bytes(self.tag_at(), 4);
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// The visit limit (`LIMITED`): eight bytes past the password tag.
    fn limit(&self) -> Option<u64> {
        if self.get().flags & LIMITED == 0 {
            return None;
        }
        let at = self.tag_at()
            + if self.get().flags & PROTECTED == 0 {
                0
            } else {
                4
            };
        let mut b = [0u8; 8];
        b.copy_from_slice(self.bytes(at, 8));
        Some(u64::from_le_bytes(b))
    }

    /// The answer depends on the visitor or the visit (device or country
    /// targets, variants): no front-cache slot.
    fn by_visitor(&self) -> bool {
        self.has_device_targets() || self.get().flags & (COUNTRIES | VARIANTS) != 0
    }
}

impl LinkView for Node {
    fn id(&self) -> u64 {
        self.get().id
    }

    fn status(&self) -> Option<RedirectStatus> {
        match self.get().status {
            0 => None,
            s => RedirectStatus::from_code(200 + u16::from(s)),
        }
    }

    fn expires_at(&self) -> Option<i64> {
        let t = self.get().expires_at;
        (t != i64::MIN).then_some(t)
    }

    fn disabled(&self) -> bool {
        self.get().flags & DISABLED != 0
    }

    fn forward_query(&self) -> Option<bool> {
        forward_of(self.get().flags)
    }

    fn password_tag(&self) -> Option<u32> {
        self.tag()
    }

    fn max_visits(&self) -> Option<u64> {
        self.limit()
    }

    fn created_day(&self) -> u16 {
        self.get().created_day
    }

    fn has_target(&self, class: DeviceClass) -> bool {
        self.get().lens[class as usize] > 0
    }

    fn has_device_targets(&self) -> bool {
        Node::has_device_targets(self)
    }

    fn target(&self, class: DeviceClass) -> &[u8] {
        let n = self.get();
        let which = class as usize;
        let before: usize = n.lens[..which].iter().map(|&l| l as usize).sum();
        self.bytes(n.code_len as usize + before, n.lens[which] as usize)
    }

    fn country_count(&self) -> usize {
        self.countries().len()
    }

    fn country(&self, i: usize) -> Country {
        self.countries().country(i)
    }

    fn country_target(&self, i: usize) -> &[u8] {
        self.countries().url(i)
    }

    fn variant_count(&self) -> usize {
        self.variants().len()
    }

    fn weight(&self, i: usize) -> u32 {
        self.variants().weight(i)
    }

    fn variant_target(&self, i: usize) -> &[u8] {
        self.variants().url(i)
    }
}

/// The zone half of [`LinkCache::lookup`], under the lock.
#[allow(clippy::too_many_arguments)]
pub fn lookup<'k>(
    lock: &Locked,
    code: &[u8],
    h: u64,
    now: ngx_msec_t,
    device: DeviceClass,
    country: impl FnOnce() -> Country,
    kept: impl FnOnce() -> Option<&'k str>,
    copy: impl FnOnce(&[u8]) -> Option<ngx_str_t>,
) -> Cached {
    let shared = lock.shared();
    let Some(node) = find(shared, code, h) else {
        return Cached::Miss;
    };
    let (fresh_until, touched) = (node.get().fresh_until, node.get().touched);
    if (fresh_until.wrapping_sub(now) as isize) < 0 {
        remove(lock, node);
        return Cached::Miss;
    }
    let age = recency::age(now as u64, touched as u64);
    if recency::requeue(age, || oldest_age(shared, now)) {
        // SAFETY: find returns live nodes of our table and we hold the
        // lock; the node and its neighbours are live members of the LRU.
        unsafe {
            let n = &mut *node.0;
            n.touched = now;
            nginx_sys::ngx_queue_remove(&mut n.queue);
            nginx_sys::ngx_queue_insert_after(&mut shared.lru, &mut n.queue);
        }
    }
    match node.get().flags & KIND_MASK {
        KIND_NOT_FOUND => Cached::NotFound,
        KIND_GONE => Cached::Gone,
        _ => {
            if !node.by_visitor() {
                let generation = shared.generation.load(Ordering::Acquire);
                front::put(code, h, generation, now, &node, fresh_until);
            }
            Hit::of(&node, device, country, kept, copy).map_or(Cached::Miss, Cached::Found)
        }
    }
}

impl LinkCache {
    /// Stores the daemon's answer for `code`, replacing any older one;
    /// `purges_before` is [`LinkCache::purges`] from before the lookup went
    /// out. When an event purged the code (or its stripe, or the table)
    /// since, the answer may predate that change and is not stored: false.
    /// (The purge and this check both hold the lock, so no purge falls
    /// between them.)
    pub fn insert(
        &self,
        code: &[u8],
        result: &LookupResult,
        fresh_for: ngx_msec_t,
        now: ngx_msec_t,
        purges_before: u64,
    ) -> Result<bool, CacheError> {
        let (kind, link) = match result {
            LookupResult::Found(link) => (KIND_FOUND, Some(link)),
            LookupResult::NotFound => (KIND_NOT_FOUND, None),
            LookupResult::Gone => (KIND_GONE, None),
        };
        let fields: [&[u8]; 5] = CLASSES.map(|class| link.map_or(&[][..], |l| l.target(class)));
        let countries = link.map_or(Some(Vec::new()), |l| {
            entry::country_table(&l.country_targets)
        });
        let variants = link.map_or(Some(Vec::new()), |l| entry::variant_table(&l.variants));
        let (Some(countries), Some(variants)) = (countries, variants) else {
            return Err(CacheError::TooLarge);
        };
        if code.is_empty()
            || code.len() > u8::MAX as usize
            || fields.iter().any(|f| f.len() > u16::MAX as usize)
        {
            return Err(CacheError::TooLarge);
        }
        let tag = link
            .and_then(|l| l.password_tag)
            .map_or(Vec::new(), |t| t.to_le_bytes().to_vec());
        let limit = link
            .and_then(|l| l.max_visits)
            .map_or(Vec::new(), |m| m.to_le_bytes().to_vec());
        let size = size_of::<LinkNode>()
            + code.len()
            + fields.iter().map(|f| f.len()).sum::<usize>()
            + countries.len()
            + variants.len()
            + tag.len()
            + limit.len();

        let h = self.hash(code);
        let lock = self.lock();
        if purges_of(lock.shared(), h) != purges_before {
            return Ok(false);
        }
        if let Some(old) = find(lock.shared(), code, h) {
            lock.shared().generation.fetch_add(1, Ordering::AcqRel);
            remove(&lock, old);
        }
        let mem = alloc_evicting(&lock, size).ok_or(CacheError::Full)?;
        let node = mem.cast::<LinkNode>();
        let value = LinkNode {
            next: ptr::null_mut(),
            hash: h,
            // SAFETY: a zeroed queue link is plain data, set on insertion.
            queue: unsafe { core::mem::zeroed() },
            fresh_until: now.wrapping_add(fresh_for),
            touched: now,
            id: link.map_or(0, |l| l.id),
            expires_at: link.and_then(|l| l.expires_at).unwrap_or(i64::MIN),
            // Every redirect status is 301 to 308.
            status: link
                .and_then(|l| l.status)
                .map_or(0, |s| (s.code() - 200) as u8),
            flags: kind
                | if link.is_some_and(|l| l.disabled) {
                    DISABLED
                } else {
                    0
                }
                | forward_bits(link.and_then(|l| l.forward_query))
                | if tag.is_empty() { 0 } else { PROTECTED }
                | if limit.is_empty() { 0 } else { LIMITED }
                | if countries.is_empty() { 0 } else { COUNTRIES }
                | if variants.is_empty() { 0 } else { VARIANTS },
            code_len: code.len() as u8,
            created_day: link.map_or(0, |l| day_of(l.created_at)),
            lens: fields.map(|f| f.len() as u16),
        };
        let shared = lock.shared();
        // SAFETY: `mem` is a fresh allocation of `size` bytes, aligned by the
        // slab allocator for any node type: the struct, then the code and
        // the targets, the two tables, the password tag and the limit. The bucket array has bucket_mask + 1 heads; we hold
        // the lock while linking the node into its chain and the LRU.
        unsafe {
            ptr::write(node, value);
            let mut at = mem.add(size_of::<LinkNode>());
            for part in [code].into_iter().chain(fields).chain([
                &countries[..],
                &variants[..],
                &tag[..],
                &limit[..],
            ]) {
                ptr::copy_nonoverlapping(part.as_ptr(), at, part.len());
                at = at.add(part.len());
            }
            let bucket = shared
                .buckets
                .add((*node).hash as usize & shared.bucket_mask);
            (*node).next = *bucket;
            *bucket = node;
            nginx_sys::ngx_queue_insert_after(&mut shared.lru, &mut (*node).queue);
        }
        shared.entries += 1;
        Ok(true)
    }

    /// Drops the entry for `code`; true when there was one.
    pub fn purge(&self, code: &[u8]) -> bool {
        let h = self.hash(code);
        let lock = self.lock();
        purge_stripe(lock.shared(), h).fetch_add(1, Ordering::AcqRel);
        let Some(node) = find(lock.shared(), code, h) else {
            return false;
        };
        lock.shared().generation.fetch_add(1, Ordering::AcqRel);
        remove(&lock, node);
        true
    }

    /// Drops the entry for `code` when it says "not found" or "gone"; an
    /// answer that found a link stays. True when one was dropped.
    pub fn purge_unfound(&self, code: &[u8]) -> bool {
        let h = self.hash(code);
        let lock = self.lock();
        purge_stripe(lock.shared(), h).fetch_add(1, Ordering::AcqRel);
        let Some(node) = find(lock.shared(), code, h) else {
            return false;
        };
        if node.get().flags & KIND_MASK == KIND_FOUND {
            return false;
        }
        lock.shared().generation.fetch_add(1, Ordering::AcqRel);
        remove(&lock, node);
        true
    }

    /// Drops every cached link (not the alias set); returns how many.
    pub fn purge_all(&self) -> usize {
        purge_locked(&self.lock())
    }
}

fn find(shared: &Shared, code: &[u8], h: u64) -> Option<Node> {
    // SAFETY: the bucket array has bucket_mask + 1 heads; it and every
    // chained node are live under the lock.
    let mut node = unsafe { *shared.buckets.add(h as usize & shared.bucket_mask) };
    while let Some(n) = (!node.is_null()).then_some(Node(node)) {
        if n.get().hash == h && n.code() == code {
            return Some(n);
        }
        node = n.get().next;
    }
    None
}

/// How long ago the oldest entry of the locked zone's LRU was queued; the
/// queue holds at least the entry a hit just found.
fn oldest_age(shared: &Shared, now: ngx_msec_t) -> u64 {
    // SAFETY: a non-empty LRU's last element is a live LinkNode's queue
    // field; we hold the lock.
    let oldest = unsafe { node_of(shared.lru.prev) };
    recency::age(now as u64, oldest.get().touched as u64)
}

/// The link node whose LRU link is `q`.
///
/// # Safety
/// `q` must be the `queue` field of a live link node.
unsafe fn node_of(q: *mut ngx_queue_t) -> Node {
    // SAFETY: per the contract, the node starts offset_of!(queue) before q.
    Node(unsafe { q.cast::<u8>().sub(offset_of!(LinkNode, queue)) }.cast())
}

/// Empties the link table and the LRU of the locked zone; returns how many
/// entries it held.
pub fn purge_locked(lock: &Locked) -> usize {
    let shared = lock.shared();
    shared.generation.fetch_add(1, Ordering::AcqRel);
    shared.table_purges.fetch_add(1, Ordering::AcqRel);
    let mut nodes = Vec::with_capacity(shared.entries);
    let mut q = shared.lru.next;
    while !ptr::eq(q, &shared.lru) {
        // SAFETY: LRU members are live LinkNode queue fields; we hold the lock.
        unsafe {
            nodes.push(node_of(q));
            q = (*q).next;
        }
    }
    for &node in &nodes {
        remove(lock, node);
    }
    nodes.len()
}

/// Unlinks a live node of the locked zone and frees it.
fn remove(lock: &Locked, node: Node) {
    let shared = lock.shared();
    let node = node.0;
    // SAFETY: node is a live node of the locked zone, in its bucket's chain
    // and in the LRU; nothing refers to it once unlinked.
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
        lock.free(node.cast());
    }
    shared.entries -= 1;
}

/// Allocates from the zone; when it is full, evicts the least recently used
/// link entries one by one until the allocation succeeds.
pub fn alloc_evicting(lock: &Locked, size: usize) -> Option<*mut u8> {
    for _ in 0..=MAX_EVICTIONS {
        let mem = lock.alloc(size);
        if !mem.is_null() {
            return Some(mem);
        }
        let shared = lock.shared();
        // SAFETY: the LRU is a valid queue head.
        if unsafe { nginx_sys::ngx_queue_empty(&shared.lru) } {
            return None;
        }
        // SAFETY: a non-empty LRU's last element is a LinkNode's queue field.
        let last = unsafe { node_of(shared.lru.prev) };
        remove(lock, last);
        // Only this function counts evictions, under the zone's lock: a
        // plain load and store, where `fetch_add` would take the line
        // with a locked instruction on every eviction of a full zone.
        let evictions = &shared.status.evictions;
        evictions.store(evictions.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }
    None
}
