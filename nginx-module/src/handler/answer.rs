//! Answer arrived: the daemon link hands a lookup's answer to each waiting
//! request ([`deliver`]), which nginx then runs through its phases again
//! ([`arrived`]).

use core::ptr::addr_of_mut;

use nginx_sys::ngx_http_request_t;
use ngx::http::Request;
use shortlink_core::ipc::EdgeLink;

use super::edge_cookies::kept_variant;
use super::reply::{respond, Outcome, Reply};
use super::Step;
use crate::cache::Hit;
use crate::conf::{LocConf, MainConf};
use crate::guard::guard;
use crate::net::Answer;
use crate::pool::pool_copy;
use crate::request::{country_of, RequestCtx};

/// Hands a lookup's answer to a waiting request and posts its write event;
/// nothing of the request runs inside the link's own handler.
pub fn deliver(r: *mut ngx_http_request_t, answer: Answer) {
    // SAFETY: r is a live request: requests that go away are removed from
    // the waiter list by their ctx's drop before their pool is freed.
    let Some(ctx) = (unsafe { RequestCtx::existing(r) }) else {
        return;
    };
    // SAFETY: as above; the request is suspended, so nothing else holds
    // its ctx, and its connection and write event are live.
    unsafe {
        let ctx = &mut *ctx;
        ctx.answer = Some(answer);
        ctx.waiting = false;
        ctx.checking = false;
        ctx.awaiting_visit = false;
        (*r).read_event_handler = Some(nginx_sys::ngx_http_block_reading);
        (*r).write_event_handler = Some(resume);
        let c = (*r).connection;
        nginx_sys::ngx_post_event((*c).write, addr_of_mut!(nginx_sys::ngx_posted_events));
    }
}

/// The request's write handler once its answer is posted: the phases run
/// again and reach [`arrived`].
unsafe extern "C" fn resume(r: *mut ngx_http_request_t) {
    // SAFETY: nginx calls request handlers with a live request.
    let log = || unsafe { (*(*r).connection).log };
    guard("the request handler", log, (), || {
        // SAFETY: as above.
        unsafe {
            (*r).write_event_handler = Some(nginx_sys::ngx_http_core_run_phases);
            nginx_sys::ngx_http_core_run_phases(r);
        }
    });
}

/// The daemon's link as this visitor's hit (target copied into the
/// request pool); the link's id noted for the log.
fn hit_of(r: &Request, lcf: &LocConf, ctx: &mut RequestCtx, link: &EdgeLink) -> Option<Hit> {
    let device = ctx.visitor(r).device;
    let pool = r.pool();
    let country = || country_of(r, lcf);
    let kept = || kept_variant(r, lcf, ctx.code.as_bytes());
    let hit = Hit::of(link, device, country, kept, |t| pool_copy(&pool, t))?;
    ctx.note_id(hit.id);
    Some(hit)
}

/// What to answer with the daemon's answer.
pub(super) fn arrived(
    r: &mut Request,
    main: &MainConf,
    lcf: &LocConf,
    ctx: &mut RequestCtx,
    answer: Answer,
) -> Step {
    let outcome = match answer {
        Answer::Found(link) => match hit_of(r, lcf, ctx, &link) {
            Some(hit) => Outcome::Redirect(hit),
            None => return Step::Reply(Reply::Error),
        },
        // A link without a password takes no form (its password may have
        // been removed since the form was shown: a GET redirects now).
        Answer::Granted(link) if link.password_tag.is_none() => {
            return Step::Reply(Reply::NotAllowed)
        }
        Answer::Granted(link) => match hit_of(r, lcf, ctx, &link) {
            Some(hit) => {
                ctx.granted = true;
                Outcome::Redirect(hit)
            }
            None => return Step::Reply(Reply::Error),
        },
        Answer::WrongPassword => {
            return Step::Reply(Reply::PasswordForm {
                status: 200,
                message: Some("Wrong password. Try again."),
                retry_after: None,
            })
        }
        Answer::Throttled(secs) => {
            return Step::Reply(Reply::PasswordForm {
                status: 429,
                message: Some("Too many wrong passwords. Wait a while, then try again."),
                retry_after: Some(secs),
            })
        }
        Answer::PasswordBusy => {
            return Step::Reply(Reply::PasswordForm {
                status: 503,
                message: Some("Too many visitors are entering passwords. Try again in a moment."),
                retry_after: Some(1),
            })
        }
        Answer::NotFound => Outcome::NotFound,
        Answer::Gone => Outcome::Gone,
        // A visit was spent for this request: answer it as a first visit
        // would, without spending another.
        Answer::Admitted => {
            ctx.visit_paid = true;
            return super::first_visit::run(r, main, lcf, ctx);
        }
        Answer::Exhausted => Outcome::Gone,
        // The link refused the daemon's target and logged why.
        Answer::Refused => return Step::Reply(Reply::Error),
        Answer::TimedOut | Answer::Unavailable => Outcome::Unavailable,
    };
    Step::Reply(respond(r, lcf, ctx, outcome))
}
