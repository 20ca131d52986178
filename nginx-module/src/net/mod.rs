//! `DaemonLink`: a worker's one persistent connection to shortlinkd.
//!
//! Everything runs on nginx's event loop: a non-blocking Unix socket wrapped
//! in an `ngx_connection_t` with read/write handlers, timers for lookups,
//! reconnects and click flushes. Requests waiting for a lookup are resumed by
//! posting their connection's write event, never from inside the link's own
//! handlers, so no request code runs while the link is borrowed.
//!
//! Lookups for one code share one request to the daemon (single flight).
//! While the daemon is unreachable, lookups fail at once; the link retries
//! with backoff and logs the outage once and the recovery once.

use core::ptr;
use std::cell::RefCell;
use std::collections::HashMap;

use nginx_sys::{
    ngx_close_connection, ngx_connection_t, ngx_event_t, ngx_get_connection, ngx_handle_read_event,
    ngx_handle_write_event, ngx_http_request_t, ngx_log_t, ngx_msec_t, NGX_AGAIN, NGX_OK,
};
use shortlink_core::ipc::{
    read_frame, write_frame, Event, Hello, LookupResult, Reply, Request, PROTOCOL_VERSION,
};
use shortlink_core::Fingerprint;

use crate::cache::LinkCache;
use crate::clicks::ClickBook;
use crate::log::{error, info, warning};

thread_local! {
    static LINK: RefCell<Option<Box<DaemonLink>>> = const { RefCell::new(None) };
}

/// Runs `f` on this worker's link; `None` when there is none or it is
/// already in use further up the stack.
pub fn with_link<R>(f: impl FnOnce(&mut DaemonLink) -> R) -> Option<R> {
    LINK.with(|cell| {
        let mut guard = cell.try_borrow_mut().ok()?;
        let link = guard.as_mut()?;
        Some(f(link))
    })
}

/// Installs the worker's link (from `init_process`).
pub fn install(link: Box<DaemonLink>) {
    LINK.with(|cell| *cell.borrow_mut() = Some(link));
    with_link(|l| {
        l.connect();
        l.arm_flush();
    });
}

/// Takes the link out at worker exit.
pub fn uninstall() -> Option<Box<DaemonLink>> {
    LINK.with(|cell| cell.try_borrow_mut().ok()?.take())
}

/// How a lookup ended, handed to each waiting request.
#[derive(Clone)]
pub enum Answer {
    Result(LookupResult),
    /// No reply within `shortlink_timeout`.
    TimedOut,
    /// The daemon is unreachable.
    Unavailable,
}

/// What became of a lookup request.
pub enum Started {
    /// The request waits; it will be posted with an [`Answer`].
    Waiting,
    /// The daemon is down: answer now.
    Unavailable,
}

/// Where to deliver answers: implemented by the request side.
pub type Deliver = fn(*mut ngx_http_request_t, Answer);

#[derive(PartialEq, Eq, Clone, Copy, Debug)]
enum State {
    Down,
    Handshake,
    Ready,
}

enum Inflight {
    Lookup(Vec<u8>),
    Clicks,
    Other,
}

/// One code being looked up, and who waits for it.
struct LookupWait {
    code: Vec<u8>,
    timer: ngx_event_t,
    sent_at: ngx_msec_t,
    waiters: Vec<*mut ngx_http_request_t>,
}

/// Settings the link is made from.
pub struct LinkConf {
    pub socket: String,
    pub fingerprint: Fingerprint,
    pub connect_timeout: ngx_msec_t,
    pub timeout: ngx_msec_t,
    pub flush_interval: ngx_msec_t,
    /// Only one worker subscribes to events: the zone is shared.
    pub subscribe: bool,
    pub cache: Option<LinkCache>,
    pub ttl: ngx_msec_t,
    pub negative_ttl: ngx_msec_t,
    pub deliver: Deliver,
    pub clicks: ClickBook,
}

/// The worker's connection to the daemon and everything riding on it.
pub struct DaemonLink {
    conf: LinkConf,
    log: *mut ngx_log_t,
    conn: *mut ngx_connection_t,
    state: State,
    outage_logged: bool,
    backoff: ngx_msec_t,
    retry: ngx_event_t,
    flush: ngx_event_t,
    out: Vec<u8>,
    out_pos: usize,
    inb: Vec<u8>,
    last_read: ngx_msec_t,
    next_id: u32,
    inflight: HashMap<u32, Inflight>,
    lookups: HashMap<Vec<u8>, Box<LookupWait>>,
    /// Alias snapshot in progress: its generation and whether all fitted.
    snapshot: Option<(u64, bool)>,
    alias_generation: u64,
}

const MIN_BACKOFF: ngx_msec_t = 100;
const MAX_BACKOFF: ngx_msec_t = 5000;

fn now() -> ngx_msec_t {
    // SAFETY: nginx updates ngx_current_msec on its event loop; we run there.
    unsafe { nginx_sys::ngx_current_msec }
}

impl DaemonLink {
    pub fn new(conf: LinkConf, log: *mut ngx_log_t) -> Box<Self> {
        let mut link = Box::new(Self {
            conf,
            log,
            conn: ptr::null_mut(),
            state: State::Down,
            outage_logged: false,
            backoff: MIN_BACKOFF,
            // SAFETY: ngx_event_t is plain data; zeroed is its initial state.
            retry: unsafe { core::mem::zeroed() },
            // SAFETY: as above.
            flush: unsafe { core::mem::zeroed() },
            out: Vec::new(),
            out_pos: 0,
            inb: Vec::with_capacity(64 * 1024),
            last_read: 0,
            next_id: 0,
            inflight: HashMap::new(),
            lookups: HashMap::new(),
            snapshot: None,
            alias_generation: 0,
        });
        for (ev, handler) in [
            (
                &mut link.retry,
                on_retry as unsafe extern "C" fn(*mut ngx_event_t),
            ),
            (&mut link.flush, on_flush),
        ] {
            ev.handler = Some(handler);
            ev.log = log;
            // Background timers must not keep a gracefully exiting worker alive.
            ev.set_cancelable(1);
        }
        link
    }

    /// The socket as nginx would print it.
    pub fn peer(&self) -> String {
        format!("unix:{}", self.conf.socket)
    }

    pub fn clicks(&mut self) -> &mut ClickBook {
        &mut self.conf.clicks
    }

    /// Asks the daemon about `code` for request `r`, or joins the lookup
    /// already under way for it.
    pub fn lookup(&mut self, code: &[u8], r: *mut ngx_http_request_t) -> Started {
        if self.state == State::Down {
            return Started::Unavailable;
        }
        if let Some(wait) = self.lookups.get_mut(code) {
            wait.waiters.push(r);
            return Started::Waiting;
        }
        let id = self.next_id();
        let request = Request::Lookup {
            id,
            code: String::from_utf8_lossy(code).into_owned(),
        };
        if !self.send(&request) {
            return Started::Unavailable;
        }
        self.inflight.insert(id, Inflight::Lookup(code.to_vec()));
        let mut wait = Box::new(LookupWait {
            code: code.to_vec(),
            // SAFETY: plain data, zeroed is the initial state.
            timer: unsafe { core::mem::zeroed() },
            sent_at: now(),
            waiters: vec![r],
        });
        wait.timer.handler = Some(on_lookup_timeout);
        wait.timer.log = self.log;
        wait.timer.data = (&mut *wait as *mut LookupWait).cast();
        // SAFETY: the timer lives in the boxed wait, which stays in
        // `lookups` until the timer is deleted or has fired.
        unsafe { nginx_sys::ngx_add_timer(&mut wait.timer, self.conf.timeout) };
        self.lookups.insert(code.to_vec(), wait);
        Started::Waiting
    }

    /// Request `r` went away while waiting: stop tracking it (the lookup
    /// itself goes on and fills the cache).
    pub fn forget(&mut self, code: &[u8], r: *mut ngx_http_request_t) {
        if let Some(wait) = self.lookups.get_mut(code) {
            wait.waiters.retain(|&w| w != r);
        }
    }

    fn next_id(&mut self) -> u32 {
        self.next_id = self.next_id.wrapping_add(1);
        self.next_id
    }

    /// Opens the socket and starts the handshake; on failure, schedules a retry.
    fn connect(&mut self) {
        match self.open() {
            Ok(c) => {
                self.conn = c;
                self.state = State::Handshake;
                self.out.clear();
                self.out_pos = 0;
                self.inb.clear();
                let hello = Request::Hello(Hello {
                    protocol: PROTOCOL_VERSION,
                    fingerprint: self.conf.fingerprint,
                    pid: std::process::id(),
                });
                // SAFETY: c is our live connection; its read timer bounds the handshake.
                unsafe { nginx_sys::ngx_add_timer((*c).read, self.conf.connect_timeout) };
                self.send(&hello);
            }
            Err(reason) => self.fail(&reason),
        }
    }

    fn open(&mut self) -> Result<*mut ngx_connection_t, String> {
        let path = self.conf.socket.as_bytes();
        // SAFETY: plain socket(2)/connect(2) on a fresh descriptor; the
        // address is a correctly sized sockaddr_un holding the path
        // (length checked when the directive was parsed).
        unsafe {
            let fd = libc::socket(
                libc::AF_UNIX,
                libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                0,
            );
            if fd < 0 {
                return Err(format!(
                    "socket() failed: {}",
                    std::io::Error::last_os_error()
                ));
            }
            let mut addr: libc::sockaddr_un = core::mem::zeroed();
            addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
            for (dst, &src) in addr.sun_path.iter_mut().zip(path) {
                *dst = src as libc::c_char;
            }
            let len =
                (core::mem::size_of::<libc::sa_family_t>() + path.len() + 1) as libc::socklen_t;
            if libc::connect(fd, (&addr as *const libc::sockaddr_un).cast(), len) != 0 {
                let err = std::io::Error::last_os_error();
                libc::close(fd);
                return Err(format!("connect() to {} failed: {err}", self.peer()));
            }
            let c = ngx_get_connection(fd, self.log);
            if c.is_null() {
                libc::close(fd);
                return Err("no free connection for the daemon link".into());
            }
            (*c).recv = nginx_sys::ngx_io.recv;
            (*c).send = nginx_sys::ngx_io.send;
            (*c).recv_chain = nginx_sys::ngx_io.recv_chain;
            (*c).send_chain = nginx_sys::ngx_io.send_chain;
            (*c).log = self.log;
            (*(*c).read).log = self.log;
            (*(*c).write).log = self.log;
            (*(*c).read).handler = Some(on_read);
            (*(*c).write).handler = Some(on_write);
            (*(*c).write).set_ready(1);
            let added = match nginx_sys::ngx_event_actions.add_conn {
                Some(add_conn) => add_conn(c),
                None => ngx_handle_read_event((*c).read, 0),
            };
            if added != NGX_OK as isize {
                ngx_close_connection(c);
                return Err("cannot add the daemon link to the event loop".into());
            }
            Ok(c)
        }
    }

    /// Drops the connection, fails what waits on it and schedules a retry.
    fn fail(&mut self, reason: &str) {
        if !self.conn.is_null() {
            // SAFETY: our live connection; closing removes its events and timers.
            unsafe { ngx_close_connection(self.conn) };
            self.conn = ptr::null_mut();
        }
        if !self.outage_logged {
            error!(
                self.log,
                "shortlink: daemon link down: {}; failing lookups until it is back", reason
            );
            self.outage_logged = true;
        }
        self.state = State::Down;
        self.out.clear();
        self.out_pos = 0;
        self.inb.clear();
        self.inflight.clear();
        let waits: Vec<Box<LookupWait>> = self.lookups.drain().map(|(_, w)| w).collect();
        for mut wait in waits {
            self.finish(&mut wait, Answer::Unavailable);
        }
        if self.conf.subscribe {
            if let Some(cache) = self.conf.cache {
                cache.alias_set_incomplete();
            }
            self.snapshot = None;
        }
        if self.retry.timer_set() == 0 {
            // SAFETY: the retry event lives in the boxed link.
            unsafe { nginx_sys::ngx_add_timer(&mut self.retry, self.backoff) };
        }
        self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
    }

    /// Stops the lookup's timer and posts the answer to every waiter.
    fn finish(&mut self, wait: &mut LookupWait, answer: Answer) {
        if wait.timer.timer_set() != 0 {
            // SAFETY: the timer is ours and set.
            unsafe { nginx_sys::ngx_del_timer(&mut wait.timer) };
        }
        for r in wait.waiters.drain(..) {
            (self.conf.deliver)(r, answer.clone());
        }
    }

    /// Queues a frame and writes what the socket takes; false if the link
    /// failed doing so.
    fn send(&mut self, msg: &Request) -> bool {
        if self.conn.is_null() {
            return false;
        }
        if let Err(e) = write_frame(msg, &mut self.out) {
            error!(
                self.log,
                "shortlink: cannot encode a frame for the daemon: {}", e
            );
            return true;
        }
        self.flush_out()
    }

    fn flush_out(&mut self) -> bool {
        let c = self.conn;
        if c.is_null() {
            return false;
        }
        while self.out_pos < self.out.len() {
            let rest = &mut self.out[self.out_pos..];
            // SAFETY: our live connection; send reads `rest.len()` bytes.
            let n = unsafe { ((*c).send.unwrap())(c, rest.as_mut_ptr(), rest.len()) };
            if n > 0 {
                self.out_pos += n as usize;
            } else if n == NGX_AGAIN as isize {
                // SAFETY: our connection's write event.
                unsafe { ngx_handle_write_event((*c).write, 0) };
                return true;
            } else {
                self.fail("write to the daemon failed");
                return false;
            }
        }
        self.out.clear();
        self.out_pos = 0;
        true
    }

    fn read_ready(&mut self, timed_out: bool) {
        let c = self.conn;
        if c.is_null() {
            return;
        }
        if timed_out {
            self.fail("the daemon did not finish the handshake in time");
            return;
        }
        loop {
            self.inb.reserve(16 * 1024);
            let len = self.inb.len();
            let spare = self.inb.capacity() - len;
            // SAFETY: recv writes at most `spare` bytes into the reserved tail.
            let n = unsafe { ((*c).recv.unwrap())(c, self.inb.as_mut_ptr().add(len), spare) };
            if n > 0 {
                // SAFETY: recv initialised n bytes.
                unsafe { self.inb.set_len(len + n as usize) };
                self.last_read = now();
            } else if n == 0 {
                self.fail("the daemon closed the connection");
                return;
            } else if n == NGX_AGAIN as isize {
                break;
            } else {
                self.fail("read from the daemon failed");
                return;
            }
        }
        let mut at = 0;
        loop {
            match read_frame::<Reply>(&self.inb[at..]) {
                Ok(Some((reply, used))) => {
                    at += used;
                    self.handle(reply);
                    if self.conn.is_null() {
                        return;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    self.fail(&format!("bad frame from the daemon: {e}"));
                    return;
                }
            }
        }
        self.inb.drain(..at);
        // SAFETY: our live connection's read event.
        unsafe { ngx_handle_read_event((*c).read, 0) };
    }

    fn handle(&mut self, reply: Reply) {
        match reply {
            Reply::Welcome { .. } => {
                if self.state != State::Handshake {
                    return;
                }
                self.state = State::Ready;
                self.backoff = MIN_BACKOFF;
                // SAFETY: our live connection; the handshake is done.
                unsafe {
                    if (*(*self.conn).read).timer_set() != 0 {
                        nginx_sys::ngx_del_timer((*self.conn).read);
                    }
                }
                if self.outage_logged && self.conf.subscribe {
                    // Invalidations sent while we were away are lost: drop
                    // what may have changed (the alias set is re-sent whole).
                    if let Some(cache) = self.conf.cache {
                        let dropped = cache.purge_all();
                        info!(
                            self.log,
                            "shortlink: dropped {} cached links after the daemon link outage",
                            dropped
                        );
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
                    self.send(&Request::Subscribe { id });
                }
                let batches = self.conf.clicks.unacked().to_vec();
                for batch in batches {
                    let id = self.next_id();
                    self.inflight.insert(id, Inflight::Clicks);
                    if !self.send(&Request::Clicks { id, batch }) {
                        return;
                    }
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
                self.fail(&format!("handshake refused: {reason}"));
            }
            Reply::Lookup { id, result } => {
                if let Some(Inflight::Lookup(code)) = self.inflight.remove(&id) {
                    let unsafe_target = match &result {
                        LookupResult::Found(link) => !targets_are_header_safe(link),
                        _ => false,
                    };
                    if unsafe_target {
                        // Never cached: each request then refuses it with 500.
                        error!(
                            self.log,
                            "shortlink: the daemon sent a target for \"{}\" that is not a safe Location value; not caching it",
                            String::from_utf8_lossy(&code)
                        );
                    } else if let Some(cache) = self.conf.cache {
                        let ttl = match result {
                            LookupResult::Found(_) => self.conf.ttl,
                            _ => self.conf.negative_ttl,
                        };
                        if ttl > 0 && !cache.insert(&code, &result, ttl, now()) {
                            warning!(
                                self.log,
                                "shortlink: zone is full, \"{}\" answered without caching",
                                String::from_utf8_lossy(&code)
                            );
                        }
                    }
                    if let Some(mut wait) = self.lookups.remove(&code) {
                        self.finish(&mut wait, Answer::Result(result));
                    }
                }
            }
            Reply::ClicksAck { id, batch_id } => {
                self.inflight.remove(&id);
                self.conf.clicks.acked(batch_id);
            }
            Reply::Error { id, message } => {
                if let Some(Inflight::Lookup(code)) = self.inflight.remove(&id) {
                    error!(
                        self.log,
                        "shortlink: daemon error while resolving code \"{}\": {}",
                        String::from_utf8_lossy(&code),
                        message
                    );
                    if let Some(mut wait) = self.lookups.remove(&code) {
                        self.finish(&mut wait, Answer::Unavailable);
                    }
                } else {
                    error!(self.log, "shortlink: daemon error: {}", message);
                }
            }
            Reply::Subscribed { id } | Reply::Pong { id } => {
                self.inflight.remove(&id);
            }
            Reply::Event(event) => self.apply(event),
        }
    }

    fn apply(&mut self, event: Event) {
        let Some(cache) = self.conf.cache else {
            return;
        };
        match event {
            Event::Invalidate { code } => {
                cache.purge(code.as_bytes());
            }
            Event::AliasSnapshotBegin { .. } => {
                let generation = cache.alias_snapshot_begin();
                self.alias_generation = generation;
                self.snapshot = Some((generation, true));
            }
            Event::Aliases { aliases } => {
                cache.alias_add(aliases.iter().map(|a| a.as_bytes()), self.alias_generation);
                for alias in &aliases {
                    // A new alias may have been cached as "not found".
                    cache.purge(alias.as_bytes());
                }
            }
            Event::AliasSnapshotEnd => {
                if let Some((generation, fitted)) = self.snapshot.take() {
                    cache.alias_snapshot_end(generation, fitted);
                }
            }
            Event::AliasesRemoved { aliases } => {
                cache.alias_remove(aliases.iter().map(|a| a.as_bytes()));
                for alias in &aliases {
                    cache.purge(alias.as_bytes());
                }
            }
        }
    }

    fn lookup_timed_out(&mut self, wait: *mut LookupWait) {
        // SAFETY: the timer's data is its boxed wait, still in the map
        // (removal deletes the timer first).
        let code = unsafe { (*wait).code.clone() };
        let Some(mut wait) = self.lookups.remove(&code) else {
            return;
        };
        error!(
            self.log,
            "shortlink: daemon lookup timed out after {} ms while resolving code \"{}\", socket: {}",
            self.conf.timeout,
            String::from_utf8_lossy(&code),
            self.peer()
        );
        let silent = self.last_read.wrapping_sub(wait.sent_at) as isize <= 0;
        self.finish(&mut wait, Answer::TimedOut);
        if silent {
            // Nothing came back since the lookup went out: treat the daemon
            // as down, so the next requests fail fast instead of waiting.
            self.fail(&format!(
                "no reply from {} within {} ms",
                self.peer(),
                self.conf.timeout
            ));
        }
    }

    /// Sends pending clicks (or spools them when memory is over its bound).
    fn flush_clicks(&mut self) {
        if self.state == State::Ready {
            if let Some(batch) = self.conf.clicks.take_batch() {
                let id = self.next_id();
                self.inflight.insert(id, Inflight::Clicks);
                self.send(&Request::Clicks { id, batch });
            }
        }
        if self.conf.clicks.over_bound() {
            match self.conf.clicks.spool_all() {
                Ok(n) => warning!(
                    self.log,
                    "shortlink: {} clicks held too long for {}, written to the spool",
                    n,
                    self.peer()
                ),
                Err(e) => error!(self.log, "shortlink: cannot spool clicks: {}", e),
            }
        }
    }

    fn arm_flush(&mut self) {
        // SAFETY: the flush event lives in the boxed link.
        unsafe { nginx_sys::ngx_add_timer(&mut self.flush, self.conf.flush_interval) };
    }

    /// Worker exit: what could not be delivered goes to the spool.
    pub fn shutdown(&mut self) {
        if self.state == State::Ready {
            self.flush_clicks();
        }
        let held = self.conf.clicks.held_clicks();
        if held > 0 {
            match self.conf.clicks.spool_all() {
                Ok(n) => info!(
                    self.log,
                    "shortlink: {} unacknowledged clicks written to the spool at exit", n
                ),
                Err(e) => error!(self.log, "shortlink: {} clicks lost at exit: {}", held, e),
            }
        }
        for ev in [&mut self.retry, &mut self.flush] {
            if ev.timer_set() != 0 {
                // SAFETY: our own timer events.
                unsafe { nginx_sys::ngx_del_timer(ev) };
            }
        }
        let waits: Vec<Box<LookupWait>> = self.lookups.drain().map(|(_, w)| w).collect();
        for mut wait in waits {
            self.finish(&mut wait, Answer::Unavailable);
        }
        if !self.conn.is_null() {
            // SAFETY: our live connection.
            unsafe { ngx_close_connection(self.conn) };
            self.conn = ptr::null_mut();
        }
    }
}

/// True when every target of `link` can go into a `Location` header as it is,
/// so hits served from the zone need no check.
fn targets_are_header_safe(link: &shortlink_core::ipc::EdgeLink) -> bool {
    let t = &link.targets;
    [
        Some(&link.target),
        t.desktop.as_ref(),
        t.mobile.as_ref(),
        t.ios.as_ref(),
        t.android.as_ref(),
    ]
    .into_iter()
    .flatten()
    .all(|v| shortlink_core::target::is_header_safe(v.as_bytes()))
}

fn guarded(ev: *mut ngx_event_t, f: impl FnOnce(&mut DaemonLink, *mut ngx_event_t)) {
    let run = std::panic::AssertUnwindSafe(|| {
        with_link(|l| f(l, ev));
    });
    if std::panic::catch_unwind(run).is_err() {
        // SAFETY: every event we create carries the cycle log.
        error!(
            unsafe { (*ev).log },
            "shortlink: internal error in the daemon link"
        );
    }
}

unsafe extern "C" fn on_read(ev: *mut ngx_event_t) {
    // SAFETY: nginx passes our connection's read event.
    let timed_out = unsafe { (*ev).timedout() } != 0;
    guarded(ev, |l, _| l.read_ready(timed_out));
}

unsafe extern "C" fn on_write(ev: *mut ngx_event_t) {
    guarded(ev, |l, _| {
        l.flush_out();
    });
}

unsafe extern "C" fn on_retry(ev: *mut ngx_event_t) {
    guarded(ev, |l, _| {
        if l.state == State::Down {
            l.connect();
        }
    });
}

unsafe extern "C" fn on_flush(ev: *mut ngx_event_t) {
    guarded(ev, |l, _| {
        l.flush_clicks();
        // SAFETY: reading nginx's exit flags on its own thread.
        if unsafe { nginx_sys::ngx_exiting } == 0 {
            l.arm_flush();
        }
    });
}

unsafe extern "C" fn on_lookup_timeout(ev: *mut ngx_event_t) {
    // SAFETY: the timer's data is its LookupWait.
    let wait = unsafe { (*ev).data }.cast::<LookupWait>();
    guarded(ev, |l, _| l.lookup_timed_out(wait));
}
