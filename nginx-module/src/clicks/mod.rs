//! `ClickBook`: a worker's click counts, per (link, hour, device class, bot
//! flag, A/B variant, referrer host, country), kept in pages of a slot of
//! the `shortlink_clicks` zone, so a worker killed by any signal loses no
//! counted click: the worker that takes its slot (or adopts it) delivers
//! what it left.
//!
//! The hot path adds to the worker's filling page, in memory no other
//! worker writes, with no lock. Every flush seals that page into a batch
//! under the batch id it got when it opened, and the batch stays until the
//! daemon acknowledges it: a batch sent again (after a reconnect, a retry,
//! from a spool file or by a successor) counts once. Batches stay within
//! `ClickBatch::validate`: rows of at most `MAX_ROW_COUNT`, referrers that
//! are host names, hours from the worker's clock.
//!
//! * `page.rs`: a page of counts and its crash-safe writes;
//! * `slots.rs`: the zone, and claiming, adopting and releasing slots;
//! * `spool.rs`: sealed spool files, for what the daemon cannot take.

use core::ptr;
use core::sync::atomic::{AtomicPtr, Ordering};
use std::path::PathBuf;

use rustc_hash::FxHashMap;
use shortlink_core::country::Country;
use shortlink_core::device::DeviceClass;
use shortlink_core::ipc::{BatchId, ClickBatch, ClickCount};
use shortlink_core::spool::SpoolSeal;

mod page;
mod slots;
mod spool;

pub use page::Key;
use page::{Page, PageRef, EMPTY, FILLING, SEALED};
pub use slots::{add as add_zone, ClickZone};
use slots::{Held, PAGES};
pub use spool::SpoolError;

/// The filling page of this worker's own slot, where the hot path counts
/// without going through the book. A worker runs one thread, so this
/// process-wide pointer is this worker's; null when there is none.
static FILLING_PAGE: AtomicPtr<Page> = AtomicPtr::new(ptr::null_mut());

/// Counts one redirect in the worker's filling page; `false` when it has
/// to go through [`ClickBook::record`] (no page, or the page is full).
#[inline]
pub fn count_fast(key: &Key<'_>) -> bool {
    let page = FILLING_PAGE.load(Ordering::Relaxed);
    // SAFETY: the pointer is only ever set by the book to its own slot's
    // filling page (which it holds until it resets the pointer), and this
    // worker's one thread is the only one counting.
    !page.is_null() && unsafe { PageRef::new(page) }.add(key, 1).is_ok()
}

/// Which page of which held slot: the slot's index in the zone
/// (`usize::MAX` for a private slot) and the page's.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct PageKey {
    slot: usize,
    page: usize,
}

/// Where a sealed page is on its way to the daemon.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Sent {
    /// Not sent on the current connection.
    No,
    /// Sent, no answer yet.
    InFlight,
    /// The daemon could not store it: waiting for the retry timer.
    Failed,
}

struct HeldSlot {
    held: Held,
    pages: [PageRef; PAGES],
    sent: [Sent; PAGES],
}

/// A click that found no room in any page (all sealed and waiting), kept
/// in the worker's own memory until a page is free.
#[derive(Hash, PartialEq, Eq)]
struct OwnedKey {
    link_id: u64,
    hour: u32,
    device: DeviceClass,
    bot: bool,
    referrer: Option<Box<[u8]>>,
    country: Country,
    variant: u8,
}

/// What starting the book found, for the worker to log.
pub struct Start {
    /// Slots with counts of workers gone (this worker's own, taken over
    /// from the one it replaces, included) taken over for delivery.
    pub adopted: usize,
    /// No slot was free: counts live in this worker's memory only.
    pub private: bool,
}

/// Click counts of one worker.
pub struct ClickBook {
    zone: Option<ClickZone>,
    /// The worker's own slot first, then adopted ones being delivered.
    slots: Vec<HeldSlot>,
    /// The own slot's filling page, where the hot path counts.
    filling: Option<PageRef>,
    overflow: FxHashMap<OwnedKey, u32>,
    pid: u32,
    started_ms: u64,
    seq: u64,
    spool: Option<PathBuf>,
    /// Seals spool files: the daemon counts only files sealed with the key.
    seal: SpoolSeal,
}

impl ClickBook {
    /// The book of worker number `worker` (process `pid`, started at
    /// `started_ms`: its batch ids), in a slot of `zone` if one is free,
    /// with the slots of dead workers adopted; spool files go to `spool`.
    pub fn start(
        zone: Option<ClickZone>,
        worker: usize,
        pid: u32,
        started_ms: u64,
        spool: Option<PathBuf>,
        seal: SpoolSeal,
    ) -> Option<(Self, Start)> {
        let own = zone.and_then(|z| z.claim(worker, pid));
        let private = own.is_none();
        let own = match own {
            Some(held) => held,
            None => slots::private_slot()?,
        };
        // The slot of a worker that died in this one's place, with its counts.
        let inherited = usize::from(own.has_counts());
        let mut book = Self {
            zone,
            slots: Vec::new(),
            filling: None,
            overflow: FxHashMap::default(),
            pid,
            started_ms,
            seq: 0,
            spool,
            seal,
        };
        book.hold(own);
        book.rotate();
        let adopted = inherited + book.adopt_orphans();
        Some((book, Start { adopted, private }))
    }

    /// Takes a slot: what a previous holder was filling is sealed under
    /// its batch id (it stops growing), empty pages are cleared.
    fn hold(&mut self, held: Held) {
        let pages = held.pages();
        for page in &pages {
            match page.state() {
                FILLING if page.has_rows() => page.seal(),
                SEALED => {}
                _ => page.clear(),
            }
        }
        self.slots.push(HeldSlot {
            held,
            pages,
            sent: [Sent::No; PAGES],
        });
    }

    /// Adopts the slots of dead workers (and free ones left with counts);
    /// returns how many.
    pub fn adopt_orphans(&mut self) -> usize {
        let Some(zone) = self.zone else {
            return 0;
        };
        let found = zone.adopt_orphans(self.pid);
        let n = found.len();
        for held in found {
            self.hold(held);
        }
        n
    }

    /// The page the hot path counts into, here and in [`FILLING_PAGE`].
    fn set_filling(&mut self, page: Option<PageRef>) {
        self.filling = page;
        let ptr = page.map_or(ptr::null_mut(), |p| p.as_ptr());
        FILLING_PAGE.store(ptr, Ordering::Relaxed);
    }

    fn next_id(&mut self) -> BatchId {
        self.seq += 1;
        let mut id = [0u8; 16];
        id[..4].copy_from_slice(&self.pid.to_be_bytes());
        id[4..10].copy_from_slice(&self.started_ms.to_be_bytes()[2..]);
        id[10..].copy_from_slice(&self.seq.to_be_bytes()[2..]);
        BatchId(id)
    }

    /// Seals the filling page (if it has counts) and opens an empty one;
    /// false when no page is empty (the filling page, if any, stays).
    fn rotate(&mut self) -> bool {
        let Some(own) = self.slots.first() else {
            return false;
        };
        let Some(next) = own.pages.iter().copied().find(|p| p.state() == EMPTY) else {
            return false;
        };
        if let Some(current) = self.filling {
            if !current.has_rows() {
                return true;
            }
            current.seal();
        }
        let id = self.next_id();
        next.open(id);
        self.set_filling(Some(next));
        true
    }

    /// Counts one redirect that [`count_fast`] could not; true when that
    /// sealed the full filling page into a batch, which should go to the
    /// daemon now rather than at the next flush (at a high click rate the
    /// pages would otherwise run out between flushes and go to the spool).
    pub fn record(&mut self, key: &Key<'_>) -> bool {
        if let Some(page) = self.filling {
            if page.add(key, 1).is_ok() {
                return false;
            }
        }
        self.record_slow(key, 1)
    }

    /// The filling page is full: another one, or the overflow. True when
    /// a page with counts was sealed.
    #[cold]
    fn record_slow(&mut self, key: &Key<'_>, n: u32) -> bool {
        let had_rows = self.filling.is_some_and(|p| p.has_rows());
        if self.rotate() {
            if let Some(page) = self.filling {
                if page.add(key, n).is_ok() {
                    return had_rows;
                }
            }
        }
        let owned = OwnedKey {
            link_id: key.link_id,
            hour: key.hour,
            device: key.device,
            bot: key.bot,
            referrer: key.referrer.map(|r| r.to_ascii_lowercase().into()),
            country: key.country,
            variant: key.variant,
        };
        let c = self.overflow.entry(owned).or_insert(0);
        *c = c.saturating_add(n);
        false
    }

    /// The flush: seals the filling page into a batch if a page is free to
    /// take over, and moves what overflowed into pages as far as they have
    /// room.
    pub fn seal_filling(&mut self) {
        if self.filling.is_some_and(|p| p.has_rows()) {
            self.rotate();
        }
        if self.overflow.is_empty() {
            return;
        }
        for (k, count) in std::mem::take(&mut self.overflow) {
            let key = Key {
                link_id: k.link_id,
                hour: k.hour,
                device: k.device,
                bot: k.bot,
                referrer: k.referrer.as_deref(),
                country: k.country,
                variant: k.variant,
            };
            // Large counts go in parts a row can take.
            let mut left = count;
            while left > 0 {
                let part = left.min(shortlink_core::clicks::MAX_ROW_COUNT);
                self.record_slow(&key, part);
                left -= part;
            }
        }
    }

    /// True when counts wait in the worker's own memory for a free page:
    /// the sealed pages should go to the spool.
    pub fn pressed(&self) -> bool {
        !self.overflow.is_empty()
    }

    /// The sealed pages to send: those not sent yet, or with `retry`, those
    /// the daemon failed to store. Each is marked in flight.
    pub fn take_due(&mut self, retry: bool) -> Vec<(PageKey, ClickBatch)> {
        let mut out = Vec::new();
        for slot in &mut self.slots {
            for (i, page) in slot.pages.iter().enumerate() {
                let due = match slot.sent[i] {
                    Sent::No => true,
                    Sent::Failed => retry,
                    Sent::InFlight => false,
                };
                if due && page.state() == SEALED {
                    slot.sent[i] = Sent::InFlight;
                    let key = PageKey {
                        slot: slot.held.index,
                        page: i,
                    };
                    out.push((key, page.batch()));
                }
            }
        }
        out
    }

    /// True when a batch waits for the retry timer.
    pub fn has_failed(&self) -> bool {
        self.slots.iter().any(|s| s.sent.contains(&Sent::Failed))
    }

    fn find(&mut self, key: PageKey, id: BatchId) -> Option<(&mut HeldSlot, PageRef)> {
        let slot = self.slots.iter_mut().find(|s| s.held.index == key.slot)?;
        let page = *slot.pages.get(key.page)?;
        (page.state() == SEALED && page.batch_id() == id).then_some((slot, page))
    }

    /// The daemon is done with a batch (stored it, or refused it for
    /// good): its page is cleared. Returns the batch's clicks.
    fn done(&mut self, key: PageKey, id: BatchId) -> Option<u64> {
        let (slot, page) = self.find(key, id)?;
        let clicks = page.batch().total();
        page.clear();
        slot.sent[key.page] = Sent::No;
        self.release_delivered();
        Some(clicks)
    }

    /// The daemon stored this batch: returns its clicks, `None` if it was
    /// not held.
    pub fn acked(&mut self, key: PageKey, id: BatchId) -> Option<u64> {
        self.done(key, id)
    }

    /// The daemon refused this batch for good (it breaks the click bounds):
    /// forgets it; returns its clicks, `None` if it was not held.
    pub fn refused(&mut self, key: PageKey, id: BatchId) -> Option<u64> {
        self.done(key, id)
    }

    /// The daemon could not store this batch: it waits for a retry.
    pub fn failed(&mut self, key: PageKey, id: BatchId) {
        if let Some((slot, _)) = self.find(key, id) {
            slot.sent[key.page] = Sent::Failed;
        }
    }

    /// The connection is gone: every sealed page goes again on the next.
    pub fn connection_lost(&mut self) {
        for slot in &mut self.slots {
            slot.sent = [Sent::No; PAGES];
        }
    }

    /// Gives back adopted slots that have nothing left to deliver.
    fn release_delivered(&mut self) {
        let Some(zone) = self.zone else {
            return;
        };
        let mut i = 1;
        while i < self.slots.len() {
            if self.slots[i].pages.iter().all(|p| p.state() == EMPTY) {
                let slot = self.slots.remove(i);
                zone.release(&slot.held);
            } else {
                i += 1;
            }
        }
    }

    /// Clicks held (in pages and overflow).
    pub fn held_clicks(&self) -> u64 {
        let pages: u64 = self
            .slots
            .iter()
            .flat_map(|s| &s.pages)
            .filter(|p| p.state() != EMPTY)
            .map(|p| p.batch().total())
            .sum();
        pages + self.overflow.values().map(|&c| u64::from(c)).sum::<u64>()
    }

    /// Writes the sealed pages (and, at exit, the filling ones) and the
    /// overflow to one spool file and forgets them. Returns the clicks
    /// written; `Err` leaves everything as it was.
    pub fn spool_all(&mut self, at_exit: bool) -> Result<u64, SpoolError> {
        let mut pages = Vec::new();
        let mut batches = Vec::new();
        for (s, slot) in self.slots.iter().enumerate() {
            for (i, page) in slot.pages.iter().enumerate() {
                let state = page.state();
                if state == SEALED || (at_exit && state == FILLING && page.has_rows()) {
                    pages.push((s, i));
                    batches.push(page.batch());
                }
            }
        }
        let overflow: Vec<ClickCount> = self
            .overflow
            .iter()
            .flat_map(|(k, &count)| {
                ClickCount {
                    link_id: k.link_id,
                    hour: k.hour,
                    device: k.device,
                    bot: k.bot,
                    referrer: k
                        .referrer
                        .as_deref()
                        .map(|r| String::from_utf8_lossy(r).into_owned()),
                    count,
                    country: k.country,
                    variant: k.variant,
                }
                .split()
            })
            .collect();
        if !overflow.is_empty() {
            let batch_id = self.next_id();
            batches.push(ClickBatch {
                batch_id,
                clicks: overflow,
            });
        }
        if batches.is_empty() {
            return Ok(0);
        }
        let Some(dir) = self.spool.clone() else {
            return Err(SpoolError::NotConfigured);
        };
        let name = format!("clicks-{}-{}-{}.spool", self.pid, self.started_ms, self.seq);
        spool::write(&dir, &name, &self.seal, &batches)?;
        // A spooled page may be in flight: its late answer names a batch
        // the page no longer holds and is ignored, so the page is marked
        // unsent here, or the next batch it holds would never be sent.
        for (s, i) in pages {
            let slot = &mut self.slots[s];
            slot.pages[i].clear();
            slot.sent[i] = Sent::No;
        }
        self.overflow.clear();
        if self.filling.is_some_and(|p| p.state() != FILLING) {
            self.set_filling(None);
        }
        self.release_delivered();
        if self.filling.is_none() && !at_exit {
            self.rotate();
        }
        Ok(batches.iter().map(ClickBatch::total).sum())
    }

    /// Worker exit: gives every slot back; counts left in them (if they
    /// could not be spooled) wait there for the next worker that starts.
    pub fn release(&mut self) {
        self.set_filling(None);
        for slot in self.slots.drain(..) {
            match self.zone {
                Some(zone) if slot.held.index != usize::MAX => zone.release(&slot.held),
                _ => slots::free_private(slot.held),
            }
        }
    }
}
