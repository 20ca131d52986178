//! The request path: runs in the precontent phase of `shortlink on`
//! locations, after access checks and `limit_req`, before `try_files`.
//!
//! GET and HEAD only; then the code is decoded (no I/O) and a path that is
//! neither a valid code nor a known alias is answered at once; then the
//! shared zone; on a miss, the request is suspended on the worker's daemon
//! link and this handler runs again when the answer is posted.

use nginx_sys::{
    ngx_http_complex_value_t, ngx_http_request_t, ngx_int_t, ngx_str_t, NGX_DECLINED, NGX_DONE,
    NGX_HTTP_GET, NGX_HTTP_HEAD, NGX_HTTP_INTERNAL_SERVER_ERROR, NGX_HTTP_NOT_ALLOWED,
    NGX_HTTP_NOT_FOUND, NGX_HTTP_SERVICE_UNAVAILABLE,
};
use ngx::core::Pool;
use ngx::http::{HttpModuleLocationConf, HttpModuleMainConf, Request};
use shortlink_core::device::{classify, DeviceClass};
use shortlink_core::ipc::LookupResult;
use shortlink_core::target::is_header_safe;

use crate::cache::{Cached, Hit, LinkCache};
use crate::conf::LocConf;
use crate::log::{debug, error};
use crate::net::{with_link, Answer, Started};
use crate::request::{CacheStatus, RequestCtx};
use crate::Module;

/// 410 (nginx has no constant for it).
const NGX_HTTP_GONE: u32 = 410;

/// Phase handler entry point: no panic leaves it.
pub extern "C" fn precontent_handler(r: *mut ngx_http_request_t) -> ngx_int_t {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: nginx passes a live request to phase handlers.
        handle(unsafe { Request::from_ngx_http_request(r) })
    })) {
        Ok(rc) => rc,
        Err(_) => {
            // SAFETY: the request is still live; its connection has a log.
            error!(
                unsafe { (*(*r).connection).log },
                "shortlink: internal error while handling request"
            );
            NGX_HTTP_INTERNAL_SERVER_ERROR as ngx_int_t
        }
    }
}

/// What to answer once the link is known.
enum Outcome {
    Redirect(Hit),
    NotFound,
    Gone,
    Unavailable,
}

fn handle(r: &mut Request) -> ngx_int_t {
    if !r.is_main() {
        return NGX_DECLINED as ngx_int_t;
    }
    let Some(lcf) = Module::location_conf(r) else {
        return NGX_DECLINED as ngx_int_t;
    };
    if !lcf.is_enabled() {
        return NGX_DECLINED as ngx_int_t;
    }
    let Some(main) = Module::main_conf(r) else {
        return NGX_DECLINED as ngx_int_t;
    };
    let method = r.as_ref().method as u32;
    let log = r.log();
    let raw: *mut ngx_http_request_t = (r as *mut Request).cast();
    let pool = r.pool();
    let header_only = r.header_only() || method == NGX_HTTP_HEAD;

    let Some(ctx) = RequestCtx::get_or_init(r) else {
        return NGX_DECLINED as ngx_int_t;
    };

    // Resumed after a lookup: answer from what the daemon said.
    if let Some(answer) = ctx.answer.take() {
        let code = ctx.code;
        let outcome = match answer {
            Answer::Result(LookupResult::Found(link)) => {
                let target = link.target_for(visitor(r).device).as_bytes();
                // The zone never holds an unsafe target (see net.rs); a
                // reply straight from the daemon is checked here.
                if !is_header_safe(target) {
                    error!(
                        log,
                        "shortlink: target of code \"{}\" is not a safe Location value, refusing it", code
                    );
                    return NGX_HTTP_INTERNAL_SERVER_ERROR as ngx_int_t;
                }
                let Some(target) = pool_copy(&pool, target) else {
                    return NGX_HTTP_INTERNAL_SERVER_ERROR as ngx_int_t;
                };
                if let Some(ctx) = RequestCtx::get_or_init(r) {
                    if ctx.id.is_none() {
                        ctx.set_id(link.id);
                    }
                }
                Outcome::Redirect(Hit {
                    id: link.id,
                    status: link.status,
                    expires_at: link.expires_at,
                    disabled: link.disabled,
                    target,
                })
            }
            Answer::Result(LookupResult::NotFound) => Outcome::NotFound,
            Answer::Result(LookupResult::Gone) => Outcome::Gone,
            Answer::TimedOut | Answer::Unavailable => Outcome::Unavailable,
        };
        return respond(r, lcf, outcome, header_only);
    }

    if method != NGX_HTTP_GET && method != NGX_HTTP_HEAD {
        ctx.status = CacheStatus::Bypass;
        return not_allowed(r);
    }

    let code = ctx.code;
    let cache = main.zone().and_then(|z| {
        // SAFETY: the zone was initialised before workers started.
        unsafe { LinkCache::from_zone(z.zone) }
    });

    if ctx.status == CacheStatus::Invalid {
        // Neither a generated code nor a possible alias (`RequestCtx::get_or_init`).
        debug!(log, "shortlink: \"{}\" is not a valid code or alias", code);
        return respond(r, lcf, Outcome::NotFound, header_only);
    }

    if main.pass.is_none() {
        // Validation only: let the rest of the configuration answer.
        return NGX_DECLINED as ngx_int_t;
    }

    if let Some(cache) = cache {
        // SAFETY: reading nginx's cached clock on its own thread.
        let now = unsafe { nginx_sys::ngx_current_msec };
        let device = visitor(r).device;
        let Some(ctx) = RequestCtx::get_or_init(r) else {
            return NGX_DECLINED as ngx_int_t;
        };
        match cache.lookup(code.as_bytes(), now, device, |t| pool_copy(&pool, t)) {
            Cached::Found(hit) => {
                ctx.status = CacheStatus::Hit;
                if ctx.id.is_none() {
                    ctx.set_id(hit.id);
                }
                return respond(r, lcf, Outcome::Redirect(hit), header_only);
            }
            Cached::NotFound => {
                ctx.status = CacheStatus::Negative;
                return respond(r, lcf, Outcome::NotFound, header_only);
            }
            Cached::Gone => {
                ctx.status = CacheStatus::Negative;
                return respond(r, lcf, Outcome::Gone, header_only);
            }
            Cached::Miss => ctx.status = CacheStatus::Miss,
        }
    } else {
        ctx.status = CacheStatus::Bypass;
    }
    let Some(ctx) = RequestCtx::get_or_init(r) else {
        return NGX_DECLINED as ngx_int_t;
    };

    match with_link(|l| l.lookup(code.as_bytes(), raw)) {
        Some(Started::Waiting) => {
            ctx.waiting = true;
            // Notice a client that gives up while we wait.
            // SAFETY: a live main request.
            unsafe {
                (*raw).read_event_handler = Some(nginx_sys::ngx_http_test_reading);
                (*raw).write_event_handler = Some(nginx_sys::ngx_http_request_empty_handler);
            }
            NGX_DONE as ngx_int_t
        }
        Some(Started::Unavailable) => {
            // The outage itself is logged once by the link, not per request.
            debug!(
                log,
                "shortlink: daemon unavailable while resolving code \"{}\", socket: unix:{}",
                code,
                main.pass.as_deref().unwrap_or("")
            );
            respond(r, lcf, Outcome::Unavailable, header_only)
        }
        None => {
            error!(
                log,
                "shortlink: no daemon link in this worker while resolving code \"{}\"", code
            );
            respond(r, lcf, Outcome::Unavailable, header_only)
        }
    }
}

/// Hands a lookup's answer to a waiting request and wakes it up.
pub fn deliver(r: *mut ngx_http_request_t, answer: Answer) {
    // SAFETY: r is a live request: requests that go away are removed from
    // the waiter list by their ctx's drop before their pool is freed.
    unsafe {
        let Some(ctx) = RequestCtx::existing(r) else {
            return;
        };
        let ctx = &mut *ctx;
        ctx.answer = Some(answer);
        ctx.waiting = false;
        (*r).read_event_handler = Some(nginx_sys::ngx_http_block_reading);
        (*r).write_event_handler = Some(resume);
        let c = (*r).connection;
        nginx_sys::ngx_post_event(
            (*c).write,
            core::ptr::addr_of_mut!(nginx_sys::ngx_posted_events),
        );
    }
}

unsafe extern "C" fn resume(r: *mut ngx_http_request_t) {
    // SAFETY: called by nginx's request handler for a live request.
    unsafe {
        (*r).write_event_handler = Some(nginx_sys::ngx_http_core_run_phases);
        nginx_sys::ngx_http_core_run_phases(r);
    }
}

/// Who is asking, read from the request headers once per request.
#[derive(Clone, Copy)]
pub struct Visitor {
    device: DeviceClass,
    bot: bool,
    /// The `Referer` value (null data when absent), owned by the request.
    referer: ngx_str_t,
}

/// The request's visitor, read from its headers on first use and kept in
/// its ctx: only answers that need it (a found link, a counted click) pay.
fn visitor(r: &mut Request) -> Visitor {
    if let Some(v) = RequestCtx::get_or_init(r).and_then(|c| c.visitor) {
        return v;
    }
    let v = Visitor::of(r);
    if let Some(ctx) = RequestCtx::get_or_init(r) {
        ctx.visitor = Some(v);
    }
    v
}

impl Visitor {
    fn of(r: &Request) -> Self {
        let (device, bot) = r.user_agent().map_or((DeviceClass::Other, false), |ua| {
            classify_cached(ua.as_bytes())
        });
        let raw: &ngx_http_request_t = r.as_ref();
        let h = raw.headers_in.referer;
        // SAFETY: headers_in.referer is null or a parsed header of this request.
        let referer = if h.is_null() {
            ngx_str_t::default()
        } else {
            unsafe { (*h).value }
        };
        Self {
            device,
            bot,
            referer,
        }
    }
}

/// Slots of the per-worker `User-Agent` classification cache.
const UA_SLOTS: usize = 4096;

thread_local! {
    /// Direct-mapped: (hash of the whole value, class, bot). Traffic repeats a
    /// few thousand agents, so most requests skip the substring search. A
    /// hash collision can only mislabel a click's device class.
    static UA_CACHE: core::cell::RefCell<Vec<(u64, DeviceClass, bool)>> =
        core::cell::RefCell::new(vec![(0, DeviceClass::Other, false); UA_SLOTS]);
}

fn classify_cached(ua: &[u8]) -> (DeviceClass, bool) {
    let h = ua_hash(ua);
    UA_CACHE.with(|cache| {
        let Ok(mut cache) = cache.try_borrow_mut() else {
            return classify(Some(ua));
        };
        let slot = &mut cache[(h as usize) % UA_SLOTS];
        if slot.0 == h {
            return (slot.1, slot.2);
        }
        let (device, bot) = classify(Some(ua));
        *slot = (h, device, bot);
        (device, bot)
    })
}

/// A fast 64-bit hash of the value and its length (never 0, the empty slot).
fn ua_hash(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0x9e37_79b9_7f4a_7c15 ^ bytes.len() as u64;
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        h = (h.rotate_left(5) ^ w).wrapping_mul(0x5175_2b52_2b77_9c6b);
    }
    for &b in chunks.remainder() {
        h = (h.rotate_left(5) ^ u64::from(b)).wrapping_mul(0x5175_2b52_2b77_9c6b);
    }
    h | 1
}

fn not_allowed(r: &mut Request) -> ngx_int_t {
    if r.add_header_out("Allow", "GET, HEAD").is_none() {
        return NGX_HTTP_INTERNAL_SERVER_ERROR as ngx_int_t;
    }
    NGX_HTTP_NOT_ALLOWED as ngx_int_t
}

/// Sends the answer: a redirect, or 404/410/503 (or the fallback).
fn respond(r: &mut Request, lcf: &LocConf, outcome: Outcome, header_only: bool) -> ngx_int_t {
    let fallback = lcf.fallback.as_ref().and_then(|f| f.as_deref());
    let (status, target, count) = match outcome {
        Outcome::Redirect(hit) => {
            let now = nginx_sys::ngx_time() as i64;
            if hit.disabled || hit.expires_at.is_some_and(|t| t <= now) {
                if let Some(ctx) = RequestCtx::get_or_init(r) {
                    ctx.status = CacheStatus::Expired;
                }
                return fallback_or(r, lcf, fallback, NGX_HTTP_GONE);
            }
            let status = hit
                .status
                .filter(|s| matches!(s, 301 | 302 | 307 | 308))
                .unwrap_or(lcf.redirect as u16);
            let id = hit.id;
            (status, hit.target, Some(id))
        }
        Outcome::NotFound => return fallback_or(r, lcf, fallback, NGX_HTTP_NOT_FOUND),
        Outcome::Gone => return fallback_or(r, lcf, fallback, NGX_HTTP_GONE),
        Outcome::Unavailable => return fallback_or(r, lcf, fallback, NGX_HTTP_SERVICE_UNAVAILABLE),
    };
    if let (Some(id), false, true) = (count, header_only, lcf.clicks == 1) {
        let v = visitor(r);
        let now = nginx_sys::ngx_time() as i64;
        let referer = (v.referer.len > 0).then(|| v.referer.as_bytes());
        with_link(|l| l.clicks().record(id, now, v.device, v.bot, referer));
    }
    if let Some(ctx) = RequestCtx::get_or_init(r) {
        ctx.target = target;
    }
    redirect(r, lcf, status, target)
}

fn fallback_or(r: &mut Request, lcf: &LocConf, fallback: Option<&str>, status: u32) -> ngx_int_t {
    match fallback {
        // The URL lives in the location's configuration, which outlives
        // the request: no copy.
        Some(url) => redirect(
            r,
            lcf,
            302,
            ngx_str_t {
                len: url.len(),
                data: url.as_ptr() as *mut u8,
            },
        ),
        None => status as ngx_int_t,
    }
}

/// `return <status> <target>` as nginx's rewrite module does it.
fn redirect(r: &mut Request, lcf: &LocConf, status: u16, location: ngx_str_t) -> ngx_int_t {
    if let Some(Some(cc)) = &lcf.cache_control {
        if r.add_header_out("Cache-Control", cc).is_none() {
            return NGX_HTTP_INTERNAL_SERVER_ERROR as ngx_int_t;
        }
    }
    // SAFETY: `location` lives in the request pool; the complex value is
    // constant (no lengths/values scripts), exactly as `return 302 URL` builds it.
    unsafe {
        let mut cv: ngx_http_complex_value_t = core::mem::zeroed();
        cv.value = location;
        nginx_sys::ngx_http_send_response(
            (r as *mut Request).cast(),
            status as _,
            core::ptr::null_mut(),
            &mut cv,
        )
    }
}

/// A copy of `bytes` in the request pool, valid for the request's life.
fn pool_copy(pool: &Pool, bytes: &[u8]) -> Option<ngx_str_t> {
    let data = pool.alloc_unaligned(bytes.len()).cast::<u8>();
    if data.is_null() {
        return None;
    }
    // SAFETY: data has room for bytes.len() bytes.
    unsafe { core::ptr::copy_nonoverlapping(bytes.as_ptr(), data, bytes.len()) };
    Some(ngx_str_t {
        len: bytes.len(),
        data,
    })
}
