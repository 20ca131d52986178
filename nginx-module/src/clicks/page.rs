//! A page of click counts: a fixed open-addressing table of rows (link,
//! hour, device class, bot flag, A/B variant, referrer host, country →
//! count) and an arena for the referrer bytes, in memory that outlives the
//! worker (a slot of the `shortlink_clicks` zone, see `slots.rs`).
//!
//! A page is `EMPTY`, `FILLING` (the hot path counts into it) or `SEALED`
//! (its counts are one batch, under the batch id it got when it started
//! filling, kept until the daemon acknowledges it). A worker that dies at
//! any instruction leaves pages another worker can deliver: a row becomes
//! visible only when its count is written, after its key, and a sealed page
//! never changes until it is cleared, so its batch id counts it once.

use core::ptr;

use shortlink_core::click_row::{from_visitor_byte, variant_number, visitor_byte};
use shortlink_core::clicks::MAX_ROW_COUNT;
use shortlink_core::country::Country;
use shortlink_core::device::DeviceClass;
use shortlink_core::ipc::{BatchId, ClickBatch, ClickCount};

/// Rows per page (a power of two); a page takes keys up to 3/4 of it.
pub const ROWS: usize = 8192;
const MAX_USED: u32 = (ROWS * 3 / 4) as u32;
/// Bytes of referrer hosts per page.
pub const ARENA: usize = 96 * 1024;

/// Page states, as stored.
pub const EMPTY: u32 = 0;
pub const FILLING: u32 = 1;
pub const SEALED: u32 = 2;

/// One count; empty while `count` is 0.
#[repr(C)]
struct Row {
    link_id: u64,
    hour: u32,
    count: u32,
    ref_off: u32,
    /// 0: no referrer (a referrer host is at most 253 bytes).
    ref_len: u8,
    /// The device class, the variant number and the bot flag
    /// (`shortlink_core::click_row`).
    visitor: u8,
    /// The country's two bytes (`--`: unknown); the row stays 24 bytes.
    country: [u8; 2],
}

const _: () = assert!(core::mem::size_of::<Row>() == 24);

/// A page as laid out in the zone.
#[repr(C)]
pub struct Page {
    state: u32,
    /// Entries of `order` in use.
    used: u32,
    /// Arena bytes in use.
    arena_used: u32,
    _pad: u32,
    batch_id: [u8; 16],
    /// The rows taken, in the order they were: a flush reads and clears
    /// those, not the whole table.
    order: [u16; MAX_USED as usize],
    rows: [Row; ROWS],
    arena: [u8; ARENA],
}

/// What is being counted: the referrer is the host as the request sent it
/// (checked by `referrer_host`), stored lower-cased.
#[derive(Clone, Copy)]
pub struct Key<'a> {
    pub link_id: u64,
    pub hour: u32,
    pub device: DeviceClass,
    pub bot: bool,
    pub referrer: Option<&'a [u8]>,
    pub country: Country,
    /// The A/B variant sent to: 0 for none, `i + 1` for variant `i`.
    pub variant: u8,
}

impl<'a> Key<'a> {
    /// The key of a redirect to link `link_id` at `unix_secs` with this
    /// `Referer`, to variant `variant` (its index) if one was picked;
    /// `None` for id 0 (no link; the daemon refuses such rows).
    #[inline]
    pub fn of(
        link_id: u64,
        unix_secs: i64,
        device: DeviceClass,
        bot: bool,
        referer: Option<&'a [u8]>,
        country: Country,
        variant: Option<u8>,
    ) -> Option<Self> {
        (link_id != 0).then(|| Key {
            link_id,
            hour: (unix_secs.max(0) / 3600) as u32,
            device,
            bot,
            referrer: referer.and_then(shortlink_core::device::referrer_host),
            country,
            variant: variant_number(variant),
        })
    }
}

impl Key<'_> {
    /// The device class, variant and bot flag as a row stores them.
    #[inline]
    fn visitor(&self) -> u8 {
        visitor_byte(self.device, self.bot, self.variant)
    }

    /// FxHash-style mix of the key, the referrer lower-cased.
    #[inline]
    fn hash(&self) -> u64 {
        const K: u64 = 0x51_7c_c1_b7_27_22_0a_95;
        let mix = |h: u64, v: u64| (h.rotate_left(5) ^ v).wrapping_mul(K);
        let mut h = mix(0, self.link_id);
        let [c0, c1] = self.country.bytes();
        h = mix(
            h,
            u64::from(self.hour) << 32
                | u64::from(c0) << 24
                | u64::from(c1) << 16
                | u64::from(self.visitor()),
        );
        for &b in self.referrer.unwrap_or_default() {
            h = mix(h, u64::from(b.to_ascii_lowercase()));
        }
        h
    }
}

/// Why a count did not go into the page: it has to be sealed.
#[derive(Debug, PartialEq, Eq)]
pub struct PageFull;

/// A page of the zone (or of a worker's private fallback slot), used by
/// one worker at a time.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct PageRef(*mut Page);

impl PageRef {
    /// # Safety
    /// `page` must point at a page that lives as long as this handle and
    /// that no other process writes while this worker holds its slot.
    pub unsafe fn new(page: *mut Page) -> Self {
        PageRef(page)
    }

    #[allow(clippy::mut_from_ref)]
    fn page(&self) -> &mut Page {
        // SAFETY: per `new`, this worker alone uses the page, and a handle
        // is never used while another reference from it is alive.
        unsafe { &mut *self.0 }
    }

    /// The page itself, for the worker's hot-path pointer.
    pub fn as_ptr(&self) -> *mut Page {
        self.0
    }

    /// The page's state (`EMPTY`, `FILLING`, `SEALED`).
    pub fn state(&self) -> u32 {
        // SAFETY: a live page; volatile, as another worker may read it
        // after this one died.
        unsafe { ptr::read_volatile(ptr::addr_of!((*self.0).state)) }
    }

    fn set_state(&self, state: u32) {
        // SAFETY: as in `state`; the store is not deferred past later ones.
        unsafe { ptr::write_volatile(ptr::addr_of_mut!((*self.0).state), state) }
    }

    /// The id the page's batch goes out under.
    pub fn batch_id(&self) -> BatchId {
        BatchId(self.page().batch_id)
    }

    /// True when some row holds clicks.
    pub fn has_rows(&self) -> bool {
        self.page().used > 0
    }

    /// An empty page starts filling under `id`.
    pub fn open(&self, id: BatchId) {
        self.page().batch_id = id.0;
        self.set_state(FILLING);
    }

    /// The page's counts are now one batch: nothing is added any more.
    pub fn seal(&self) {
        self.set_state(SEALED);
    }

    /// The rows taken (a dead worker's page is read with care: an entry
    /// may point at a row whose count was never written).
    fn taken(p: &Page) -> impl Iterator<Item = usize> + '_ {
        let used = (p.used as usize).min(p.order.len());
        p.order[..used]
            .iter()
            .map(|&at| usize::from(at))
            .filter(|&at| at < ROWS)
    }

    /// Forgets everything (the batch was acknowledged, spooled or refused).
    pub fn clear(&self) {
        let p = self.page();
        for i in 0..(p.used as usize).min(p.order.len()) {
            if let Some(row) = p.rows.get_mut(usize::from(p.order[i])) {
                row.count = 0;
            }
        }
        p.used = 0;
        p.arena_used = 0;
        self.set_state(EMPTY);
    }

    /// Adds `n` clicks of `key`; `Err` when the page has no room for a new
    /// key, its referrer, or the row's bound.
    #[inline]
    pub fn add(&self, key: &Key<'_>, n: u32) -> Result<(), PageFull> {
        let p = self.page();
        let referrer = key.referrer.unwrap_or_default();
        let (visitor, country) = (key.visitor(), key.country.bytes());
        let mut at = key.hash() as usize & (ROWS - 1);
        loop {
            let row = &mut p.rows[at];
            if row.count == 0 {
                break;
            }
            if row.link_id == key.link_id
                && row.hour == key.hour
                && row.visitor == visitor
                && row.country == country
                && usize::from(row.ref_len) == referrer.len()
                && p.arena[row.ref_off as usize..][..referrer.len()]
                    .iter()
                    .zip(referrer)
                    .all(|(&a, b)| a == b.to_ascii_lowercase())
            {
                if MAX_ROW_COUNT - row.count < n {
                    return Err(PageFull);
                }
                // SAFETY: a live row; volatile so the count lands in memory
                // now, where a successor reads it if this worker dies.
                unsafe { ptr::write_volatile(&mut row.count, row.count + n) };
                return Ok(());
            }
            at = (at + 1) & (ROWS - 1);
        }
        let off = p.arena_used as usize;
        if p.used >= MAX_USED || ARENA - off < referrer.len() || n > MAX_ROW_COUNT {
            return Err(PageFull);
        }
        for (dst, b) in p.arena[off..].iter_mut().zip(referrer) {
            *dst = b.to_ascii_lowercase();
        }
        p.arena_used += referrer.len() as u32;
        // The row is listed before it is written: a successor reading the
        // list finds every row with a count (and skips one without).
        p.order[p.used as usize] = at as u16;
        // SAFETY: a live page; the list entry lands before the row does.
        unsafe { ptr::write_volatile(&mut p.used, p.used + 1) };
        let row = &mut p.rows[at];
        row.link_id = key.link_id;
        row.hour = key.hour;
        row.visitor = visitor;
        row.country = country;
        row.ref_off = off as u32;
        row.ref_len = referrer.len() as u8;
        // SAFETY: as above; the count goes last, making the row visible.
        unsafe { ptr::write_volatile(&mut row.count, n) };
        Ok(())
    }

    /// The page's counts as a batch under its id. Rows that do not make
    /// sense (a page of a worker that died mid-write can hold a key without
    /// its count, never the reverse) are left out.
    pub fn batch(&self) -> ClickBatch {
        let p: &Page = self.page();
        let clicks = Self::taken(p)
            .map(|at| &p.rows[at])
            .filter(|r| r.count > 0 && r.count <= MAX_ROW_COUNT && r.link_id != 0)
            .filter_map(|r| {
                let referrer = match r.ref_len {
                    0 => None,
                    len => {
                        let bytes = p.arena.get(r.ref_off as usize..)?.get(..usize::from(len))?;
                        Some(String::from_utf8(bytes.to_vec()).ok()?)
                    }
                };
                let (device, bot, variant) = from_visitor_byte(r.visitor)?;
                Some(ClickCount {
                    link_id: r.link_id,
                    hour: r.hour,
                    device,
                    bot,
                    referrer,
                    count: r.count,
                    country: Country::from_edge(&r.country),
                    variant,
                })
            })
            .collect();
        ClickBatch {
            batch_id: self.batch_id(),
            clicks,
        }
    }
}
