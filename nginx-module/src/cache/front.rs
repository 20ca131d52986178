//! A per-worker front cache of hot links, in front of the shared zone.
//!
//! A hit in the shared zone costs two cache misses in memory both workers
//! write, and the zone's mutex. Hot links are served from here instead: a
//! direct-mapped table in the worker's own memory, valid only while the
//! zone's generation counter is unchanged. Every purge or replacement in
//! the zone bumps that counter (one atomic load per request reads it), so an
//! invalidation still takes effect in every worker at once. A slot is used
//! for at most a second before the shared entry is consulted again, which
//! also keeps its place in the shared LRU fresh. Links whose answer depends
//! on the visitor (device or country targets) always go to the zone.

use std::cell::RefCell;

use nginx_sys::ngx_msec_t;
use shortlink_core::device::DeviceClass;
use shortlink_core::RedirectStatus;

use super::hit::LinkView;
use super::REQUEUE_MS;

const SLOTS: usize = 8192;
/// Longest code or alias kept here (generated codes are at most 12).
pub const MAX_CODE: usize = 16;

/// What a slot holds: a found link without device or country targets.
pub struct Front {
    id: u64,
    status: Option<RedirectStatus>,
    expires_at: Option<i64>,
    disabled: bool,
    forward_query: Option<bool>,
    /// A password link: the request path shows the form unless the
    /// visitor's cookie passes, wherever the link came from.
    protected: bool,
    created_day: u16,
    fresh_until: ngx_msec_t,
    target: Box<[u8]>,
}

impl Front {
    /// A copy of `link` (whose main target is its only one), stale after
    /// `fresh_until`.
    pub fn of(link: &impl LinkView, fresh_until: ngx_msec_t) -> Self {
        Self {
            id: link.id(),
            status: link.status(),
            expires_at: link.expires_at(),
            disabled: link.disabled(),
            forward_query: link.forward_query(),
            protected: link.protected(),
            created_day: link.created_day(),
            fresh_until,
            target: link.target(DeviceClass::Other).into(),
        }
    }
}

impl LinkView for Front {
    fn id(&self) -> u64 {
        self.id
    }

    fn status(&self) -> Option<RedirectStatus> {
        self.status
    }

    fn expires_at(&self) -> Option<i64> {
        self.expires_at
    }

    fn disabled(&self) -> bool {
        self.disabled
    }

    fn forward_query(&self) -> Option<bool> {
        self.forward_query
    }

    fn protected(&self) -> bool {
        self.protected
    }

    fn created_day(&self) -> u16 {
        self.created_day
    }

    fn has_target(&self, class: DeviceClass) -> bool {
        class == DeviceClass::Other
    }

    fn has_device_targets(&self) -> bool {
        false
    }

    fn target(&self, class: DeviceClass) -> &[u8] {
        match class {
            DeviceClass::Other => &self.target,
            _ => &[],
        }
    }
}

struct Slot {
    generation: u64,
    hash: u64,
    code_len: u8,
    code: [u8; MAX_CODE],
    /// When it was filled from the shared zone.
    filled: ngx_msec_t,
    link: Front,
}

thread_local! {
    static SLOT_TABLE: RefCell<Vec<Option<Slot>>> = RefCell::new((0..SLOTS).map(|_| None).collect());
}

/// Runs `f` on a valid slot for `code`, if there is one.
pub fn get<R>(
    code: &[u8],
    hash: u64,
    generation: u64,
    now: ngx_msec_t,
    f: impl FnOnce(&Front) -> R,
) -> Option<R> {
    SLOT_TABLE.with(|table| {
        let table = table.try_borrow().ok()?;
        let slot = table[hash as usize % SLOTS].as_ref()?;
        let valid = slot.generation == generation
            && slot.hash == hash
            && &slot.code[..slot.code_len as usize] == code
            && now.wrapping_sub(slot.filled) < REQUEUE_MS
            && (slot.link.fresh_until.wrapping_sub(now) as isize) >= 0;
        valid.then(|| f(&slot.link))
    })
}

/// Fills the slot for `code` (seen in the zone at `generation`).
pub fn put(code: &[u8], hash: u64, generation: u64, now: ngx_msec_t, link: Front) {
    if code.len() > MAX_CODE {
        return;
    }
    SLOT_TABLE.with(|table| {
        let Ok(mut table) = table.try_borrow_mut() else {
            return;
        };
        let mut buf = [0u8; MAX_CODE];
        buf[..code.len()].copy_from_slice(code);
        table[hash as usize % SLOTS] = Some(Slot {
            generation,
            hash,
            code_len: code.len() as u8,
            code: buf,
            filled: now,
            link,
        });
    });
}
