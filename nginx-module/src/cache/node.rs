//! The layout of one cached answer in the zone (a node of the link table in
//! `links.rs`): part of the zone's layout, so a change here bumps the
//! zone's `LAYOUT` in `zone.rs`.

use nginx_sys::{ngx_msec_t, ngx_queue_t};

/// A cached answer; the code and the targets follow the struct in the same
/// allocation.
#[repr(C)]
pub struct LinkNode {
    /// Next node in the same bucket.
    pub(super) next: *mut LinkNode,
    pub(super) hash: u64,
    pub(super) queue: ngx_queue_t,
    /// `ngx_current_msec` after which the entry is stale.
    pub(super) fresh_until: ngx_msec_t,
    /// When a hit last moved it to the front of the queue.
    pub(super) touched: ngx_msec_t,
    pub(super) id: u64,
    /// Unix seconds; `i64::MIN` for none.
    pub(super) expires_at: i64,
    pub(super) status: u16,
    pub(super) kind: u8,
    pub(super) disabled: bool,
    pub(super) code_len: u8,
    /// Byte lengths of the targets, indexed by `DeviceClass as usize`.
    pub(super) lens: [u16; 5],
}
