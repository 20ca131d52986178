//! Lookups: requests for one code share one request to the daemon (single
//! flight); each lookup has a timer of `shortlink_timeout`, and its answer
//! is posted to every request that waits for it. Lookups made while the
//! handshake is under way wait for it to finish: nothing is asked of a
//! daemon that has not proved it holds the key.

use nginx_sys::{ngx_event_t, ngx_http_request_t, ngx_msec_t};
use shortlink_core::ipc::{LookupRequest, LookupResult};
use smallvec::SmallVec;

use super::failures::RUN_NOTE;
use super::{event, now, on_event, Answer, DaemonLink, Inflight, LinkDown, Started, State};
use crate::log::error;

/// A code as the link keeps it: inline up to 16 bytes (every generated
/// code, and most aliases), so a miss allocates nothing for its keys.
pub type CodeBuf = SmallVec<[u8; 16]>;

/// One code being looked up, and who waits for it.
pub struct LookupWait {
    code: CodeBuf,
    timer: ngx_event_t,
    /// When the request went to the daemon; `None` while it waits for the
    /// handshake.
    sent_at: Option<ngx_msec_t>,
    /// Mostly one request (a code asked for twice at once is rare).
    waiters: SmallVec<[*mut ngx_http_request_t; 1]>,
}

impl DaemonLink {
    /// Asks the daemon about `code` for request `r`, or joins the lookup
    /// already under way for it.
    pub fn lookup(&mut self, code: &[u8], r: *mut ngx_http_request_t) -> Started {
        if self.state == State::Down {
            return Started::Unavailable;
        }
        if let Some(wait) = self.lookups.get_mut(code) {
            wait.waiters.push(r);
            self.waiting += 1;
            return Started::Waiting;
        }
        let sent_at = if self.state == State::Ready {
            if self.send_lookup(code).is_err() {
                return Started::Unavailable;
            }
            Some(now())
        } else {
            None
        };
        let mut wait = Box::new(LookupWait {
            code: CodeBuf::from_slice(code),
            timer: event(),
            sent_at,
            waiters: SmallVec::from_buf([r]),
        });
        wait.timer.handler = Some(on_lookup_timeout);
        wait.timer.log = self.log;
        wait.timer.data = (&mut *wait as *mut LookupWait).cast();
        // SAFETY: the timer lives in the boxed wait, which stays in
        // `lookups` until the timer is deleted or has fired.
        unsafe { nginx_sys::ngx_add_timer(&mut wait.timer, self.conf.timeout) };
        self.lookups.insert(CodeBuf::from_slice(code), wait);
        self.waiting += 1;
        Started::Waiting
    }

    fn send_lookup(&mut self, code: &[u8]) -> Result<(), super::NotSent> {
        let id = self.next_id();
        // Read before sending: a purge after this may beat the answer.
        let purges = self.conf.cache.map_or(0, |c| c.purges(code));
        // Codes reach the link checked: generated codes and aliases are
        // ASCII (the lossy form only guards the wire format).
        let code_text = String::from_utf8_lossy(code);
        self.send_soon(&LookupRequest {
            id,
            code: &code_text,
        })?;
        self.inflight
            .insert(id, Inflight::Lookup(CodeBuf::from_slice(code), purges));
        Ok(())
    }

    /// The handshake is done: sends the lookups that waited for it.
    pub(super) fn send_held_lookups(&mut self) {
        let held: Vec<CodeBuf> = self
            .lookups
            .values()
            .filter(|w| w.sent_at.is_none())
            .map(|w| w.code.clone())
            .collect();
        for code in held {
            if self.send_lookup(&code).is_err() {
                return;
            }
            if let Some(wait) = self.lookups.get_mut(&code) {
                wait.sent_at = Some(now());
            }
        }
    }

    /// Request `r` went away while waiting: stop tracking it (the lookup
    /// itself goes on and fills the cache).
    pub fn forget(&mut self, code: &[u8], r: *mut ngx_http_request_t) {
        if let Some(wait) = self.lookups.get_mut(code) {
            let before = wait.waiters.len();
            wait.waiters.retain(|w| *w != r);
            self.waiting -= before - wait.waiters.len();
        }
    }

    /// The daemon answered lookup `id`.
    pub(super) fn answered(&mut self, id: u32, result: LookupResult) {
        let Some(Inflight::Lookup(code, purges)) = self.inflight.remove(&id) else {
            return;
        };
        self.answered_again();
        let answer = self.admit(&code, result, purges);
        if let Some(mut wait) = self.lookups.remove(&code) {
            self.finish(&mut wait, answer);
        }
    }

    /// The daemon could not do request `id` (its database down or slow,
    /// say): the request fails, and the first failure of a run is logged.
    pub(super) fn daemon_error(&mut self, id: u32, message: &str) {
        let inflight = self.inflight.remove(&id);
        if let Some(Inflight::Clicks(key, batch_id)) = inflight {
            // Held and sent again, logged once by the click path.
            return self.clicks_failed(key, batch_id, message);
        }
        let log = self.failure_starts_run();
        let code = match inflight {
            Some(Inflight::Lookup(code, _)) => code,
            Some(Inflight::Password) => {
                if log {
                    error!(
                        self.log,
                        "shortlink: daemon error while checking a link password: {}, socket: {}; {}",
                        message,
                        self.peer(),
                        RUN_NOTE
                    );
                }
                return self.password_failed(id);
            }
            Some(Inflight::Visits(link, _)) => {
                if log {
                    error!(
                        self.log,
                        "shortlink: daemon error while leasing visits of link {}: {}, socket: {}; {}",
                        link,
                        message,
                        self.peer(),
                        RUN_NOTE
                    );
                }
                return self.visits_failed(link);
            }
            _ => {
                if log {
                    error!(
                        self.log,
                        "shortlink: daemon error: {}, socket: {}; {}",
                        message,
                        self.peer(),
                        RUN_NOTE
                    );
                }
                return;
            }
        };
        if log {
            error!(
                self.log,
                "shortlink: daemon error while resolving code \"{}\": {}, socket: {}; {}",
                String::from_utf8_lossy(&code),
                message,
                self.peer(),
                RUN_NOTE
            );
        }
        if let Some(mut wait) = self.lookups.remove(&code) {
            self.finish(&mut wait, Answer::Unavailable);
        }
    }

    /// Ends every lookup with `answer` (the link went down or the worker exits).
    pub(super) fn fail_lookups(&mut self, answer: Answer) {
        self.fail_password_checks(answer.clone());
        self.fail_visit_waits(answer.clone());
        let waits: Vec<Box<LookupWait>> = self.lookups.drain().map(|(_, w)| w).collect();
        for mut wait in waits {
            self.finish(&mut wait, answer.clone());
        }
    }

    /// Stops the lookup's timer and posts the answer to every waiter.
    fn finish(&mut self, wait: &mut LookupWait, answer: Answer) {
        if wait.timer.timer_set() != 0 {
            // SAFETY: the timer is ours and set.
            unsafe { nginx_sys::ngx_del_timer(&mut wait.timer) };
        }
        self.waiting -= wait.waiters.len();
        for r in wait.waiters.drain(..) {
            (self.conf.deliver)(r, answer.clone());
        }
    }

    fn timed_out(&mut self, wait: *mut LookupWait) {
        // SAFETY: the timer's data is its boxed wait, still in the map
        // (removal deletes the timer first).
        let code = unsafe { (*wait).code.clone() };
        let Some(mut wait) = self.lookups.remove(&code) else {
            return;
        };
        if self.failure_starts_run() {
            error!(
                self.log,
                "shortlink: daemon lookup timed out after {} ms while resolving code \"{}\", socket: {}; {}",
                self.conf.timeout,
                String::from_utf8_lossy(&code),
                self.peer(),
                RUN_NOTE
            );
        }
        // Nothing came back since the lookup went out (or the handshake
        // never finished).
        let silent = wait
            .sent_at
            .is_none_or(|at| self.last_read.wrapping_sub(at) as isize <= 0);
        self.finish(&mut wait, Answer::TimedOut);
        if silent {
            // Treat the daemon as down, so the next requests fail fast
            // instead of waiting.
            self.fail(LinkDown::Silent {
                peer: self.peer(),
                ms: self.conf.timeout,
            });
        }
    }
}

unsafe extern "C" fn on_lookup_timeout(ev: *mut ngx_event_t) {
    // SAFETY: nginx passes our timer event, whose data is its LookupWait.
    let wait = unsafe { (*ev).data }.cast::<LookupWait>();
    on_event(ev, |l| l.timed_out(wait));
}
