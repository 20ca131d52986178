//! `DaemonLink`: a worker's one persistent connection to shortlinkd.
//!
//! Everything runs on nginx's event loop: a non-blocking Unix socket wrapped
//! in an `ngx_connection_t` with read/write handlers, timers for lookups,
//! reconnects and click flushes. Requests waiting for a lookup are resumed by
//! posting their connection's write event, never from inside the link's own
//! handlers, so no request code runs while the link is borrowed.
//!
//! * `socket.rs`: the socket and the length-prefixed frames on it.
//! * `session.rs`: connecting, the handshake, outages and retries, and
//!   what each reply means.
//! * `lookups.rs`: lookups for one code share one request to the daemon
//!   (single flight), each bounded by its timer.
//! * `failures.rs`: failed answers, logged once per run of them.
//! * `sync.rs`: answers and pushed events into the shared zone.
//! * `flush.rs`: click batches to the daemon, or to the spool.
//! * `password.rs`: password checks of protected links, one per request.
//! * `visits.rs`: visit leases of limited links, shared per link.

use core::ptr;
use core::sync::atomic::Ordering::Relaxed;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use rustc_hash::FxHashMap;

use nginx_sys::{ngx_connection_t, ngx_event_t, ngx_http_request_t, ngx_log_t, ngx_msec_t};
use shortlink_core::failure_run::FailureRun;
use shortlink_core::handshake::{LinkAuth, Nonce};
use shortlink_core::ipc::{BatchId, EdgeLink, FrameError, LookupResult};
use shortlink_core::reconnect::{Failure, Reconnect};
use shortlink_core::spool::SpoolSeal;
use shortlink_core::Fingerprint;

use crate::cache::{LinkCache, Row};
use crate::clicks::{ClickBook, ClickZone, PageKey};
use crate::conf::MainConf;
use crate::guard::guard;
use crate::log::{error, info, warning};

mod failures;
mod flush;
mod lookups;
mod password;
mod session;
mod socket;
mod sync;
mod visits;

use lookups::{CodeBuf, LookupWait};
use password::PasswordWait;
use visits::VisitWait;

thread_local! {
    static LINK: RefCell<Option<Box<DaemonLink>>> = const { RefCell::new(None) };
}

/// Runs `f` on this worker's link; `None` when there is none or it is
/// already in use further up the stack.
pub fn with_link<R>(f: impl FnOnce(&mut DaemonLink) -> R) -> Option<R> {
    LINK.with(|cell| {
        let mut guard = cell.try_borrow_mut().ok()?;
        let link = guard.as_mut()?;
        let out = f(link);
        let (lookups, waiting) = (link.lookups.len() as u64, link.waiting as u64);
        link.figures(|row| {
            row.lookups_in_flight.store(lookups, Relaxed);
            row.requests_waiting.store(waiting, Relaxed);
        });
        Some(out)
    })
}

/// Worker start: builds this worker's link from the `http{}` settings,
/// installs it and starts connecting; nothing without `shortlink_pass`.
pub fn start_worker(main: &MainConf, log: *mut ngx_log_t, deliver: Deliver) {
    let (Some(socket), Some(key)) = (main.pass.clone(), main.key.as_ref()) else {
        return;
    };
    let zone = main.zone();
    let started_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    // SAFETY: ngx_worker is set before init_process runs.
    let worker = unsafe { nginx_sys::ngx_worker };
    let click_zone = main.clicks_zone.and_then(|z| {
        // SAFETY: the zone `shortlink_pass` added, initialised before the
        // workers start and mapped for their whole life.
        unsafe { ClickZone::from_zone(z) }
    });
    let Some((clicks, started)) = ClickBook::start(
        click_zone,
        worker,
        std::process::id(),
        started_ms,
        main.spool.clone().map(Into::into),
        SpoolSeal::new(key),
    ) else {
        error!(log, "shortlink: no memory for click counts; no daemon link");
        return;
    };
    if started.private {
        warning!(
            log,
            "shortlink: no free slot in the \"shortlink_clicks\" zone: this worker counts clicks in its own memory, lost if it crashes"
        );
    }
    if started.adopted > 0 {
        info!(
            log,
            "shortlink: took over the click counts of {} exited worker(s)", started.adopted
        );
    }
    let conf = LinkConf {
        socket,
        fingerprint: key.fingerprint(),
        auth: LinkAuth::new(key),
        connect_timeout: main.connect_timeout,
        timeout: main.timeout,
        flush_interval: main.flush_interval,
        subscribe: worker == 0,
        cache: main.cache(),
        ttl: zone.map_or(0, |z| z.ttl),
        negative_ttl: zone.map_or(0, |z| z.negative_ttl),
        deliver,
        clicks,
    };
    LINK.with(|cell| *cell.borrow_mut() = Some(DaemonLink::new(conf, log)));
    with_link(|l| {
        l.connect();
        l.arm_flush();
    });
}

/// Takes the link out at worker exit.
pub fn uninstall() -> Option<Box<DaemonLink>> {
    LINK.with(|cell| cell.try_borrow_mut().ok()?.take())
}

/// How a lookup ended, handed to each request that waited for it.
#[derive(Clone)]
pub enum Answer {
    /// The daemon knows the link (and it is in the zone, if there is one).
    /// Shared by every request that waited for it, and small in their ctx.
    Found(Rc<EdgeLink>),
    NotFound,
    Gone,
    /// The daemon sent a target that cannot go into a `Location` header:
    /// refused and logged by the link, never cached.
    Refused,
    /// No reply within `shortlink_timeout`.
    TimedOut,
    /// The daemon is unreachable, or failed the lookup.
    Unavailable,
    /// The password opens the link: redirect, count, set the cookie.
    Granted(Rc<EdgeLink>),
    /// The password is wrong: the form again.
    WrongPassword,
    /// Too many wrong passwords: try after this many seconds.
    Throttled(u32),
    /// The daemon's password checks are all taken: try again shortly.
    PasswordBusy,
    /// A leased visit of the limited link was spent for this request:
    /// answer it again from the zone, the visit paid.
    Admitted,
    /// The limited link has no visit left to lease: it is used up here.
    Exhausted,
}

impl From<LookupResult> for Answer {
    fn from(result: LookupResult) -> Self {
        match result {
            LookupResult::Found(link) => Answer::Found(Rc::new(link)),
            LookupResult::NotFound => Answer::NotFound,
            LookupResult::Gone => Answer::Gone,
        }
    }
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

/// Why the link is down.
#[derive(Debug, thiserror::Error)]
pub enum LinkDown {
    #[error("socket() failed: {0}")]
    Socket(std::io::Error),
    #[error("connect() to {peer} failed: {err}")]
    Connect { peer: String, err: std::io::Error },
    #[error("no free connection for the daemon link")]
    NoConnection,
    #[error("cannot add the daemon link to the event loop")]
    EventLoop,
    #[error("write to the daemon failed")]
    Write,
    #[error("read from the daemon failed")]
    Read,
    #[error("the daemon closed the connection")]
    Closed,
    #[error("the daemon did not finish the handshake in time")]
    HandshakeTimeout,
    #[error("handshake refused: {0}")]
    Refused(String),
    #[error("the daemon did not prove it holds the deployment key")]
    Unauthenticated,
    #[error("unexpected {0} from the daemon")]
    Unexpected(&'static str),
    #[error("no random nonce for the handshake: {0}")]
    Random(String),
    #[error("bad frame from the daemon: {0}")]
    BadFrame(FrameError),
    #[error("no reply from {peer} within {ms} ms")]
    Silent { peer: String, ms: ngx_msec_t },
}

impl LinkDown {
    /// How long to wait before trying again depends on this: nobody
    /// listening is retried at once, anything else backs off.
    fn failure(&self) -> Failure {
        match self {
            LinkDown::Connect { err, .. }
                if matches!(
                    err.raw_os_error(),
                    Some(libc::ENOENT) | Some(libc::ECONNREFUSED)
                ) =>
            {
                Failure::NoListener
            }
            _ => Failure::Other,
        }
    }
}

/// A frame could not be sent: the link went down doing so (and has
/// already failed what waited on it).
#[derive(Debug)]
pub struct NotSent;

#[derive(PartialEq, Eq, Clone, Copy, Debug)]
enum State {
    Down,
    Handshake,
    Ready,
}

/// What a request id was used for, to route its reply.
enum Inflight {
    /// The code, and the zone's purge count before the lookup went out.
    Lookup(CodeBuf, u64),
    /// The batch of this page, under this id.
    Clicks(PageKey, BatchId),
    /// A password check, waiting in `password_checks` under the same id.
    Password,
    /// A visit lease of this link, asked under this limit.
    Visits(u64, u64),
    Other,
}

/// Settings the link is made from.
pub struct LinkConf {
    pub socket: String,
    pub fingerprint: Fingerprint,
    /// Proves the key to the daemon and checks the daemon's proof.
    pub auth: LinkAuth,
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
    /// The daemon's and our nonce of the handshake under way.
    nonces: Option<(Nonce, Nonce)>,
    outage_logged: bool,
    /// When to try the socket again after the link went down.
    reconnect: Reconnect,
    /// Lookups, password checks and visit leases the daemon failed or did
    /// not answer in time: the first of a run is logged, the rest counted
    /// until one is answered again.
    failures: FailureRun,
    retry: ngx_event_t,
    flush: ngx_event_t,
    /// Sends again the batches the daemon failed to store.
    click_retry: ngx_event_t,
    /// Posted when a page fills up: sends it once the current events are
    /// handled, not inside the request that filled it.
    send_full: ngx_event_t,
    /// Posted when a frame is queued with `send_soon`: writes the queue
    /// once the current events are handled.
    send_out: ngx_event_t,
    /// Wait before the next of those sends.
    click_backoff: ngx_msec_t,
    /// The daemon fails to store clicks (said once until it stores again).
    clicks_failing: bool,
    /// The spool fails (said once until it works again).
    spool_failing: bool,
    /// Flushes so far, to look for dead workers' slots now and then.
    flushes: u32,
    out: Vec<u8>,
    out_pos: usize,
    inb: Vec<u8>,
    last_read: ngx_msec_t,
    next_id: u32,
    /// By request id: ids are ours, so a plain fast hash.
    inflight: FxHashMap<u32, Inflight>,
    /// By code, which the visitor chose: a hash with a random seed, so no
    /// one can make the codes of a worker's lookups collide.
    lookups: HashMap<CodeBuf, Box<LookupWait>, foldhash::fast::RandomState>,
    /// Requests waiting on `lookups`, all codes together.
    waiting: usize,
    /// Password checks by request id.
    password_checks: HashMap<u32, Box<PasswordWait>>,
    /// Visit leases by link id (ids are the daemon's, not the visitor's).
    visit_waits: FxHashMap<u64, Box<VisitWait>>,
    /// Alias snapshot in progress: its generation and whether all fitted.
    snapshot: Option<(u64, bool)>,
    /// The generation of the last snapshot begun, for aliases added live.
    alias_generation: u64,
}

fn now() -> ngx_msec_t {
    // SAFETY: nginx updates ngx_current_msec on its event loop; we run there.
    unsafe { nginx_sys::ngx_current_msec }
}

/// A zeroed event: its initial state in nginx.
fn event() -> ngx_event_t {
    // SAFETY: ngx_event_t is plain data; all-zero is how nginx starts one.
    unsafe { core::mem::zeroed() }
}

impl DaemonLink {
    fn new(conf: LinkConf, log: *mut ngx_log_t) -> Box<Self> {
        let mut link = Box::new(Self {
            conf,
            log,
            conn: ptr::null_mut(),
            state: State::Down,
            nonces: None,
            outage_logged: false,
            reconnect: Reconnect::new(),
            failures: FailureRun::new(),
            retry: event(),
            flush: event(),
            click_retry: event(),
            send_full: event(),
            send_out: event(),
            click_backoff: flush::FIRST_RETRY,
            clicks_failing: false,
            spool_failing: false,
            flushes: 0,
            out: Vec::new(),
            out_pos: 0,
            inb: Vec::with_capacity(64 * 1024),
            last_read: 0,
            next_id: 0,
            inflight: FxHashMap::default(),
            lookups: HashMap::default(),
            waiting: 0,
            password_checks: HashMap::new(),
            visit_waits: FxHashMap::default(),
            snapshot: None,
            alias_generation: 0,
        });
        for (ev, handler) in [
            (
                &mut link.retry,
                session::on_retry as unsafe extern "C" fn(*mut ngx_event_t),
            ),
            (&mut link.flush, flush::on_flush),
            (&mut link.click_retry, flush::on_click_retry),
            (&mut link.send_full, flush::on_send_full),
            (&mut link.send_out, socket::on_send_out),
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

    /// Updates this worker's figures for `shortlink_status` (when there is
    /// a zone to keep them in).
    fn figures<R>(&self, f: impl FnOnce(&Row) -> R) {
        if let Some(cache) = self.conf.cache {
            f(cache.status_rows().mine());
        }
    }

    fn next_id(&mut self) -> u32 {
        self.next_id = self.next_id.wrapping_add(1);
        self.next_id
    }
}

/// Body of every event handler of the link: `f` on the link, under the
/// panic guard.
fn on_event(ev: *mut ngx_event_t, f: impl FnOnce(&mut DaemonLink)) {
    // SAFETY: every event of the link carries the cycle log.
    let log = || unsafe { (*ev).log };
    guard("the daemon link", log, (), || {
        with_link(f);
    });
}
