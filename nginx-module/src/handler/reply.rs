//! From an outcome to the response: a redirect to the link's target (or to
//! `shortlink_fallback`), the link's preview page (`shortlink_preview_suffix`;
//! no click), or 404/410/503; the click is counted here. Only a link's own
//! redirect carries `shortlink_cache_control`, one chosen by `User-Agent`
//! says so with `Vary`, and one of a link with country targets or A/B
//! variants is `Cache-Control: private` (no header names the client's
//! address, and a shared cache would pin one variant for everyone).

use nginx_sys::{
    ngx_http_complex_value_t, ngx_int_t, ngx_str_t, ngx_uint_t, NGX_HTTP_INTERNAL_SERVER_ERROR,
    NGX_HTTP_NOT_ALLOWED, NGX_HTTP_NOT_FOUND, NGX_HTTP_SERVICE_UNAVAILABLE,
};
use ngx::http::Request;
use shortlink_core::query::{forwards_query, join_query};
use shortlink_core::target::DEFAULT_MAX_TARGET_LEN;
use shortlink_core::RedirectStatus;
use shortlink_core::{password_page, preview};

use super::edge_cookies;
use crate::cache::Hit;
use crate::clicks;
use crate::conf::LocConf;
use crate::net::with_link;
use crate::page::{send_page, send_page_with_status};
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
        /// `Set-Cookie` of a visitor who just gave the link's password.
        cookie: Option<ngx_str_t>,
        /// `Set-Cookie` keeping the visitor on the A/B variant they got
        /// (`Cache-Control: private` already keeps it from shared caches).
        variant_cookie: Option<ngx_str_t>,
        /// Chosen by the visitor's country or among variants:
        /// `Cache-Control: private` instead of `shortlink_cache_control`.
        private: bool,
    },
    /// A protected link's password form (`shortlink_core::password_page`).
    PasswordForm {
        /// 200 (asked, or a wrong password), 429 (throttled), 503 (busy).
        status: u32,
        /// Why the form is shown again.
        message: Option<&'static str>,
        /// Seconds for `Retry-After`.
        retry_after: Option<u32>,
    },
    /// The preview of a protected link: it says only that.
    ProtectedPreview,
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
    /// A limited link has no visit left on this node: not sent, the
    /// request waits for a lease (`visits.rs`) instead.
    NeedVisits { link: u64, limit: u64 },
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
            if let Some(tag) = hit.password_tag.filter(|_| !ctx.granted) {
                if ctx.preview {
                    return Reply::ProtectedPreview;
                }
                if !edge_cookies::password_passes(r, ctx, hit.id, tag) {
                    return Reply::PasswordForm {
                        status: 200,
                        message: None,
                        retry_after: None,
                    };
                }
            }
            if ctx.preview {
                ctx.target = hit.target;
                return Reply::Preview {
                    target: hit.target,
                    created_day: hit.created_day,
                };
            }
            let status = if ctx.granted {
                // The answer to the posted form: 303 makes the browser GET
                // the target; a 307 or 308 would post the password there.
                303
            } else {
                hit.status.map_or(lcf.redirect as u16, RedirectStatus::code)
            };
            let header_only =
                r.header_only() || r.as_ref().method as u32 == nginx_sys::NGX_HTTP_HEAD;
            // A person's redirect of a limited link spends a visit leased
            // to this node; a bot's, or a HEAD, spends none.
            if let Some(limit) = hit.max_visits {
                if !header_only && !ctx.visit_paid && !ctx.visitor(r).bot {
                    if !super::visits::spend(r, hit.id, limit) {
                        return Reply::NeedVisits {
                            link: hit.id,
                            limit,
                        };
                    }
                    ctx.visit_paid = true;
                }
            }
            if lcf.clicks == 1 && !header_only {
                let v = ctx.visitor(r);
                let country = country_of(r, lcf);
                if let Some(key) = clicks::Key::of(
                    hit.id,
                    now,
                    v.device,
                    v.bot,
                    v.referer(),
                    country,
                    hit.variant,
                ) {
                    if !clicks::count_fast(&key) {
                        with_link(|l| l.record_click(&key));
                    }
                }
            }
            let Some(location) = with_query(r, lcf, hit.forward_query, hit.target) else {
                return Reply::Error;
            };
            ctx.target = location;
            let cookie = match hit.password_tag {
                Some(tag) if ctx.granted => edge_cookies::password_cookie(r, lcf, ctx, hit.id, tag),
                _ => None,
            };
            // A variant picked for this visit: the visitor keeps it.
            let variant_cookie = match hit.variant {
                Some(i) if !hit.kept => {
                    edge_cookies::variant_cookie(r, lcf, ctx, i, hit.target.as_bytes())
                }
                _ => None,
            };
            return Reply::Redirect {
                status,
                location,
                // A protected link's redirect is never kept by a browser
                // or a proxy: the next visit must show the cookie again.
                // Nor a limited link's: each visit is counted here.
                cacheable: hit.password_tag.is_none() && hit.max_visits.is_none(),
                by_device: hit.by_device,
                cookie,
                variant_cookie,
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

/// The password form's headers: never cached, nothing loaded or run, the
/// form posts to this origin only, no framing, no referrer.
const PASSWORD_HEADERS: [(&str, &str); 5] = [
    ("Cache-Control", "no-store"),
    ("Content-Security-Policy", password_page::CSP),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "no-referrer"),
    ("X-Frame-Options", "DENY"),
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
            cookie: None,
            variant_cookie: None,
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
                cookie,
                variant_cookie,
                private,
            } => {
                for c in [cookie, variant_cookie].into_iter().flatten() {
                    let Ok(c) = core::str::from_utf8(c.as_bytes()) else {
                        return NGX_HTTP_INTERNAL_SERVER_ERROR as ngx_int_t;
                    };
                    if r.add_header_out("Set-Cookie", c).is_none() {
                        return NGX_HTTP_INTERNAL_SERVER_ERROR as ngx_int_t;
                    }
                }
                // A fallback and a protected link's redirect: never kept.
                // One chosen by country or among variants: by the browser
                // only, as it depends on the visitor.
                let cache_control = if cookie.is_some() {
                    Some("no-store")
                } else if !cacheable {
                    None
                } else if private {
                    Some("private")
                } else {
                    lcf.cache_control()
                };
                redirect(r, status, location, cache_control, by_device)
            }
            Reply::PasswordForm {
                status,
                message,
                retry_after,
            } => {
                let page = password_page::render(message);
                let retry = retry_after.map(|s| s.to_string());
                let mut headers = PASSWORD_HEADERS.to_vec();
                if let Some(secs) = retry.as_deref() {
                    headers.push(("Retry-After", secs));
                }
                send_page_with_status(
                    r,
                    status as ngx_uint_t,
                    password_page::CONTENT_TYPE,
                    &headers,
                    &page,
                )
            }
            Reply::ProtectedPreview => send_page(
                r,
                password_page::CONTENT_TYPE,
                &PREVIEW_HEADERS,
                &password_page::render_preview(),
            ),
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
            // `handle` turns it into a wait; never sent.
            Reply::NeedVisits { .. } => NGX_HTTP_SERVICE_UNAVAILABLE as ngx_int_t,
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
