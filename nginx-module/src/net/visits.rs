//! Visit leases: a person's redirect of a limited link spends one visit the
//! daemon leased to this node (kept in the zone, `cache::spend_visit`).
//! When none is left, the request waits here while the worker asks the
//! daemon for more; requests for one link share one lease request, bounded
//! by `shortlink_timeout` like a lookup. The daemon grants at least what
//! is asked while the link has that many left, so one answer settles every
//! waiter: each is let through on a visit of the grant (the rest kept in
//! the zone), or told the link is used up.

use nginx_sys::{ngx_event_t, ngx_http_request_t};
use shortlink_core::ipc::Request;
use shortlink_core::visit_slots::Returned;
use smallvec::SmallVec;

use super::failures::RUN_NOTE;
use super::{event, on_event, Answer, DaemonLink, Inflight, Started, State};
use crate::log::error;

/// One link's lease request, and the requests waiting for it.
pub struct VisitWait {
    link: u64,
    /// The limit the visits are asked for under.
    limit: u64,
    timer: ngx_event_t,
    waiters: SmallVec<[*mut ngx_http_request_t; 1]>,
}

impl DaemonLink {
    /// Asks the daemon for visits of link `link` (limit `limit`) for
    /// request `r`, or joins the request already out for it.
    pub fn lease_visits(&mut self, link: u64, limit: u64, r: *mut ngx_http_request_t) -> Started {
        if self.state != State::Ready {
            return Started::Unavailable;
        }
        if let Some(wait) = self.visit_waits.get_mut(&link) {
            wait.waiters.push(r);
            return Started::Waiting;
        }
        if self.ask_visits(link, limit, 1).is_err() {
            return Started::Unavailable;
        }
        let mut wait = Box::new(VisitWait {
            link,
            limit,
            timer: event(),
            waiters: SmallVec::from_buf([r]),
        });
        wait.timer.handler = Some(on_visits_timeout);
        wait.timer.log = self.log;
        wait.timer.data = (&mut *wait as *mut VisitWait).cast();
        // SAFETY: the timer lives in the boxed wait, which stays in
        // `visit_waits` until the timer is deleted or has fired.
        unsafe { nginx_sys::ngx_add_timer(&mut wait.timer, self.conf.timeout) };
        self.visit_waits.insert(link, wait);
        Started::Waiting
    }

    fn ask_visits(&mut self, link: u64, limit: u64, want: u32) -> Result<(), super::NotSent> {
        let id = self.next_id();
        self.send(&Request::LeaseVisits {
            id,
            link_id: link,
            want,
        })?;
        self.inflight.insert(id, Inflight::Visits(link, limit));
        Ok(())
    }

    /// Hands visits the zone gave up back to the daemon (lost, and so
    /// never redirected, if the link is down).
    pub fn return_visits(&mut self, returned: Returned) {
        if self.state != State::Ready {
            return;
        }
        let id = self.next_id();
        let request = Request::ReturnVisits {
            id,
            link_id: returned.link,
            count: returned.count,
        };
        if self.send(&request).is_ok() {
            self.inflight.insert(id, Inflight::Other);
        }
    }

    /// The daemon granted `granted` visits to lease request `id`.
    pub(super) fn visits_granted(&mut self, id: u32, granted: u32) {
        let Some(Inflight::Visits(link, limit)) = self.inflight.remove(&id) else {
            return;
        };
        self.answered_again();
        let Some(mut wait) = self.visit_waits.remove(&link) else {
            // Its waiters timed out or left: the zone keeps the visits.
            self.keep_visits(link, limit, granted);
            return;
        };
        stop(&mut wait);
        let waiters = wait.waiters.len() as u32;
        let admitted = granted.min(waiters);
        self.keep_visits(link, limit, granted - admitted);
        let mut rest: SmallVec<[*mut ngx_http_request_t; 1]> = SmallVec::new();
        for (i, r) in wait.waiters.drain(..).enumerate() {
            if (i as u32) < admitted {
                (self.conf.deliver)(r, Answer::Admitted);
            } else {
                rest.push(r);
            }
        }
        if rest.is_empty() {
            return;
        }
        if granted == 0 {
            // Nothing left to lease: what other workers' leases left in the
            // zone is all there is.
            for r in rest {
                let spent = self.spend_kept(link, limit);
                (self.conf.deliver)(
                    r,
                    if spent {
                        Answer::Admitted
                    } else {
                        Answer::Exhausted
                    },
                );
            }
            return;
        }
        // More came to wait than were asked for: ask again for them.
        let want = rest.len() as u32;
        if self.ask_visits(link, limit, want).is_err() {
            for r in rest {
                (self.conf.deliver)(r, Answer::Unavailable);
            }
            return;
        }
        wait.waiters = rest;
        // SAFETY: as in `lease_visits`: the boxed wait goes back into the
        // map with its timer.
        unsafe { nginx_sys::ngx_add_timer(&mut wait.timer, self.conf.timeout) };
        self.visit_waits.insert(link, wait);
    }

    /// Puts `count` leased visits in the zone, returning what that
    /// displaces; with no zone they cannot be kept and go back at once.
    fn keep_visits(&mut self, link: u64, limit: u64, count: u32) {
        if count == 0 {
            return;
        }
        let returned = match self.conf.cache {
            Some(cache) => cache.deposit_visits(link, limit, count),
            None => Some(Returned { link, count }),
        };
        if let Some(returned) = returned {
            self.return_visits(returned);
        }
    }

    /// One visit of the zone's, for a request the lease could not cover.
    fn spend_kept(&mut self, link: u64, limit: u64) -> bool {
        let Some(cache) = self.conf.cache else {
            return false;
        };
        let (spent, returned) = cache.spend_visit(link, limit);
        if let Some(returned) = returned {
            self.return_visits(returned);
        }
        spent
    }

    /// The daemon could not lease (its error is logged by the caller).
    pub(super) fn visits_failed(&mut self, link: u64) {
        if let Some(mut wait) = self.visit_waits.remove(&link) {
            self.finish_visits(&mut wait, Answer::Unavailable);
        }
    }

    /// Request `r` went away while it waited for a visit of `link`.
    pub fn forget_visit(&mut self, link: u64, r: *mut ngx_http_request_t) {
        if let Some(wait) = self.visit_waits.get_mut(&link) {
            wait.waiters.retain(|w| *w != r);
        }
    }

    /// Ends every lease request with `answer` (the link went down or the
    /// worker exits).
    pub(super) fn fail_visit_waits(&mut self, answer: Answer) {
        let waits: Vec<Box<VisitWait>> = self.visit_waits.drain().map(|(_, w)| w).collect();
        for mut wait in waits {
            self.finish_visits(&mut wait, answer.clone());
        }
    }

    fn finish_visits(&mut self, wait: &mut VisitWait, answer: Answer) {
        stop(wait);
        for r in wait.waiters.drain(..) {
            (self.conf.deliver)(r, answer.clone());
        }
    }

    fn visits_timed_out(&mut self, wait: *mut VisitWait) {
        // SAFETY: the timer's data is its boxed wait, still in the map
        // (removal deletes the timer first).
        let link = unsafe { (*wait).link };
        let Some(mut wait) = self.visit_waits.remove(&link) else {
            return;
        };
        if self.failure_starts_run() {
            error!(
                self.log,
                "shortlink: daemon visit lease timed out after {} ms for link {} (limit {}), socket: {}; {}",
                self.conf.timeout,
                link,
                wait.limit,
                self.peer(),
                RUN_NOTE
            );
        }
        self.finish_visits(&mut wait, Answer::TimedOut);
    }
}

fn stop(wait: &mut VisitWait) {
    if wait.timer.timer_set() != 0 {
        // SAFETY: the timer is ours and set.
        unsafe { nginx_sys::ngx_del_timer(&mut wait.timer) };
    }
}

unsafe extern "C" fn on_visits_timeout(ev: *mut ngx_event_t) {
    // SAFETY: nginx passes our timer event, whose data is its VisitWait.
    let wait = unsafe { (*ev).data }.cast::<VisitWait>();
    on_event(ev, |l| l.visits_timed_out(wait));
}
