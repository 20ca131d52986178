//! First visit of a request: method, code check, shared zone, and on a miss
//! a lookup on the worker's daemon link.

use nginx_sys::{ngx_http_request_t, NGX_HTTP_GET, NGX_HTTP_HEAD, NGX_HTTP_POST};
use ngx::http::Request;

use super::edge_cookies::kept_variant;
use super::reply::{respond, Outcome, Reply};
use super::Step;
use crate::cache::Cached;
use crate::conf::{LocConf, MainConf};
use crate::log::{debug, error};
use crate::net::{with_link, Started};
use crate::pool::pool_copy;
use crate::request::{country_of, CacheStatus, RequestCtx};

/// The answer to a request seen for the first time.
pub(super) fn run(r: &mut Request, main: &MainConf, lcf: &LocConf, ctx: &mut RequestCtx) -> Step {
    let method = r.as_ref().method as u32;
    if method == NGX_HTTP_POST && !ctx.preview && main.pass.is_some() {
        return super::password::posted(r, main, lcf, ctx);
    }
    if method != NGX_HTTP_GET && method != NGX_HTTP_HEAD {
        ctx.status = CacheStatus::Bypass;
        return Step::Reply(Reply::NotAllowed);
    }
    if ctx.status == CacheStatus::Invalid {
        // Neither a generated code nor a possible alias (`RequestCtx::create`).
        debug!(
            r.log(),
            "shortlink: \"{}\" is not a valid code or alias", ctx.code
        );
        return Step::Reply(respond(r, lcf, ctx, Outcome::NotFound));
    }
    if main.pass.is_none() {
        // Validation only: let the rest of the configuration answer.
        return Step::Declined;
    }
    let Some(cache) = main.cache() else {
        ctx.status = CacheStatus::Bypass;
        return ask_daemon(r, main, lcf, ctx);
    };
    // SAFETY: reading nginx's cached clock on its own thread.
    let now = unsafe { nginx_sys::ngx_current_msec };
    let device = ctx.visitor(r).device;
    let pool = r.pool();
    let country = || country_of(r, lcf);
    let copy = |t: &[u8]| pool_copy(&pool, t);
    let code = ctx.code;
    let kept = || kept_variant(r, lcf, code.as_bytes());
    let outcome = match cache.lookup(code.as_bytes(), now, device, country, kept, copy) {
        Cached::Found(hit) => {
            ctx.status = CacheStatus::Hit;
            ctx.note_id(hit.id);
            Outcome::Redirect(hit)
        }
        Cached::NotFound => {
            ctx.status = CacheStatus::Negative;
            Outcome::NotFound
        }
        Cached::Gone => {
            ctx.status = CacheStatus::Negative;
            Outcome::Gone
        }
        Cached::Miss => {
            ctx.status = CacheStatus::Miss;
            return ask_daemon(r, main, lcf, ctx);
        }
    };
    Step::Reply(respond(r, lcf, ctx, outcome))
}

/// Suspends the request on a lookup, or answers 503 when the daemon is down.
fn ask_daemon(r: &mut Request, main: &MainConf, lcf: &LocConf, ctx: &mut RequestCtx) -> Step {
    let code = ctx.code;
    let raw: *mut ngx_http_request_t = r.as_mut();
    match with_link(|l| l.lookup(code.as_bytes(), raw)) {
        Some(Started::Waiting) => {
            ctx.waiting = true;
            // Notice a client that gives up while we wait.
            let raw = r.as_mut();
            raw.read_event_handler = Some(nginx_sys::ngx_http_test_reading);
            raw.write_event_handler = Some(nginx_sys::ngx_http_request_empty_handler);
            Step::Suspended
        }
        Some(Started::Unavailable) => {
            // The outage itself is logged once by the link, not per request.
            debug!(
                r.log(),
                "shortlink: daemon unavailable while resolving code \"{}\", socket: unix:{}",
                code,
                main.pass.as_deref().unwrap_or("")
            );
            Step::Reply(respond(r, lcf, ctx, Outcome::Unavailable))
        }
        None => {
            error!(
                r.log(),
                "shortlink: no daemon link in this worker while resolving code \"{}\"", code
            );
            Step::Reply(respond(r, lcf, ctx, Outcome::Unavailable))
        }
    }
}
