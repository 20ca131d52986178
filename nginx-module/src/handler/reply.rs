//! From an outcome to the response: a redirect to the link's target (or to
//! `shortlink_fallback`), the link's preview page (`shortlink_preview_suffix`;
//! no click), or 404/410/503; the click is counted here. Only a link's own
//! redirect carries `shortlink_cache_control`, one chosen by `User-Agent`
//! says so with `Vary`, and one of a link with country targets or A/B
//! variants is `Cache-Control: private` (no header names the client's
//! address, and a shared cache would pin one variant for everyone).

use nginx_sys::{
    ngx_http_complex_value_t, ngx_int_t, ngx_str_t, NGX_HTTP_INTERNAL_SERVER_ERROR,
    NGX_HTTP_NOT_ALLOWED, NGX_HTTP_NOT_FOUND, NGX_HTTP_SERVICE_UNAVAILABLE,
};
use ngx::http::Request;
use shortlink_core::preview;
use shortlink_core::query::{forwards_query, join_query};
use shortlink_core::target::DEFAULT_MAX_TARGET_LEN;
use shortlink_core::RedirectStatus;

use crate::cache::Hit;
use crate::clicks;
use crate::conf::LocConf;
use crate::net::with_link;
use crate::page::send_page;
use crate::pool::pool_fill;
use crate::request::{country_of, CacheStatus, RequestCtx};

/// 410 (nginx has no constant for it).
const NGX_HTTP_GONE: u32 = 410;

/// What the link's answer is, wherever it came from.
pub(super) enum Outcome {
    Redirect(Hit),
    NotFound,
    Gone,
    Unavailable,
}

/// The response to send.
pub(super) enum Reply {
    /// `return <status> <location>`.
    Redirect {
        status: u16,
        location: ngx_str_t,
        /// The link's own answer: it gets `shortlink_cache_control`. A
        /// fallback (unknown, gone, or the daemon unreachable) never does,
        /// or browsers would keep it after the link works again.
        cacheable: bool,
        /// Chosen by `User-Agent`: `Vary: User-Agent`.
        by_device: bool,
        /// Chosen by the visitor's country or among variants:
        /// `Cache-Control: private` instead of `shortlink_cache_control`.
        private: bool,
    },
    /// nginx's own page for a status: 404, 410, 503.
    Status(u32),
    /// The link's preview page (`shortlink_preview_suffix`).
    Preview {
        /// The target the visitor would be sent to (in the request pool).
        target: ngx_str_t,
        /// Days since 1970-01-01 when the link was made.
        created_day: u16,
    },
    /// 405 with `Allow: GET, HEAD`.
    NotAllowed,
    /// 500: nothing usable to answer with (logged where it was found).
    Error,
}

/// The reply for `outcome`; records the answer in the ctx and counts the
/// click of a redirect (never of a preview).
pub(super) fn respond(r: &Request, lcf: &LocConf, ctx: &mut RequestCtx, outcome: Outcome) -> Reply {
    let status = match outcome {
        Outcome::Redirect(hit) => {
            let now = nginx_sys::ngx_time() as i64;
            if hit.disabled || hit.expires_at.is_some_and(|t| t <= now) {
                ctx.status = CacheStatus::Expired;
                return fallback_or(lcf, NGX_HTTP_GONE);
            }
            if ctx.preview {
                ctx.target = hit.target;
                return Reply::Preview {
                    target: hit.target,
                    created_day: hit.created_day,
                };
            }
            let status = hit.status.map_or(lcf.redirect as u16, RedirectStatus::code);
            let header_only =
                r.header_only() || r.as_ref().method as u32 == nginx_sys::NGX_HTTP_HEAD;
            if lcf.clicks == 1 && !header_only {
                let v = ctx.visitor(r);
                let country = country_of(r, lcf);
                if let Some(key) =
                    clicks::Key::of(hit.id, now, v.device, v.bot, v.referer(), country)
                {
                    if !clicks::count_fast(&key) {
                        with_link(|l| l.clicks().record(&key));
                    }
                }
            }
            let Some(location) = with_query(r, lcf, hit.forward_query, hit.target) else {
                return Reply::Error;
            };
            ctx.target = location;
            return Reply::Redirect {
                status,
                location,
                cacheable: true,
                by_device: hit.by_device,
                private: hit.private,
            };
        }
        Outcome::NotFound => NGX_HTTP_NOT_FOUND,
        Outcome::Gone => NGX_HTTP_GONE,
        Outcome::Unavailable => NGX_HTTP_SERVICE_UNAVAILABLE,
    };
    fallback_or(lcf, status)
}

/// The target, with the visit's query string joined when the link (its
/// own `forward_query`) or else the location (`shortlink_forward_query`)
/// forwards it; the rules are `shortlink_core::query`'s. `None`: the pool
/// is out of memory.
fn with_query(
    r: &Request,
    lcf: &LocConf,
    link: Option<bool>,
    target: ngx_str_t,
) -> Option<ngx_str_t> {
    if !forwards_query(link, lcf.forward_query == 1) {
        return Some(target);
    }
    let query = r.as_ref().args.as_bytes();
    let target_bytes = target.as_bytes();
    match join_query(target_bytes, query, DEFAULT_MAX_TARGET_LEN) {
        Some(join) => pool_fill(&r.pool(), join.len, |out| {
            join.write(target_bytes, query, out)
        }),
        None => Some(target),
    }
}

/// The preview page's headers: never cached (the link may change), nothing
/// loaded or run, no sniffing.
const PREVIEW_HEADERS: [(&str, &str); 4] = [
    ("Cache-Control", "no-store"),
    ("Content-Security-Policy", preview::CSP),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "no-referrer"),
];

/// A 302 to `shortlink_fallback`, or `status` without one.
fn fallback_or(lcf: &LocConf, status: u32) -> Reply {
    match lcf.fallback() {
        // The URL lives in the location's configuration, which outlives
        // the request: no copy.
        Some(url) => Reply::Redirect {
            status: 302,
            location: ngx_str_t {
                len: url.len(),
                data: url.as_ptr().cast_mut(),
            },
            cacheable: false,
            by_device: false,
            private: false,
        },
        None => Reply::Status(status),
    }
}

impl Reply {
    /// Sends the reply (or returns the status for nginx to send).
    pub(super) fn send(self, r: &mut Request, lcf: &LocConf) -> ngx_int_t {
        match self {
            Reply::Redirect {
                status,
                location,
                cacheable,
                by_device,
                private,
            } => {
                let cache_control = match private {
                    true => Some("private"),
                    false => lcf.cache_control().filter(|_| cacheable),
                };
                redirect(r, status, location, cache_control, by_device)
            }
            Reply::Status(status) => status as ngx_int_t,
            Reply::Preview {
                target,
                created_day,
            } => {
                let page = preview::render(target.as_bytes(), created_day);
                send_page(r, preview::CONTENT_TYPE, &PREVIEW_HEADERS, &page)
            }
            Reply::NotAllowed => {
                if r.add_header_out("Allow", "GET, HEAD").is_none() {
                    return NGX_HTTP_INTERNAL_SERVER_ERROR as ngx_int_t;
                }
                NGX_HTTP_NOT_ALLOWED as ngx_int_t
            }
            Reply::Error => NGX_HTTP_INTERNAL_SERVER_ERROR as ngx_int_t,
        }
    }
}

/// `return <status> <target>` as nginx's rewrite module does it, with the
/// caching headers the answer calls for.
fn redirect(
    r: &mut Request,
    status: u16,
    location: ngx_str_t,
    cache_control: Option<&str>,
    by_device: bool,
) -> ngx_int_t {
    if let Some(cc) = cache_control {
        if r.add_header_out("Cache-Control", cc).is_none() {
            return NGX_HTTP_INTERNAL_SERVER_ERROR as ngx_int_t;
        }
    }
    if by_device && r.add_header_out("Vary", "User-Agent").is_none() {
        return NGX_HTTP_INTERNAL_SERVER_ERROR as ngx_int_t;
    }
    // SAFETY: a zeroed complex value is constant (no lengths or values
    // scripts), exactly as `return 302 URL` builds it; `location` lives in
    // the request pool or the configuration, both outliving the response.
    unsafe {
        let mut cv: ngx_http_complex_value_t = core::mem::zeroed();
        cv.value = location;
        nginx_sys::ngx_http_send_response(r.as_mut(), status as _, core::ptr::null_mut(), &mut cv)
    }
}
