//! Protected links at the edge: the cookie of a visitor who gave the
//! password is checked here with no I/O (`shortlink_core::edge_cookie`);
//! without one the visitor gets the form (`shortlink_core::password_page`),
//! which posts to the same URL. The post's body is read with nginx's own
//! body reading (small, in memory) and the password goes to the daemon on
//! the worker's link (`net/password.rs`); the worker never hashes.

use core::ptr::addr_of_mut;

use nginx_sys::{
    ngx_http_request_t, ngx_int_t, NGX_DONE, NGX_HTTP_REQUEST_ENTITY_TOO_LARGE,
    NGX_HTTP_SPECIAL_RESPONSE,
};
use ngx::http::Request;
use shortlink_core::password_page::{self, MAX_FORM_BODY};

use super::reply::{respond, Outcome, Reply};
use super::Step;
use crate::cache::Cached;
use crate::conf::{LocConf, MainConf};
use crate::guard::guard;
use crate::log::debug;
use crate::net::{with_link, Started};
use crate::pool::pool_copy;
use crate::request::{country_of, CacheStatus, RequestCtx};

/// What a visitor who posted nothing usable is told.
const EMPTY: &str = "Enter the password.";

/// A POST to a code: the form of a protected link was submitted.
pub(super) fn posted(
    r: &mut Request,
    main: &MainConf,
    lcf: &LocConf,
    ctx: &mut RequestCtx,
) -> Step {
    if ctx.status == CacheStatus::Invalid {
        return Step::Reply(respond(r, lcf, ctx, Outcome::NotFound));
    }
    ctx.status = CacheStatus::Bypass;
    if ctx.body_read {
        return check(r, main, lcf, ctx);
    }
    if let Some(cache) = main.cache() {
        // SAFETY: reading nginx's cached clock on its own thread.
        let now = unsafe { nginx_sys::ngx_current_msec };
        let device = ctx.visitor(r).device;
        let pool = r.pool();
        let country = || country_of(r, lcf);
        let copy = |t: &[u8]| pool_copy(&pool, t);
        // Whether the link is protected, not which variant: no cookie read.
        let kept = || None;
        match cache.lookup(ctx.code.as_bytes(), now, device, country, kept, copy) {
            Cached::Found(hit) if hit.password_tag.is_none() => {
                return Step::Reply(Reply::NotAllowed)
            }
            Cached::NotFound => return Step::Reply(respond(r, lcf, ctx, Outcome::NotFound)),
            Cached::Gone => return Step::Reply(respond(r, lcf, ctx, Outcome::Gone)),
            // Protected, or not known here: the daemon will say.
            Cached::Found(_) | Cached::Miss => {}
        }
    }
    if r.as_ref().headers_in.content_length_n > MAX_FORM_BODY as i64 {
        return Step::Reply(Reply::Status(NGX_HTTP_REQUEST_ENTITY_TOO_LARGE));
    }
    let raw: *mut ngx_http_request_t = r.as_mut();
    // SAFETY: r is live; nginx reads the body and calls `body_read` (now,
    // or from its event loop), having taken a reference on the request
    // that the NGX_DONE finalization below gives back.
    let rc = unsafe { nginx_sys::ngx_http_read_client_request_body(raw, Some(body_read)) };
    if rc >= NGX_HTTP_SPECIAL_RESPONSE as ngx_int_t {
        return Step::Return(rc);
    }
    // SAFETY: as above.
    unsafe { nginx_sys::ngx_http_finalize_request(raw, NGX_DONE as ngx_int_t) };
    Step::Return(NGX_DONE as ngx_int_t)
}

/// The body is in: run the phases again from the event loop (never from
/// inside the body reading, which may call this before it returns).
unsafe extern "C" fn body_read(r: *mut ngx_http_request_t) {
    // SAFETY: nginx calls body handlers with a live request.
    let log = || unsafe { (*(*r).connection).log };
    guard("the password form body handler", log, (), || {
        // SAFETY: r is live; its ctx (if any) lives in its pool and no
        // phase handler holds it now; its connection's write event is live.
        unsafe {
            if let Some(ctx) = RequestCtx::existing(r) {
                (*ctx).body_read = true;
            }
            (*r).write_event_handler = Some(nginx_sys::ngx_http_core_run_phases);
            let c = (*r).connection;
            nginx_sys::ngx_post_event((*c).write, addr_of_mut!(nginx_sys::ngx_posted_events));
        }
    });
}

/// The body as one byte string; `None` when part of it went to a file
/// (a body bigger than the form ever sends).
fn body_of(r: &Request) -> Option<Vec<u8>> {
    let rb = r.as_ref().request_body;
    // SAFETY: request_body is null or this request's, read completely.
    let Some(rb) = (unsafe { rb.as_ref() }) else {
        return Some(Vec::new());
    };
    let mut out = Vec::new();
    let mut cl = rb.bufs;
    // SAFETY: bufs is this request's chain of body buffers.
    while let Some(link) = unsafe { cl.as_ref() } {
        // SAFETY: every link of the chain holds a live buffer.
        let b = unsafe { &*link.buf };
        if b.in_file() != 0 {
            return None;
        }
        if !b.pos.is_null() && b.last > b.pos {
            // SAFETY: pos..last is the buffer's filled part.
            let len = unsafe { b.last.offset_from(b.pos) } as usize;
            // SAFETY: as above.
            out.extend_from_slice(unsafe { core::slice::from_raw_parts(b.pos, len) });
        }
        if out.len() > MAX_FORM_BODY {
            return None;
        }
        cl = link.next;
    }
    Some(out)
}

/// The form's password goes to the daemon.
fn check(r: &mut Request, main: &MainConf, lcf: &LocConf, ctx: &mut RequestCtx) -> Step {
    let Some(body) = body_of(r) else {
        return Step::Reply(Reply::Status(NGX_HTTP_REQUEST_ENTITY_TOO_LARGE));
    };
    let Some(password) = password_page::password_of(&body) else {
        return Step::Reply(Reply::PasswordForm {
            status: 200,
            message: Some(EMPTY),
            retry_after: None,
        });
    };
    // SAFETY: a live request has a live connection.
    let client = unsafe { (*r.as_ref().connection).addr_text };
    let code = ctx.code;
    let raw: *mut ngx_http_request_t = r.as_mut();
    match with_link(|l| l.check_password(code.as_bytes(), password, client.as_bytes(), raw)) {
        Some(Started::Waiting) => {
            ctx.checking = true;
            let raw = r.as_mut();
            raw.read_event_handler = Some(nginx_sys::ngx_http_test_reading);
            raw.write_event_handler = Some(nginx_sys::ngx_http_request_empty_handler);
            Step::Suspended
        }
        Some(Started::Unavailable) | None => {
            debug!(
                r.log(),
                "shortlink: daemon unavailable while checking the password of code \"{}\", socket: unix:{}",
                code,
                main.pass.as_deref().unwrap_or("")
            );
            Step::Reply(respond(r, lcf, ctx, Outcome::Unavailable))
        }
    }
}
