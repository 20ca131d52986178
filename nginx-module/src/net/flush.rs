//! Clicks to the daemon: every `shortlink_flush_interval` the filling page
//! is sealed into a batch and sent (a page that fills up before then is
//! sent at once); each batch stays until the daemon
//! acknowledges it. A batch the daemon could not store is sent again on the
//! live connection after 1 s, 2 s, 4 s, then every 5 s; one it refuses as
//! out of bounds is dropped; all are sent again after a reconnect. When the
//! pages run out (the daemon down or failing for long) the sealed ones go
//! to the spool, and so does everything at worker exit. Every few seconds
//! the worker also adopts the slots of workers that died.

use core::sync::atomic::Ordering::Relaxed;

use nginx_sys::{ngx_event_t, ngx_msec_t};
use shortlink_core::ipc::{BatchId, Request};

use super::{on_event, Answer, DaemonLink, Inflight, State};
use crate::clicks::{Key, PageKey};
use crate::log::{error, info, warning};

/// First and longest wait before a batch the daemon failed to store is
/// sent again.
pub(super) const FIRST_RETRY: ngx_msec_t = 1000;
const LONGEST_RETRY: ngx_msec_t = 5000;
/// Flushes between looks for the slots of dead workers.
const ADOPT_EVERY: u32 = 5;

impl DaemonLink {
    /// Seals and sends pending clicks; spools them when the pages run out.
    fn flush_clicks(&mut self) {
        if self.state == State::Ready {
            self.conf.clicks.seal_filling();
            self.send_batches(false);
        }
        if self.conf.clicks.pressed() {
            self.spool_pressed();
        }
        self.flushes = self.flushes.wrapping_add(1);
        if self.flushes.is_multiple_of(ADOPT_EVERY) {
            self.adopt_orphans();
        }
    }

    /// Counts a redirect the hot path could not (its page was full, say): a
    /// page that filled up goes to the daemon right after the current
    /// events (a posted event, so the request that filled it does not wait
    /// for the encoding), not at the next flush, so a high click rate never
    /// runs the pages out between flushes.
    pub fn record_click(&mut self, key: &Key<'_>) {
        if self.conf.clicks.record(key) && self.send_full.posted() == 0 {
            // SAFETY: the event lives in the boxed link, which takes it off
            // the posted queue before it is dropped (`shutdown`).
            unsafe {
                nginx_sys::ngx_post_event(
                    &mut self.send_full,
                    core::ptr::addr_of_mut!(nginx_sys::ngx_posted_events),
                )
            };
        }
    }

    /// Sends the sealed batches not sent yet, and with `retry` those the
    /// daemon failed to store.
    fn send_batches(&mut self, retry: bool) {
        for (key, batch) in self.conf.clicks.take_due(retry) {
            let id = self.next_id();
            self.inflight
                .insert(id, Inflight::Clicks(key, batch.batch_id));
            if self.send(&Request::Clicks { id, batch }).is_err() {
                return;
            }
        }
    }

    /// After a reconnect: every batch the daemon has not acknowledged.
    pub(super) fn resend_clicks(&mut self) {
        self.send_batches(true);
    }

    /// Adopts the slots of workers that died, to deliver what they counted.
    pub(super) fn adopt_orphans(&mut self) {
        let n = self.conf.clicks.adopt_orphans();
        if n > 0 {
            info!(
                self.log,
                "shortlink: took over the click counts of {} exited worker(s)", n
            );
            if self.state == State::Ready {
                self.send_batches(false);
            }
        }
    }

    /// The pages are full: the sealed ones go to the spool. A failure is
    /// logged once until the spool works again.
    fn spool_pressed(&mut self) {
        match self.conf.clicks.spool_all(false) {
            Ok(n) => {
                self.figures(|row| row.clicks_spooled.fetch_add(n, Relaxed));
                warning!(
                    self.log,
                    "shortlink: {} clicks held too long for {}, written to the spool",
                    n,
                    self.peer()
                );
                self.spool_failing = false;
            }
            Err(e) => {
                if !self.spool_failing {
                    error!(
                        self.log,
                        "shortlink: cannot spool clicks, holding them in memory: {}", e
                    );
                    self.spool_failing = true;
                }
            }
        }
    }

    /// The daemon stored a batch.
    pub(super) fn clicks_acked(&mut self, key: PageKey, batch_id: BatchId) {
        if let Some(n) = self.conf.clicks.acked(key, batch_id) {
            self.figures(|row| row.clicks_delivered.fetch_add(n, Relaxed));
        }
        if !self.conf.clicks.has_failed() {
            self.click_backoff = FIRST_RETRY;
            if self.clicks_failing {
                warning!(
                    self.log,
                    "shortlink: the daemon at {} stores clicks again",
                    self.peer()
                );
                self.clicks_failing = false;
            }
        }
    }

    /// The daemon refused a batch as breaking the click bounds: sending it
    /// again can never succeed, so it is dropped, and said once.
    pub(super) fn clicks_refused(&mut self, key: PageKey, batch_id: BatchId, reason: &str) {
        if let Some(clicks) = self.conf.clicks.refused(key, batch_id) {
            error!(
                self.log,
                "shortlink: the daemon refused click batch {} ({} clicks) and it is dropped: {}, socket: {}",
                batch_id.to_hex(),
                clicks,
                reason,
                self.peer()
            );
        }
    }

    /// The daemon could not store a batch: it is sent again on this
    /// connection after the current backoff.
    pub(super) fn clicks_failed(&mut self, key: PageKey, batch_id: BatchId, message: &str) {
        self.conf.clicks.failed(key, batch_id);
        if !self.clicks_failing {
            error!(
                self.log,
                "shortlink: {}; holding the clicks and sending them again, socket: {}",
                message,
                self.peer()
            );
            self.clicks_failing = true;
        }
        if self.click_retry.timer_set() == 0 {
            // SAFETY: the retry event lives in the boxed link.
            unsafe { nginx_sys::ngx_add_timer(&mut self.click_retry, self.click_backoff) };
        }
    }

    /// Schedules the next flush.
    pub(super) fn arm_flush(&mut self) {
        // SAFETY: the flush event lives in the boxed link.
        unsafe { nginx_sys::ngx_add_timer(&mut self.flush, self.conf.flush_interval) };
    }

    /// Worker exit: what could not be delivered goes to the spool; what the
    /// spool cannot take stays in the shared zone for the next worker.
    pub fn shutdown(&mut self) {
        if self.state == State::Ready {
            self.conf.clicks.seal_filling();
            self.send_batches(false);
        }
        let held = self.conf.clicks.held_clicks();
        if held > 0 {
            match self.conf.clicks.spool_all(true) {
                Ok(n) => {
                    self.figures(|row| row.clicks_spooled.fetch_add(n, Relaxed));
                    info!(
                        self.log,
                        "shortlink: {} unacknowledged clicks written to the spool at exit", n
                    )
                }
                Err(e) => error!(
                    self.log,
                    "shortlink: {} clicks left in the shared zone for the next worker (lost if nginx stops first): {}",
                    held,
                    e
                ),
            }
        }
        self.conf.clicks.release();
        for ev in [&mut self.retry, &mut self.flush, &mut self.click_retry] {
            if ev.timer_set() != 0 {
                // SAFETY: our own timer events.
                unsafe { nginx_sys::ngx_del_timer(ev) };
            }
        }
        for ev in [&mut self.send_full, &mut self.send_out] {
            if ev.posted() != 0 {
                // SAFETY: our own event, on the posted queue.
                unsafe { nginx_sys::ngx_delete_posted_event(ev) };
            }
        }
        self.fail_lookups(Answer::Unavailable);
        self.close();
    }
}

/// The flush timer: sends a batch and, unless the worker is exiting, re-arms.
pub(super) unsafe extern "C" fn on_flush(ev: *mut ngx_event_t) {
    on_event(ev, |l| {
        l.flush_clicks();
        let held = l.conf.clicks.held_clicks();
        l.figures(|row| row.clicks_pending.store(held, Relaxed));
        // SAFETY: reading nginx's exit flag on its own thread.
        if unsafe { nginx_sys::ngx_exiting } == 0 {
            l.arm_flush();
        }
    });
}

/// Posted by [`DaemonLink::record_click`]: the pages that filled up go now.
pub(super) unsafe extern "C" fn on_send_full(ev: *mut ngx_event_t) {
    on_event(ev, |l| {
        if l.state == State::Ready {
            l.send_batches(false);
        }
    });
}

/// The click retry timer: batches the daemon failed to store go again.
pub(super) unsafe extern "C" fn on_click_retry(ev: *mut ngx_event_t) {
    on_event(ev, |l| {
        if l.state == State::Ready {
            l.send_batches(true);
        }
        l.click_backoff = (l.click_backoff * 2).min(LONGEST_RETRY);
    });
}
