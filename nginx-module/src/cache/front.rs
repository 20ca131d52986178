//! A per-worker front cache of hot links, in front of the shared zone.
//!
//! A hit in the shared zone costs two cache misses in memory both workers
//! write, and the zone's mutex. Hot links are served from here instead: a
//! direct-mapped table in the worker's own memory, valid only while the
//! zone's generation counter is unchanged. Every purge or replacement in
//! the zone bumps that counter (one atomic load per request reads it), so an
//! invalidation still takes effect in every worker at once. A slot serves
//! its copy for at most a second before the shared entry is consulted
//! again, and another link does not take a slot whose copy is current
//! (`shortlink_core::recency`): a link hit often keeps its slot, and a worker
//! serving links it seldom sees twice does not rewrite a slot per request.
//! A slot is refilled in place, its target's buffer reused. Links whose
//! answer depends on the visitor (device or country targets) always go to
//! the zone.

use std::cell::RefCell;

use nginx_sys::ngx_msec_t;
use shortlink_core::device::DeviceClass;
use shortlink_core::recency::FrontStamp;
use shortlink_core::RedirectStatus;

use super::hit::LinkView;

const SLOTS: usize = 8192;
/// Longest code or alias kept here (generated codes are at most 12).
const MAX_CODE: usize = 16;

/// What a slot holds: a found link without device or country targets.
pub struct Front {
    id: u64,
    status: Option<RedirectStatus>,
    expires_at: Option<i64>,
    disabled: bool,
    forward_query: Option<bool>,
    /// A password link: the request path shows the form unless the
    /// visitor's cookie passes, wherever the link came from.
    password_tag: Option<u32>,
    max_visits: Option<u64>,
    created_day: u16,
    target: Vec<u8>,
}

impl Front {
    fn empty() -> Self {
        Self {
            id: 0,
            status: None,
            expires_at: None,
            disabled: false,
            forward_query: None,
            password_tag: None,
            max_visits: None,
            created_day: 0,
            target: Vec::new(),
        }
    }

    /// Becomes a copy of `link`, whose main target is its only one.
    fn copy_of(&mut self, link: &impl LinkView) {
        self.id = link.id();
        self.status = link.status();
        self.expires_at = link.expires_at();
        self.disabled = link.disabled();
        self.forward_query = link.forward_query();
        self.password_tag = link.password_tag();
        self.max_visits = link.max_visits();
        self.created_day = link.created_day();
        self.target.clear();
        self.target
            .extend_from_slice(link.target(DeviceClass::Other));
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

    fn password_tag(&self) -> Option<u32> {
        self.password_tag
    }

    fn max_visits(&self) -> Option<u64> {
        self.max_visits
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

/// What a slot holds besides its stamp.
struct Slot {
    code_len: u8,
    code: [u8; MAX_CODE],
    link: Front,
}

/// The slots, with their stamps apart: a request reads its slot's stamp
/// (32 bytes of a 256 KiB array) and the slot itself only when the stamp
/// matches. With the stamp inside each 112-byte slot, the first read of a
/// slot was a cache miss on most requests that then went to the zone.
struct Table {
    stamps: Vec<FrontStamp>,
    slots: Vec<Option<Slot>>,
}

/// The stamp of a slot never filled: it serves no code (its slot is
/// empty) and yields to any.
const EMPTY: FrontStamp = FrontStamp {
    generation: u64::MAX,
    hash: 0,
    filled: 0,
    fresh_until: 0,
};

thread_local! {
    static SLOT_TABLE: RefCell<Table> = RefCell::new(Table {
        stamps: vec![EMPTY; SLOTS],
        slots: (0..SLOTS).map(|_| None).collect(),
    });
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
        let i = hash as usize % SLOTS;
        if !table.stamps[i].serves(generation, hash, now as u64) {
            return None;
        }
        let slot = table.slots[i].as_ref()?;
        (&slot.code[..slot.code_len as usize] == code).then(|| f(&slot.link))
    })
}

/// Copies `link` (seen in the zone at `generation`, its entry stale after
/// `fresh_until`) into the slot for `code`, unless the slot holds another
/// link's current copy.
pub fn put(
    code: &[u8],
    hash: u64,
    generation: u64,
    now: ngx_msec_t,
    link: &impl LinkView,
    fresh_until: ngx_msec_t,
) {
    if code.len() > MAX_CODE {
        return;
    }
    SLOT_TABLE.with(|table| {
        let Ok(mut table) = table.try_borrow_mut() else {
            return;
        };
        let i = hash as usize % SLOTS;
        if !table.stamps[i].yields_to(generation, hash, now as u64) {
            return;
        }
        table.stamps[i] = FrontStamp {
            generation,
            hash,
            filled: now as u64,
            fresh_until: fresh_until as u64,
        };
        let slot = table.slots[i].get_or_insert_with(|| Slot {
            code_len: 0,
            code: [0; MAX_CODE],
            link: Front::empty(),
        });
        slot.code_len = code.len() as u8;
        slot.code[..code.len()].copy_from_slice(code);
        slot.link.copy_of(link);
    });
}
