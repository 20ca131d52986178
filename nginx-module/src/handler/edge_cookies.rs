//! The edge's signed cookies, checked with no I/O and issued with a
//! redirect (`shortlink_core::edge_cookie`, each under its own subkey in
//! the main conf): the cookie of a visitor who gave a protected link's
//! password, and the one that keeps a returning visitor on the A/B variant
//! they got (`shortlink_variant_cookie_ttl`). Both are scoped to the
//! link's path and bound to its code.

use nginx_sys::ngx_str_t;
use ngx::http::{HttpModuleMainConf, Request};
use shortlink_core::edge_cookie::{find_cookie, set_cookie_header, EdgeCookieKey};
use shortlink_core::password_page::{cookie_matches, cookie_value, COOKIE_NAME as PASSWORD_COOKIE};
use shortlink_core::variants::{kept_value, COOKIE_NAME as VARIANT_COOKIE};

use crate::conf::LocConf;
use crate::pool::pool_copy;
use crate::request::RequestCtx;
use crate::Module;

/// The value of the request's cookie `name` for `code`, if one is signed
/// under `key` and unexpired.
fn verified<'r>(r: &'r Request, name: &str, key: &EdgeCookieKey, code: &[u8]) -> Option<&'r str> {
    let code = core::str::from_utf8(code).ok()?;
    let now = nginx_sys::ngx_time() as u64;
    // The whole header list, not `headers_in.cookie`: that field is a
    // linked list from nginx 1.23 and an array (`cookies`) before, and
    // Debian 12's nginx is 1.22. Only protected links and links with
    // variants come here.
    for (header, value) in r.headers_in_iterator() {
        if !header.as_bytes().eq_ignore_ascii_case(b"cookie") {
            continue;
        }
        let Ok(value) = core::str::from_utf8(value.as_bytes()) else {
            continue;
        };
        if let Some(cookie) = find_cookie(value, name) {
            if let Ok(ok) = key.verify(cookie, code, now) {
                return Some(ok.value);
            }
        }
    }
    None
}

/// The `Set-Cookie` value of cookie `name` carrying `value` for the
/// request's code, in the request pool: the link's path, `ttl` seconds
/// long, `Secure` on https. `None` when the path cannot be a cookie path
/// or the pool is out of memory (the redirect still goes out).
fn issue(
    r: &Request,
    ctx: &RequestCtx,
    name: &str,
    key: &EdgeCookieKey,
    value: &str,
    ttl: u64,
) -> Option<ngx_str_t> {
    let code = core::str::from_utf8(ctx.code.as_bytes()).ok()?;
    let expires = nginx_sys::ngx_time() as u64 + ttl;
    let signed = key.sign(code, value, expires).ok()?;
    let path = core::str::from_utf8(r.as_ref().uri.as_bytes()).ok()?;
    // SAFETY: a live request has a live connection.
    let secure = !unsafe { (*r.as_ref().connection).ssl }.is_null();
    let header = set_cookie_header(name, &signed, path, ttl, secure)?;
    pool_copy(&r.pool(), header.as_bytes())
}

/// True when the request carries this link's password cookie, unexpired,
/// signed with this deployment's key for this code, and given for this
/// link (`id`) and its password as it is now (`tag`).
pub(super) fn password_passes(r: &Request, ctx: &RequestCtx, id: u64, tag: u32) -> bool {
    let Some(key) = Module::main_conf(r).and_then(|m| m.password_cookie.as_ref()) else {
        return false;
    };
    verified(r, PASSWORD_COOKIE, key, ctx.code.as_bytes())
        .is_some_and(|value| cookie_matches(value, id, tag))
}

/// The password cookie for a visitor the daemon let through to link `id`
/// whose password has `tag`, `shortlink_password_cookie_ttl` long; `None`
/// when that is 0.
pub(super) fn password_cookie(
    r: &Request,
    lcf: &LocConf,
    ctx: &RequestCtx,
    id: u64,
    tag: u32,
) -> Option<ngx_str_t> {
    if lcf.password_cookie_ttl <= 0 {
        return None;
    }
    let key = Module::main_conf(r)?.password_cookie.as_ref()?;
    issue(
        r,
        ctx,
        PASSWORD_COOKIE,
        key,
        &cookie_value(id, tag),
        lcf.password_cookie_ttl as u64,
    )
}

/// The signed value of the request's variant cookie for `code` (which
/// variant it keeps is judged against the link, `Hit::of`); `None` when
/// `shortlink_variant_cookie_ttl` is 0 or there is none.
pub(crate) fn kept_variant<'r>(r: &'r Request, lcf: &LocConf, code: &[u8]) -> Option<&'r str> {
    if lcf.variant_cookie_ttl <= 0 {
        return None;
    }
    let key = Module::main_conf(r)?.variant_cookie.as_ref()?;
    verified(r, VARIANT_COOKIE, key, code)
}

/// The cookie that keeps the visitor on variant `index` (whose URL is
/// `url`) for `shortlink_variant_cookie_ttl`; `None` when that is 0.
pub(super) fn variant_cookie(
    r: &Request,
    lcf: &LocConf,
    ctx: &RequestCtx,
    index: u8,
    url: &[u8],
) -> Option<ngx_str_t> {
    if lcf.variant_cookie_ttl <= 0 {
        return None;
    }
    let key = Module::main_conf(r)?.variant_cookie.as_ref()?;
    let value = kept_value(usize::from(index), url);
    issue(
        r,
        ctx,
        VARIANT_COOKIE,
        key,
        &value,
        lcf.variant_cookie_ttl as u64,
    )
}
