//! The layout of one cached answer in the zone (a node of the link table in
//! `links.rs`): part of the zone's layout, so a change here bumps the
//! zone's `LAYOUT` in `zone.rs`.

use nginx_sys::{ngx_msec_t, ngx_queue_t};

/// A cached answer; the code, the targets, with [`COUNTRIES`] the country
/// targets and with [`VARIANTS`] the A/B variants (each a
/// `shortlink_core::entry::Table`) follow the struct in the same
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
    /// The link's own redirect status less 200 (0: none, the location's).
    pub(super) status: u8,
    pub(super) code_len: u8,
    /// The answer's kind (`KIND_MASK`), `DISABLED`, the link's own
    /// `forward_query` (`FORWARD_MASK`), `PROTECTED`, `COUNTRIES`,
    /// `VARIANTS` and `LIMITED`: with the one-byte status, the entry stays
    /// 80 bytes with the creation day.
    pub(super) flags: u16,
    /// Days since 1970-01-01 when the link was made, for its preview
    /// (`shortlink_core::preview::day_of`).
    pub(super) created_day: u16,
    /// Byte lengths of the targets, indexed by `DeviceClass as usize`.
    pub(super) lens: [u16; 5],
}

// The entry size the README's entries-per-MiB figure is worked out from.
#[cfg(target_pointer_width = "64")]
const _: () = assert!(core::mem::size_of::<LinkNode>() == 80);

/// `flags`: found, not found or gone (`links.rs`'s `KIND_*`).
pub(super) const KIND_MASK: u16 = 0b0000_0011;
/// `flags`: switched off.
pub(super) const DISABLED: u16 = 0b0000_0100;
/// `flags`: the link's `forward_query`, [`FORWARD_ON`] or [`FORWARD_OFF`];
/// neither leaves it to the location.
pub(super) const FORWARD_MASK: u16 = 0b0001_1000;
pub(super) const FORWARD_ON: u16 = 0b0000_1000;
pub(super) const FORWARD_OFF: u16 = 0b0001_0000;
/// `flags`: visitors must give a password (the hash stays in the daemon):
/// its tag, 4 bytes little-endian, follows the last table.
pub(super) const PROTECTED: u16 = 0b0010_0000;
/// `flags`: the link has country targets: their table
/// (`shortlink_core::entry`) follows the targets.
pub(super) const COUNTRIES: u16 = 0b0100_0000;
/// `flags`: the link has A/B variants: their table follows the country
/// table (or the targets, without one).
pub(super) const VARIANTS: u16 = 0b1000_0000;
/// `flags`: the link has a visit limit: its `max_visits`, 8 bytes
/// little-endian, follows the password tag (or the last table).
pub(super) const LIMITED: u16 = 0b1_0000_0000;

/// The `flags` bits of a link's `forward_query`.
pub(super) fn forward_bits(forward_query: Option<bool>) -> u16 {
    match forward_query {
        None => 0,
        Some(true) => FORWARD_ON,
        Some(false) => FORWARD_OFF,
    }
}

/// A link's `forward_query` from its `flags`.
pub(super) fn forward_of(flags: u16) -> Option<bool> {
    match flags & FORWARD_MASK {
        FORWARD_ON => Some(true),
        FORWARD_OFF => Some(false),
        _ => None,
    }
}
