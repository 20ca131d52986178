//! The edge's counters for `shortlink_status`, in the shared zone so any
//! worker answers for all:
//! one row per worker (its own cache lines, written with relaxed atomics
//! and no lock), plus an overflow row for a worker that found none free.
//!
//! A worker claims a row at start (compare-and-swap of its pid on a free
//! row or one whose owner died) and gives it back at exit. Counters stay in
//! the row across owners, so their sums only grow; gauges (link state,
//! lookups in flight, requests waiting, clicks pending) are the owner's
//! and are cleared when the row changes hands. `shortlink_status` sums the counters of every row
//! and the gauges of rows whose owner is alive.

use core::cell::Cell;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};

/// Rows, the last of which is the shared overflow row.
pub const ROWS: usize = 64;
const OVERFLOW: usize = ROWS - 1;

/// One worker's figures; 128-byte aligned so workers never share a line.
#[repr(C, align(128))]
pub struct Row {
    /// Pid of the worker that holds the row; 0 when free.
    pid: AtomicU32,
    /// 1 while the worker's daemon link is up.
    pub link_up: AtomicU32,
    /// Lookups waiting for the daemon.
    pub lookups_in_flight: AtomicU64,
    /// Requests waiting for those lookups' answers.
    pub requests_waiting: AtomicU64,
    /// Requests by cache status (`edge_status::CACHE_STATUSES` order).
    pub requests: [AtomicU64; 6],
    /// Times the daemon link came back after being down.
    pub reconnects: AtomicU64,
    /// Clicks counted and not yet stored, as of the last flush.
    pub clicks_pending: AtomicU64,
    /// Clicks the daemon stored.
    pub clicks_delivered: AtomicU64,
    /// Clicks written to spool files.
    pub clicks_spooled: AtomicU64,
}

/// Every row, and the zone-wide eviction count (written under the zone's
/// lock, read without it).
#[repr(C)]
pub struct Rows {
    pub rows: [Row; ROWS],
    pub evictions: AtomicU64,
}

thread_local! {
    /// This worker's row index (`OVERFLOW` until claimed).
    static MINE: Cell<usize> = const { Cell::new(OVERFLOW) };
}

/// True when a process with this pid exists (a worker of this nginx: same
/// user, so `kill(pid, 0)` may signal it).
fn alive(pid: u32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    pid != 0 && unsafe { libc::kill(pid as libc::pid_t, 0) } == 0
}

impl Rows {
    /// Claims a row for the worker `pid` (the overflow row when none is
    /// free); its gauges start at zero.
    pub fn claim(&self, pid: u32) {
        for (i, row) in self.rows[..OVERFLOW].iter().enumerate() {
            let owner = row.pid.load(Relaxed);
            if owner != 0 && alive(owner) {
                continue;
            }
            if row
                .pid
                .compare_exchange(owner, pid, Relaxed, Relaxed)
                .is_ok()
            {
                row.link_up.store(0, Relaxed);
                row.lookups_in_flight.store(0, Relaxed);
                row.requests_waiting.store(0, Relaxed);
                row.clicks_pending.store(0, Relaxed);
                MINE.with(|m| m.set(i));
                return;
            }
        }
        MINE.with(|m| m.set(OVERFLOW));
    }

    /// Gives this worker's row back (worker exit).
    pub fn release(&self) {
        let i = MINE.with(|m| m.replace(OVERFLOW));
        if i != OVERFLOW {
            let row = &self.rows[i];
            row.link_up.store(0, Relaxed);
            row.lookups_in_flight.store(0, Relaxed);
            row.requests_waiting.store(0, Relaxed);
            row.clicks_pending.store(0, Relaxed);
            row.pid.store(0, Relaxed);
        }
    }

    /// This worker's row.
    pub fn mine(&self) -> &Row {
        &self.rows[MINE.with(Cell::get)]
    }

    /// Counts one answered request under the cache status at `index`
    /// (`edge_status::CACHE_STATUSES` order).
    pub fn count(&self, index: usize) {
        if let Some(n) = self.mine().requests.get(index) {
            n.fetch_add(1, Relaxed);
        }
    }

    /// The sums over every row: counters of all, gauges of live owners.
    pub fn sum(&self, f: &mut shortlink_core::edge_status::ZoneFigures) {
        for (i, row) in self.rows.iter().enumerate() {
            for (n, r) in f.requests.iter_mut().zip(&row.requests) {
                *n += r.load(Relaxed);
            }
            f.reconnects += row.reconnects.load(Relaxed);
            f.clicks_delivered += row.clicks_delivered.load(Relaxed);
            f.clicks_spooled += row.clicks_spooled.load(Relaxed);
            if i == OVERFLOW || !alive(row.pid.load(Relaxed)) {
                continue;
            }
            if row.link_up.load(Relaxed) == 1 {
                f.links_up += 1;
            } else {
                f.links_down += 1;
            }
            f.lookups_in_flight += row.lookups_in_flight.load(Relaxed);
            f.requests_waiting += row.requests_waiting.load(Relaxed);
            f.clicks_pending += row.clicks_pending.load(Relaxed);
        }
        f.evictions = self.evictions.load(Relaxed);
    }
}
