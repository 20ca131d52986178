//! Password checks: a visitor posted the form of a protected link, and the
//! daemon checks the password (argon2 never runs in a worker). Unlike
//! lookups, checks are not shared: each request sends its own, keyed by
//! its request id, bounded by `shortlink_timeout` like a lookup, and
//! answered to that request alone.

use nginx_sys::{ngx_event_t, ngx_http_request_t};
use shortlink_core::ipc::{PasswordResult, Request};

use super::failures::RUN_NOTE;
use super::{event, on_event, Answer, DaemonLink, Inflight, Started, State};
use crate::log::error;

/// One password check and the request waiting for it.
pub struct PasswordWait {
    id: u32,
    timer: ngx_event_t,
    request: *mut ngx_http_request_t,
}

impl DaemonLink {
    /// Asks the daemon whether `password` opens `code` for the visitor at
    /// `client`; the answer is delivered to `r`.
    pub fn check_password(
        &mut self,
        code: &[u8],
        password: String,
        client: &[u8],
        r: *mut ngx_http_request_t,
    ) -> Started {
        if self.state != State::Ready {
            return Started::Unavailable;
        }
        let id = self.next_id();
        let client = &client[..client.len().min(shortlink_core::ipc::MAX_CLIENT_ADDR)];
        let request = Request::CheckPassword {
            id,
            code: String::from_utf8_lossy(code).into_owned(),
            password,
            client: String::from_utf8_lossy(client).into_owned(),
        };
        if self.send(&request).is_err() {
            return Started::Unavailable;
        }
        self.inflight.insert(id, Inflight::Password);
        let mut wait = Box::new(PasswordWait {
            id,
            timer: event(),
            request: r,
        });
        wait.timer.handler = Some(on_password_timeout);
        wait.timer.log = self.log;
        wait.timer.data = (&mut *wait as *mut PasswordWait).cast();
        // SAFETY: the timer lives in the boxed wait, which stays in
        // `password_checks` until the timer is deleted or has fired.
        unsafe { nginx_sys::ngx_add_timer(&mut wait.timer, self.conf.timeout) };
        self.password_checks.insert(id, wait);
        Started::Waiting
    }

    /// The daemon answered check `id`.
    pub(super) fn password_answered(&mut self, id: u32, result: PasswordResult) {
        self.inflight.remove(&id);
        self.answered_again();
        let answer = match result {
            PasswordResult::Granted(link) => Answer::Granted(std::rc::Rc::new(*link)),
            PasswordResult::Wrong => Answer::WrongPassword,
            PasswordResult::Throttled { retry_after } => Answer::Throttled(retry_after),
            PasswordResult::Busy => Answer::PasswordBusy,
            PasswordResult::NotFound => Answer::NotFound,
            PasswordResult::Gone => Answer::Gone,
        };
        self.finish_password(id, answer);
    }

    /// The daemon could not check `id` (its error is logged by the caller).
    pub(super) fn password_failed(&mut self, id: u32) {
        self.finish_password(id, Answer::Unavailable);
    }

    /// Request `r` went away while its password was checked.
    pub fn forget_password(&mut self, r: *mut ngx_http_request_t) {
        let ids: Vec<u32> = self
            .password_checks
            .values()
            .filter(|w| w.request == r)
            .map(|w| w.id)
            .collect();
        for id in ids {
            if let Some(mut wait) = self.password_checks.remove(&id) {
                stop(&mut wait);
            }
        }
    }

    /// Ends every check with `answer` (the link went down or the worker exits).
    pub(super) fn fail_password_checks(&mut self, answer: Answer) {
        let ids: Vec<u32> = self.password_checks.keys().copied().collect();
        for id in ids {
            self.finish_password(id, answer.clone());
        }
    }

    fn finish_password(&mut self, id: u32, answer: Answer) {
        if let Some(mut wait) = self.password_checks.remove(&id) {
            stop(&mut wait);
            (self.conf.deliver)(wait.request, answer);
        }
    }

    fn password_timed_out(&mut self, wait: *mut PasswordWait) {
        // SAFETY: the timer's data is its boxed wait, still in the map
        // (removal deletes the timer first).
        let id = unsafe { (*wait).id };
        if self.failure_starts_run() {
            error!(
                self.log,
                "shortlink: daemon password check timed out after {} ms, socket: {}; {}",
                self.conf.timeout,
                self.peer(),
                RUN_NOTE
            );
        }
        self.inflight.remove(&id);
        self.finish_password(id, Answer::TimedOut);
    }
}

fn stop(wait: &mut PasswordWait) {
    if wait.timer.timer_set() != 0 {
        // SAFETY: the timer is ours and set.
        unsafe { nginx_sys::ngx_del_timer(&mut wait.timer) };
    }
}

unsafe extern "C" fn on_password_timeout(ev: *mut ngx_event_t) {
    // SAFETY: nginx passes our timer event, whose data is its PasswordWait.
    let wait = unsafe { (*ev).data }.cast::<PasswordWait>();
    on_event(ev, |l| l.password_timed_out(wait));
}
