//! The `shortlink_clicks` zone: a slot of click pages per worker, in shared
//! memory, so what a worker counted outlives it. Added with the daemon link
//! (`shortlink_pass`), sized for twice the workers (a reload's old and new
//! workers overlap) plus two.
//!
//! A slot belongs to the worker whose pid is in `owner`; only it writes the
//! slot's pages, so counting takes no lock. A worker claims its slot at
//! start: the one of its worker number if that one is free or its owner
//! died (so the worker nginx starts in place of a crashed one takes its
//! predecessor's counts over), else any free one. It also adopts every
//! other slot whose owner died, or that was left with counts in it, and
//! delivers those: claims are compare-and-swap on `owner`, so one worker
//! wins each slot.

use core::mem::size_of;
use core::ptr::{self, NonNull};
use core::sync::atomic::{AtomicU32, Ordering};

use nginx_sys::{ngx_conf_t, ngx_int_t, ngx_shm_zone_t, ngx_slab_pool_t, ngx_str_t, NGX_OK};

use super::page::{Page, PageRef, EMPTY, FILLING};
use crate::cache::Locked;
use crate::guard::guard;

/// Pages per slot: one filling, the others sealed and on their way.
pub const PAGES: usize = 4;
/// Name of the zone nginx lists (`nginx -T`, errors).
const ZONE_NAME: &str = "shortlink_clicks";
/// Identifies this layout of the zone and of a slot ("SLCLK" + version).
const LAYOUT: u64 = u64::from_be_bytes(*b"SLCLK003");

/// A worker's pages.
#[repr(C)]
pub struct Slot {
    /// `LAYOUT` once the slot's pages were zeroed for use.
    magic: u64,
    /// Pid of the worker that holds the slot; 0 when free.
    owner: AtomicU32,
    _pad: u32,
    pages: [Page; PAGES],
}

/// The zone's header, in the slab pool's `data`.
#[repr(C)]
struct Header {
    magic: u64,
    slot_size: u64,
    count: usize,
    slots: *mut *mut Slot,
}

/// Adds the zone for `workers` worker processes while the configuration is
/// parsed; `None` (with an `[emerg]` logged by nginx) when it cannot.
///
/// # Safety
/// `cf` must be the configuration being parsed.
pub unsafe fn add(cf: *mut ngx_conf_t, workers: usize) -> Option<NonNull<ngx_shm_zone_t>> {
    let count = (2 * workers + 2).clamp(4, 4096);
    // Each slot takes whole pages of the slab; add the slab's bookkeeping
    // (a descriptor per page) and room for the header.
    // SAFETY: ngx_pagesize is set before the configuration is parsed.
    let page = unsafe { nginx_sys::ngx_pagesize };
    let pages_per_slot = size_of::<Slot>().div_ceil(page);
    let size = (count * pages_per_slot + 16) * (page + 64) + 64 * 1024;
    let mut name = ngx_str_t {
        len: ZONE_NAME.len(),
        data: ZONE_NAME.as_ptr().cast_mut(),
    };
    // SAFETY: adding a shared zone tagged with this module while the
    // configuration is parsed; nginx copies the name.
    let zone = unsafe {
        nginx_sys::ngx_shared_memory_add(
            cf,
            &mut name,
            size,
            ptr::addr_of_mut!(crate::ngx_http_shortlink_module).cast(),
        )
    };
    let mut zone = NonNull::new(zone)?;
    // SAFETY: the zone nginx just returned, live for the cycle.
    let shm = unsafe { zone.as_mut() };
    shm.init = Some(init_zone);
    shm.data = count as *mut core::ffi::c_void;
    Some(zone)
}

/// `init` callback of the zone: keeps the previous cycle's slots (a reload
/// with the same worker count), or lays out fresh ones.
unsafe extern "C" fn init_zone(
    zone: *mut ngx_shm_zone_t,
    old: *mut core::ffi::c_void,
) -> ngx_int_t {
    // SAFETY: nginx passes our zone, live for the cycle.
    let log = unsafe { (*zone).shm.log };
    guard(
        "click zone init",
        || log,
        nginx_sys::NGX_ERROR as ngx_int_t,
        || {
            // SAFETY: as above; shm.addr is the zone's slab pool.
            let Some(pool) = NonNull::new(unsafe { (*zone).shm.addr }.cast::<ngx_slab_pool_t>())
            else {
                return nginx_sys::NGX_ERROR as ngx_int_t;
            };
            // SAFETY: as above; data holds the slot count set by `add`.
            let count = unsafe { (*zone).data } as usize;
            let lock = Locked::new(pool);
            // SAFETY: the pool's data is null or a header made below, by this
            // module (the zone is tagged with it).
            let existing = unsafe { (*pool.as_ptr()).data.cast::<Header>() };
            // SAFETY: as above.
            if !old.is_null() && !existing.is_null() && unsafe { (*existing).magic } == LAYOUT {
                return NGX_OK as ngx_int_t;
            }
            match lay_out(&lock, count) {
                Some(header) => {
                    // SAFETY: the locked pool; its data now points at the header.
                    unsafe {
                        (*pool.as_ptr()).data = header.cast();
                        (*pool.as_ptr()).set_log_nomem(0);
                    }
                    NGX_OK as ngx_int_t
                }
                None => {
                    ngx::ngx_log_error!(
                        nginx_sys::NGX_LOG_EMERG,
                        log,
                        "shortlink: no room for {} click slots in \"{}\"",
                        count,
                        ZONE_NAME
                    );
                    nginx_sys::NGX_ERROR as ngx_int_t
                }
            }
        },
    )
}

/// Allocates the header and `count` slots, each marked free and unused.
fn lay_out(lock: &Locked, count: usize) -> Option<*mut Header> {
    let header = lock.alloc(size_of::<Header>()).cast::<Header>();
    let table = lock
        .alloc(count * size_of::<*mut Slot>())
        .cast::<*mut Slot>();
    if header.is_null() || table.is_null() {
        return None;
    }
    for i in 0..count {
        let slot = lock.alloc(size_of::<Slot>()).cast::<Slot>();
        if slot.is_null() {
            return None;
        }
        // SAFETY: a fresh allocation of a Slot; only its head is written
        // now (its pages are zeroed when a worker first claims it), so the
        // pages of slots never used are never touched.
        unsafe {
            ptr::addr_of_mut!((*slot).magic).write(0);
            ptr::addr_of_mut!((*slot).owner).write(AtomicU32::new(0));
            table.add(i).write(slot);
        }
    }
    // SAFETY: a fresh allocation of the header.
    unsafe {
        header.write(Header {
            magic: LAYOUT,
            slot_size: size_of::<Slot>() as u64,
            count,
            slots: table,
        })
    };
    Some(header)
}

/// The slots of an initialised zone; cheap to copy, valid for the worker's
/// life.
#[derive(Clone, Copy)]
pub struct ClickZone {
    header: NonNull<Header>,
}

/// A slot a worker holds (its own or an adopted one).
pub struct Held {
    /// Index in the zone (`usize::MAX` for a private slot).
    pub index: usize,
    pub slot: NonNull<Slot>,
}

impl Held {
    /// The slot's pages.
    pub fn pages(&self) -> [PageRef; PAGES] {
        // SAFETY: the slot is held by this worker (claimed, or private), so
        // it alone uses its pages, which live as long as the zone.
        core::array::from_fn(|i| unsafe {
            PageRef::new(ptr::addr_of_mut!((*self.slot.as_ptr()).pages[i]))
        })
    }

    /// True when some page holds counts (by the page states: a filling
    /// page may be empty, a sealed one never is).
    pub fn has_counts(&self) -> bool {
        // SAFETY: reading the state words of a live slot's pages.
        let magic = unsafe { ptr::addr_of!((*self.slot.as_ptr()).magic).read() };
        magic == LAYOUT
            && self
                .pages()
                .iter()
                .any(|p| p.state() != EMPTY && (p.state() != FILLING || p.has_rows()))
    }
}

impl ClickZone {
    /// The slots in `zone`, once nginx has initialised it.
    ///
    /// # Safety
    /// `zone` must be the zone made by [`add`], used only while mapped.
    pub unsafe fn from_zone(zone: NonNull<ngx_shm_zone_t>) -> Option<Self> {
        // SAFETY: per the contract, shm.addr is the zone's slab pool.
        let pool = unsafe { zone.as_ref() }.shm.addr.cast::<ngx_slab_pool_t>();
        // SAFETY: as above; data is the header once init_zone has run.
        let header = NonNull::new(unsafe { pool.as_ref() }?.data.cast::<Header>())?;
        // SAFETY: a header this module wrote.
        let ok = unsafe { header.as_ref() }.magic == LAYOUT
            && unsafe { header.as_ref() }.slot_size == size_of::<Slot>() as u64;
        ok.then_some(ClickZone { header })
    }

    /// Slots in the zone.
    pub fn len(&self) -> usize {
        // SAFETY: the header lives as long as the zone.
        unsafe { self.header.as_ref() }.count
    }

    fn slot(&self, i: usize) -> NonNull<Slot> {
        // SAFETY: i < count: the table holds count live slot pointers.
        unsafe {
            let h = self.header.as_ref();
            NonNull::new_unchecked(*h.slots.add(i))
        }
    }

    fn owner(&self, i: usize) -> &AtomicU32 {
        // SAFETY: a live slot; the owner word is only ever used atomically.
        unsafe { &*ptr::addr_of!((*self.slot(i).as_ptr()).owner) }
    }

    /// Takes slot `i` from `from` (0: free, else a dead owner) for `pid`.
    fn take(&self, i: usize, from: u32, pid: u32) -> Option<Held> {
        self.owner(i)
            .compare_exchange(from, pid, Ordering::AcqRel, Ordering::Acquire)
            .ok()?;
        let slot = self.slot(i);
        // SAFETY: the slot is ours now; a slot never used gets its pages
        // zeroed first (empty, no rows).
        unsafe {
            let s = slot.as_ptr();
            if ptr::addr_of!((*s).magic).read() != LAYOUT {
                ptr::write_bytes(
                    ptr::addr_of_mut!((*s).pages).cast::<u8>(),
                    0,
                    size_of::<[Page; PAGES]>(),
                );
                ptr::addr_of_mut!((*s).magic).write(LAYOUT);
            }
        }
        Some(Held { index: i, slot })
    }

    /// This worker's own slot: the one of worker number `worker` if it is
    /// free or its owner died, else any free one, else any whose owner
    /// died.
    pub fn claim(&self, worker: usize, pid: u32) -> Option<Held> {
        let n = self.len();
        let preferred = worker % n;
        let order = core::iter::once(preferred).chain((0..n).filter(|&i| i != preferred));
        let owners: Vec<(usize, u32)> = order
            .map(|i| (i, self.owner(i).load(Ordering::Acquire)))
            .collect();
        let free = |&&(i, o): &&(usize, u32)| o == 0 || (i == preferred && !alive(o));
        for &(i, o) in owners.iter().filter(free) {
            if let Some(held) = self.take(i, o, pid) {
                return Some(held);
            }
        }
        owners
            .iter()
            .filter(|&&(_, o)| o != 0 && o != pid && !alive(o))
            .find_map(|&(i, o)| self.take(i, o, pid))
    }

    /// Slots to deliver for others: those whose owner died, and free ones
    /// left with counts in them. Each is this worker's once returned.
    pub fn adopt_orphans(&self, pid: u32) -> Vec<Held> {
        (0..self.len())
            .filter_map(|i| {
                let o = self.owner(i).load(Ordering::Acquire);
                match o {
                    // A free slot is written by nobody: a look at its page
                    // states is safe, and only one that has counts is taken.
                    0 if self.peek(i).has_counts() => {
                        let held = self.take(i, 0, pid)?;
                        if held.has_counts() {
                            Some(held)
                        } else {
                            self.release(&held);
                            None
                        }
                    }
                    o if o != pid && !alive(o) => self.take(i, o, pid),
                    _ => None,
                }
            })
            .collect()
    }

    /// Slot `i` as it is, without holding it (to look only).
    fn peek(&self, i: usize) -> Held {
        Held {
            index: i,
            slot: self.slot(i),
        }
    }

    /// Gives a slot back (its counts, if any, stay for the next taker).
    pub fn release(&self, held: &Held) {
        if held.index < self.len() {
            self.owner(held.index).store(0, Ordering::Release);
        }
    }
}

/// True while process `pid` exists (a worker of ours: same user).
fn alive(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    // SAFETY: kill(2) with signal 0 only checks the process exists.
    if unsafe { libc::kill(pid, 0) } == 0 {
        return true;
    }
    std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// A slot in the worker's own memory, for a worker that found none free in
/// the zone: counting works the same, but does not survive the worker.
pub fn private_slot() -> Option<Held> {
    let layout = std::alloc::Layout::new::<Slot>();
    // SAFETY: a non-zero-sized layout; all-zero is a valid, empty slot.
    let slot = NonNull::new(unsafe { std::alloc::alloc_zeroed(layout) }.cast::<Slot>())?;
    // SAFETY: the fresh, zeroed slot: its pages are empty.
    unsafe { ptr::addr_of_mut!((*slot.as_ptr()).magic).write(LAYOUT) };
    Some(Held {
        index: usize::MAX,
        slot,
    })
}

/// Frees a slot made by [`private_slot`].
pub fn free_private(held: Held) {
    if held.index == usize::MAX {
        // SAFETY: allocated by private_slot with this layout, not used after.
        unsafe {
            std::alloc::dealloc(held.slot.as_ptr().cast(), std::alloc::Layout::new::<Slot>())
        };
    }
}
