//! The request path: runs in the precontent phase of `shortlink on`
//! locations, after access checks and `limit_req`, before `try_files`.
//!
//! A phase call fetches the configuration and the request's ctx once and
//! goes one of two ways:
//! * a posted password form (`password.rs`): the body is read, then the
//!   password goes to the daemon; the cookie of a protected link is checked
//!   there too, with no I/O;
//! * first visit (`first_visit.rs`): GET and HEAD; a path that is
//!   neither a valid code nor a known alias is answered at once; then the
//!   shared zone; on a miss, the request is suspended on the worker's daemon
//!   link;
//! * answer arrived (`answer.rs`): the link posted the daemon's answer and
//!   the phases run again;
//! * a person's redirect of a limited link spends a visit leased to the
//!   node, or waits for a lease (`visits.rs`).
//!
//! Both end in an [`reply::Outcome`], turned into the response by `reply.rs`
//! once the ctx is no longer held.

use nginx_sys::NGX_HTTP_INTERNAL_SERVER_ERROR;
use nginx_sys::{ngx_http_request_t, ngx_int_t, NGX_DECLINED, NGX_DONE};
use ngx::http::{HttpModuleLocationConf, HttpModuleMainConf, Request};

use crate::guard::guard;
use crate::request::RequestCtx;
use crate::Module;

mod answer;
mod edge_cookies;
mod first_visit;
mod password;
mod reply;
mod visits;

pub use answer::deliver;

/// Phase handler entry point: no panic leaves it.
pub extern "C" fn precontent_handler(r: *mut ngx_http_request_t) -> ngx_int_t {
    // SAFETY: nginx passes a live request, with its connection and log.
    let log = || unsafe { (*(*r).connection).log };
    let failed = NGX_HTTP_INTERNAL_SERVER_ERROR as ngx_int_t;
    guard("the request handler", log, failed, || {
        // SAFETY: nginx passes a live request to phase handlers.
        handle(unsafe { Request::from_ngx_http_request(r) })
    })
}

/// Where a phase call ends.
enum Step {
    /// Not ours: the next handler answers.
    Declined,
    /// Waiting for the daemon; resumed by [`deliver`].
    Suspended,
    /// Answer now.
    Reply(reply::Reply),
    /// Hand this to nginx as it is (a request body being read).
    Return(ngx_int_t),
}

fn handle(r: &mut Request) -> ngx_int_t {
    if !r.is_main() {
        return NGX_DECLINED as ngx_int_t;
    }
    let (Some(lcf), Some(main)) = (Module::location_conf(r), Module::main_conf(r)) else {
        return NGX_DECLINED as ngx_int_t;
    };
    if lcf.status {
        return crate::status::answer(r, main);
    }
    if !lcf.is_enabled() {
        return NGX_DECLINED as ngx_int_t;
    }
    // SAFETY: r is live; the ctx is held only while the step is decided,
    // and let go before the reply is sent.
    let Some(ctx) = (unsafe { RequestCtx::of(r, main, lcf) }) else {
        return NGX_DECLINED as ngx_int_t;
    };
    let step = match ctx.answer.take() {
        Some(answer) => answer::arrived(r, main, lcf, ctx, answer),
        None => first_visit::run(r, main, lcf, ctx),
    };
    let step = match step {
        Step::Reply(reply::Reply::NeedVisits { link, limit }) => visits::wait(r, ctx, link, limit)
            .unwrap_or_else(|| {
                Step::Reply(reply::respond(r, lcf, ctx, reply::Outcome::Unavailable))
            }),
        step => step,
    };
    match step {
        Step::Declined => NGX_DECLINED as ngx_int_t,
        Step::Suspended => NGX_DONE as ngx_int_t,
        Step::Return(rc) => rc,
        Step::Reply(reply) => {
            if let Some(cache) = main.cache() {
                cache.status_rows().count(ctx.status.figure_index());
            }
            reply.send(r, lcf)
        }
    }
}
