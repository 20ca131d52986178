//! Per-request state: the code taken from the URI, what it decoded to and
//! how it was answered. Lives in the request pool, so it goes with the request.

use nginx_sys::{ngx_http_request_t, ngx_str_t};
use ngx::http::{HttpModuleLocationConf, HttpModuleMainConf, NgxHttpCoreModule, Request};

use crate::net::Answer;
use crate::Module;

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
    /// The link id: from the zone or the daemon, or decoded on demand.
    pub id: Option<u64>,
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
    /// The request this belongs to, for `waiting` cleanup.
    pub request: *mut ngx_http_request_t,
    /// The `Location` sent, for `$shortlink_target`.
    pub target: ngx_str_t,
    /// Device class, bot flag and referrer, once something needed them.
    pub visitor: Option<crate::handler::Visitor>,
}

impl Drop for RequestCtx {
    fn drop(&mut self) {
        if self.waiting {
            let code = self.code.as_bytes().to_vec();
            let r = self.request;
            crate::net::with_link(|l| l.forget(&code, r));
        }
    }
}

impl RequestCtx {
    /// `$shortlink_id`: decoded from the code if nothing supplied it yet.
    pub fn id_text(&mut self) -> &[u8] {
        if self.id.is_none() && self.generated {
            // SAFETY: the codec lives in the main conf, which outlives requests.
            if let Ok(id) = unsafe { &*self.codec }.decode(self.code.as_bytes()) {
                self.set_id(id);
            }
        }
        self.format_id();
        &self.id_text[..self.id_len as usize]
    }

    /// The context of a request in a `shortlink on` location, made on first
    /// use (by the handler or by a variable evaluated earlier, e.g. in a
    /// `limit_req` key). `None` where the module is off.
    pub fn get_or_init(r: &mut Request) -> Option<&mut RequestCtx> {
        let module = Module::module_ref();
        // SAFETY: r is a live request.
        if let Some(ctx) = unsafe { Self::existing((r as *mut Request).cast()) } {
            // SAFETY: allocated from this request's pool by us; no other
            // reference to it is held across this call.
            return Some(unsafe { &mut *ctx });
        }
        let lcf = Module::location_conf(r)?;
        if !lcf.is_enabled() {
            return None;
        }
        let main = Module::main_conf(r)?;
        let codec = main.codec.as_ref()?;
        let code = code_of(r);
        let mut ctx = RequestCtx {
            code,
            generated: false,
            id: None,
            codec,
            id_text: [0; 20],
            id_len: 0,
            status: CacheStatus::Unset,
            answer: None,
            waiting: false,
            request: (r as *mut Request).cast(),
            target: ngx_str_t::default(),
            visitor: None,
        };
        // Only the check character here: the id comes with the cached entry,
        // and is decoded only if a variable asks for it first.
        // A string that is not a generated code goes on only if it may be an
        // alias; everything else is INVALID from here on.
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
        r.set_module_ctx(ptr.cast(), module);
        // SAFETY: just allocated from the request pool and initialised.
        Some(unsafe { &mut *ptr })
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

    pub fn set_id(&mut self, id: u64) {
        self.id = Some(id);
        self.id_len = 0;
    }

    /// Writes `id` in decimal into `id_text`, once, for `$shortlink_id`.
    fn format_id(&mut self) {
        let Some(id) = self.id else { return };
        if self.id_len > 0 {
            return;
        }
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
    let raw: &ngx_http_request_t = r.as_ref();
    let uri = raw.uri;
    let bytes = uri.as_bytes();
    let name = NgxHttpCoreModule::location_conf(r).map_or(&[][..], |clcf| clcf.name.as_bytes());
    let skip = if !name.is_empty() && bytes.starts_with(name) {
        name.len()
    } else {
        bytes.iter().rposition(|&b| b == b'/').map_or(0, |p| p + 1)
    };
    let mut code = uri;
    // SAFETY: skip <= uri.len, so the slice stays inside r->uri.
    code.data = unsafe { uri.data.add(skip) };
    code.len = uri.len - skip;
    code
}

/// Could this non-code string be an alias? Only with a daemon, and not when
/// the zone's alias set is complete and does not hold it. Decided here, on
/// first use, so `$shortlink_cache_status` says `INVALID` already in earlier
/// phases (a `limit_req` key), with no I/O.
fn may_be_alias(main: &crate::conf::MainConf, code: &[u8]) -> bool {
    if main.pass.is_none() {
        return false;
    }
    let Some(zone) = main.zone() else {
        return true;
    };
    // SAFETY: the zone was initialised before workers started.
    match unsafe { crate::cache::LinkCache::from_zone(zone.zone) } {
        Some(cache) => cache.alias_known(code) != Some(false),
        None => true,
    }
}
