//! Per-request state: the code taken from the URI, what it decoded to, who
//! is asking and how it was answered. Lives in the request pool, so it goes
//! with the request.

use nginx_sys::{ngx_http_request_t, ngx_str_t};
use ngx::http::{HttpModuleLocationConf, HttpModuleMainConf, NgxHttpCoreModule, Request};

use crate::conf::{LocConf, MainConf};
use crate::net::Answer;
use crate::Module;

mod visitor;

pub use visitor::{country_of, Visitor};

/// How the edge answered, for `$shortlink_cache_status`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum CacheStatus {
    /// Not decided yet (valid code, no answer so far).
    Unset,
    /// Answered from the shared zone.
    Hit,
    /// Asked the daemon.
    Miss,
    /// A cached "not found" or "gone".
    Negative,
    /// Not a generated code nor a known alias: answered with no lookup.
    Invalid,
    /// The link's expiry has passed, or it is disabled (checked at the edge).
    Expired,
    /// Not answered from the cache: no zone, or a method other than GET/HEAD.
    Bypass,
}

impl CacheStatus {
    /// Its place in `edge_status::CACHE_STATUSES`, where `shortlink_status`
    /// counts it (a request answered before any status was set counts as
    /// BYPASS).
    pub fn figure_index(self) -> usize {
        match self {
            CacheStatus::Hit => 0,
            CacheStatus::Miss => 1,
            CacheStatus::Negative => 2,
            CacheStatus::Invalid => 3,
            CacheStatus::Expired => 4,
            CacheStatus::Unset | CacheStatus::Bypass => 5,
        }
    }

    /// The variable's value.
    pub fn as_bytes(self) -> &'static [u8] {
        match self {
            CacheStatus::Unset => b"",
            CacheStatus::Hit => b"HIT",
            CacheStatus::Miss => b"MISS",
            CacheStatus::Negative => b"NEGATIVE",
            CacheStatus::Invalid => b"INVALID",
            CacheStatus::Expired => b"EXPIRED",
            CacheStatus::Bypass => b"BYPASS",
        }
    }
}

/// What the module knows about one request.
pub struct RequestCtx {
    /// The code: a slice of `r->uri`, valid for the request's life.
    pub code: ngx_str_t,
    /// The path passes the check of a generated code.
    pub generated: bool,
    /// The path was the code and `shortlink_preview_suffix`: answer the
    /// link's preview page, not its redirect.
    pub preview: bool,
    /// The link id (when `id_known`): from the zone or the daemon, or
    /// decoded on demand. Not an `Option`, to keep the ctx within 128 bytes,
    /// which the compiler moves into the pool without a `memcpy` call.
    id: u64,
    id_known: bool,
    /// For decoding the id on demand; lives as long as the configuration.
    codec: *const shortlink_core::Codec,
    /// `id` in decimal, kept here so variables can point at it.
    id_text: [u8; 20],
    id_len: u8,
    pub status: CacheStatus,
    /// The daemon's answer, once a suspended request is resumed.
    pub answer: Option<Answer>,
    /// Waiting in the daemon link's list (removed on drop if still there).
    pub waiting: bool,
    /// A protected link's form was posted: its body is read.
    pub body_read: bool,
    /// Waiting for the daemon's password check (forgotten on drop).
    pub checking: bool,
    /// The daemon granted the password: the redirect sets the cookie.
    pub granted: bool,
    /// A leased visit of the limited link was spent for this request.
    pub visit_paid: bool,
    /// Waiting for a visit lease of the link `id` (forgotten on drop).
    pub awaiting_visit: bool,
    /// The request this belongs to, for `waiting` cleanup.
    request: *mut ngx_http_request_t,
    /// The `Location` sent, for `$shortlink_target`.
    pub target: ngx_str_t,
    /// Device class, bot flag and referrer, once something needed them.
    visitor: Option<Visitor>,
}

// Every request in a `shortlink on` location makes one: keep it small.
const _: () = assert!(core::mem::size_of::<RequestCtx>() <= 128);

impl Drop for RequestCtx {
    #[inline]
    fn drop(&mut self) {
        if self.waiting {
            let code = self.code.as_bytes().to_vec();
            let r = self.request;
            crate::net::with_link(|l| l.forget(&code, r));
        }
        if self.checking {
            let r = self.request;
            crate::net::with_link(|l| l.forget_password(r));
        }
        if self.awaiting_visit {
            let (link, r) = (self.id, self.request);
            crate::net::with_link(|l| l.forget_visit(link, r));
        }
    }
}

impl RequestCtx {
    /// The ctx of a request in a `shortlink on` location (`main` and `lcf`
    /// are its confs), made on first use. `None` where the module is off.
    ///
    /// # Safety
    /// `r` must be live. The ctx lives in its pool: the reference must not
    /// outlive the request, and no other reference to the ctx may be used
    /// while it is held. nginx reads the module's variables (through
    /// [`RequestCtx::get_or_init`]) while a response is sent, so a phase
    /// handler lets go of it before sending.
    pub unsafe fn of<'a>(
        r: &mut Request,
        main: &MainConf,
        lcf: &LocConf,
    ) -> Option<&'a mut RequestCtx> {
        // SAFETY: r is live (per the contract).
        match unsafe { Self::existing(r.as_mut()) } {
            // SAFETY: allocated from this request's pool by `create`; the
            // caller holds no other reference to it.
            Some(ctx) => Some(unsafe { &mut *ctx }),
            None => Self::create(r, main, lcf),
        }
    }

    /// For variables, evaluated in any phase (a `limit_req` key, a log
    /// line): the request's ctx, made on first use.
    pub fn get_or_init(r: &mut Request) -> Option<&mut RequestCtx> {
        // SAFETY: r is live; the ctx is borrowed as long as r is, and
        // variables are evaluated while no phase handler of ours holds it.
        if let Some(ctx) = unsafe { Self::existing(r.as_mut()) } {
            // SAFETY: as above; allocated from this request's pool by `create`.
            return Some(unsafe { &mut *ctx });
        }
        let lcf = Module::location_conf(r)?;
        let main = Module::main_conf(r)?;
        Self::create(r, main, lcf)
    }

    /// The request's ctx, if one was made.
    ///
    /// # Safety
    /// `r` must be a live request.
    pub unsafe fn existing(r: *mut ngx_http_request_t) -> Option<*mut RequestCtx> {
        // SAFETY: r->ctx has a slot for every http module.
        let slot = unsafe { *(*r).ctx.add(Module::module_ref().ctx_index) };
        (!slot.is_null()).then_some(slot.cast())
    }

    /// Makes the ctx in the request's pool: takes the code from the URI and
    /// checks it (the check character only: the id comes with the cached
    /// entry, and is decoded only if a variable asks for it first). A string
    /// that is not a generated code goes on only if it may be an alias;
    /// everything else is INVALID from here on.
    fn create<'a>(r: &mut Request, main: &MainConf, lcf: &LocConf) -> Option<&'a mut RequestCtx> {
        if !lcf.is_enabled() {
            return None;
        }
        let codec = main.codec.as_ref()?;
        let (code, preview) = preview_of(code_of(r), lcf);
        let mut ctx = RequestCtx {
            code,
            generated: false,
            preview,
            id: 0,
            id_known: false,
            codec,
            id_text: [0; 20],
            id_len: 0,
            status: CacheStatus::Unset,
            answer: None,
            waiting: false,
            body_read: false,
            checking: false,
            granted: false,
            visit_paid: false,
            awaiting_visit: false,
            request: r.as_mut(),
            target: ngx_str_t::default(),
            visitor: None,
        };
        if codec.verify(code.as_bytes()).is_ok() {
            ctx.generated = true;
        } else if !(shortlink_core::alias::is_alias_shaped(code.as_bytes())
            && may_be_alias(main, code.as_bytes()))
        {
            ctx.status = CacheStatus::Invalid;
        }
        let ptr = r.pool().allocate(ctx);
        if ptr.is_null() {
            return None;
        }
        r.set_module_ctx(ptr.cast(), Module::module_ref());
        // SAFETY: just allocated from the request pool and initialised; the
        // pool frees it (running Drop) with the request.
        Some(unsafe { &mut *ptr })
    }

    /// `$shortlink_id`: decoded from the code if nothing supplied it yet.
    pub fn id_text(&mut self) -> &[u8] {
        if !self.id_known && self.generated {
            // SAFETY: the codec lives in the main conf, which outlives requests.
            if let Ok(id) = unsafe { &*self.codec }.decode(self.code.as_bytes()) {
                self.set_id(id);
            }
        }
        self.format_id();
        &self.id_text[..self.id_len as usize]
    }

    /// Records the link id the answer came with, unless one is known.
    pub fn note_id(&mut self, id: u64) {
        if !self.id_known {
            self.set_id(id);
        }
    }

    fn set_id(&mut self, id: u64) {
        self.id = id;
        self.id_known = true;
        self.id_len = 0;
    }

    /// Writes `id` in decimal into `id_text`, once, for `$shortlink_id`.
    fn format_id(&mut self) {
        if !self.id_known || self.id_len > 0 {
            return;
        }
        let id = self.id;
        let mut buf = [0u8; 20];
        let mut n = id;
        let mut i = buf.len();
        loop {
            i -= 1;
            buf[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        let len = buf.len() - i;
        self.id_text[..len].copy_from_slice(&buf[i..]);
        self.id_len = len as u8;
    }
}

/// The code is what follows the location's prefix (`location /s/` → `/s/aZ3k`
/// gives `aZ3k`); for regex or exact locations, the last path segment. The
/// query string is not part of `r->uri`, so it never changes the code.
fn code_of(r: &Request) -> ngx_str_t {
    let uri = r.as_ref().uri;
    let bytes = uri.as_bytes();
    let name = NgxHttpCoreModule::location_conf(r).map_or(&[][..], |clcf| clcf.name.as_bytes());
    let skip = if !name.is_empty() && bytes.starts_with(name) {
        name.len()
    } else {
        bytes.iter().rposition(|&b| b == b'/').map_or(0, |p| p + 1)
    };
    let rest = &bytes[skip..];
    ngx_str_t {
        len: rest.len(),
        data: rest.as_ptr().cast_mut(),
    }
}

/// The code of a preview path (`shortlink_preview_suffix`) and true, or
/// `path` as it is and false.
#[inline]
fn preview_of(path: ngx_str_t, lcf: &LocConf) -> (ngx_str_t, bool) {
    let Some(suffix) = lcf.preview_suffix() else {
        return (path, false);
    };
    match shortlink_core::preview::strip_suffix(path.as_bytes(), suffix) {
        Some(code) => (
            ngx_str_t {
                len: code.len(),
                data: path.data,
            },
            true,
        ),
        None => (path, false),
    }
}

/// Could this non-code string be an alias? Only with a daemon, and not when
/// the zone's alias set is complete and does not hold it. Decided here, on
/// first use, so `$shortlink_cache_status` says `INVALID` already in earlier
/// phases (a `limit_req` key), with no I/O.
fn may_be_alias(main: &MainConf, code: &[u8]) -> bool {
    if main.pass.is_none() {
        return false;
    }
    match main.cache() {
        Some(cache) => cache.alias_known(code) != Some(false),
        None => true,
    }
}
