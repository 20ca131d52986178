//! The link's life: connect and handshake, what each reply means, and
//! outages: while the daemon is unreachable lookups fail at once, the link
//! retries (every 100 ms while nobody listens on the socket, with a
//! growing backoff after anything else: `shortlink_core::reconnect`), and
//! logs the outage once and the recovery once.
//!
//! The handshake is mutual: the worker answers the daemon's challenge with
//! a proof of the deployment key, and trusts nothing on the connection
//! until the daemon's welcome carries a proof of the same key over the
//! worker's own nonce. A daemon that cannot prove it is treated as one that
//! refused the handshake.

use core::sync::atomic::Ordering::Relaxed;

use nginx_sys::{ngx_event_t, ngx_msec_t};
use shortlink_core::handshake::{self, Nonce, Proof};
use shortlink_core::ipc::{Hello, Reply, Request, PROTOCOL_VERSION};

use super::{on_event, socket, Answer, DaemonLink, Inflight, LinkDown, State};
use crate::log::{error, info, warning};

impl DaemonLink {
    /// Opens the socket and starts the handshake; on failure, schedules a retry.
    pub(super) fn connect(&mut self) {
        let c = match socket::open(&self.conf.socket, &self.peer(), self.log) {
            Ok(c) => c,
            Err(down) => return self.fail(down),
        };
        self.close();
        self.conn = c;
        self.state = State::Handshake;
        self.nonces = None;
        // SAFETY: c is our live connection; its read timer bounds the handshake.
        unsafe { nginx_sys::ngx_add_timer((*c).read, self.conf.connect_timeout) };
        let _ = self.send(&Request::Hello(Hello {
            protocol: PROTOCOL_VERSION,
            fingerprint: self.conf.fingerprint,
            pid: std::process::id(),
        }));
    }

    /// Drops the connection, fails what waits on it and schedules a retry.
    pub(super) fn fail(&mut self, why: LinkDown) {
        self.close();
        if !self.outage_logged {
            error!(
                self.log,
                "shortlink: daemon link down: {}; failing lookups until it is back", why
            );
            self.outage_logged = true;
        }
        self.state = State::Down;
        self.figures(|row| row.link_up.store(0, Relaxed));
        self.inflight.clear();
        self.conf.clicks.connection_lost();
        self.fail_lookups(Answer::Unavailable);
        if self.conf.subscribe {
            if let Some(cache) = self.conf.cache {
                cache.alias_set_incomplete();
            }
            self.snapshot = None;
        }
        let wait = self.reconnect.after(why.failure()) as ngx_msec_t;
        if self.retry.timer_set() == 0 {
            // SAFETY: the retry event lives in the boxed link.
            unsafe { nginx_sys::ngx_add_timer(&mut self.retry, wait) };
        }
    }

    /// What a reply from the daemon means.
    pub(super) fn handle(&mut self, reply: Reply) {
        let handshake = matches!(
            reply,
            Reply::Challenge { .. } | Reply::Welcome { .. } | Reply::Refused { .. }
        );
        if self.state != State::Ready && !handshake {
            // Nothing but the handshake is trusted before it completes.
            return self.fail(LinkDown::Unexpected(
                "a reply before the handshake completed",
            ));
        }
        match reply {
            Reply::Challenge { nonce } => self.challenged(nonce),
            Reply::Welcome { proof, .. } => {
                if self.daemon_proved(&proof) {
                    self.welcomed();
                } else {
                    error!(
                        self.log,
                        "shortlink: the daemon at {} did not prove it holds the key of \"shortlink_key_file\", closing the link",
                        self.peer()
                    );
                    self.outage_logged = true;
                    self.fail(LinkDown::Unauthenticated);
                }
            }
            Reply::Refused { reason } => {
                error!(
                    self.log,
                    "shortlink: the daemon at {} refused the handshake: {}",
                    self.peer(),
                    reason
                );
                self.outage_logged = true;
                self.fail(LinkDown::Refused(reason));
            }
            Reply::ClicksRefused {
                id,
                batch_id,
                reason,
            } => {
                if let Some(Inflight::Clicks(key, _)) = self.inflight.remove(&id) {
                    self.clicks_refused(key, batch_id, &reason);
                }
            }
            Reply::Lookup { id, result } => self.answered(id, result),
            Reply::ClicksAck { id, batch_id } => {
                if let Some(Inflight::Clicks(key, _)) = self.inflight.remove(&id) {
                    self.clicks_acked(key, batch_id);
                }
            }
            Reply::Error { id, message } => self.daemon_error(id, &message),
            Reply::Subscribed { id } | Reply::Pong { id } => {
                self.inflight.remove(&id);
            }
            Reply::Event(event) => self.apply(event),
            Reply::Password { id, result } => self.password_answered(id, result),
            Reply::Visits { id, granted } => self.visits_granted(id, granted),
        }
    }

    /// The daemon accepted the hello: prove the key over its nonce, a fresh
    /// one of ours and our pid.
    fn challenged(&mut self, daemon_nonce: Nonce) {
        if self.state != State::Handshake || self.nonces.is_some() {
            return self.fail(LinkDown::Unexpected("a second challenge"));
        }
        let edge_nonce = match handshake::nonce() {
            Ok(n) => n,
            Err(e) => return self.fail(LinkDown::Random(e.to_string())),
        };
        let proof = self
            .conf
            .auth
            .edge_proof(&daemon_nonce, &edge_nonce, std::process::id());
        self.nonces = Some((daemon_nonce, edge_nonce));
        let _ = self.send(&Request::Auth {
            nonce: edge_nonce,
            proof,
        });
    }

    /// True when the welcome's proof covers this handshake's nonces under
    /// our key (a welcome without a challenge proves nothing).
    fn daemon_proved(&self, proof: &Proof) -> bool {
        self.state == State::Handshake
            && self.nonces.is_some_and(|(daemon_nonce, edge_nonce)| {
                self.conf
                    .auth
                    .verify_daemon(&edge_nonce, &daemon_nonce, proof)
            })
    }

    /// The handshake is done: subscribe (one worker) and resend what the
    /// daemon has not acknowledged.
    fn welcomed(&mut self) {
        if self.state != State::Handshake {
            return;
        }
        self.state = State::Ready;
        self.reconnect.connected();
        let back = self.outage_logged;
        self.figures(|row| {
            row.link_up.store(1, Relaxed);
            if back {
                row.reconnects.fetch_add(1, Relaxed);
            }
        });
        // SAFETY: our live connection; the handshake is done.
        unsafe {
            if (*(*self.conn).read).timer_set() != 0 {
                nginx_sys::ngx_del_timer((*self.conn).read);
            }
        }
        if self.outage_logged {
            warning!(
                self.log,
                "shortlink: daemon link to {} is back",
                self.peer()
            );
            self.outage_logged = false;
        } else {
            info!(
                self.log,
                "shortlink: connected to the daemon at {}",
                self.peer()
            );
        }
        if self.conf.subscribe {
            let id = self.next_id();
            self.inflight.insert(id, Inflight::Other);
            let since = self.conf.cache.and_then(|c| c.position());
            if self.send(&Request::Subscribe { id, since }).is_err() {
                return;
            }
        }
        self.send_held_lookups();
        if self.conn.is_null() {
            return;
        }
        self.resend_clicks();
    }
}

/// The retry timer: reconnects a link that is down.
pub(super) extern "C" fn on_retry(ev: *mut ngx_event_t) {
    on_event(ev, |l| {
        if l.state == State::Down {
            l.connect();
        }
    });
}
