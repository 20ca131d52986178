//! The cookie of a visitor who gave a protected link's password: checked
//! at the edge with no I/O, and issued with the redirect the daemon
//! granted (`shortlink_core::edge_cookie`, under the key's subkey in the
//! main conf).

use nginx_sys::ngx_str_t;
use ngx::http::{HttpModuleMainConf, Request};
use shortlink_core::edge_cookie::{find_cookie, set_cookie_header};
use shortlink_core::password_page::COOKIE_NAME;

use crate::conf::LocConf;
use crate::pool::pool_copy;
use crate::request::RequestCtx;
use crate::Module;

/// True when the request carries this link's cookie, unexpired and signed
/// with this deployment's key for this code.
pub(super) fn cookie_passes(r: &Request, ctx: &RequestCtx) -> bool {
    let Some(key) = Module::main_conf(r).and_then(|m| m.password_cookie.as_ref()) else {
        return false;
    };
    let code = ctx.code.as_bytes();
    let Ok(code) = core::str::from_utf8(code) else {
        return false;
    };
    let now = nginx_sys::ngx_time() as u64;
    // The whole header list, not `headers_in.cookie`: that field is a
    // linked list from nginx 1.23 and an array (`cookies`) before, and
    // Debian 12's nginx is 1.22. Only protected links come here.
    for (name, value) in r.headers_in_iterator() {
        if !name.as_bytes().eq_ignore_ascii_case(b"cookie") {
            continue;
        }
        if let Ok(header) = core::str::from_utf8(value.as_bytes()) {
            if let Some(value) = find_cookie(header, COOKIE_NAME) {
                if key.verify(value, code, now).is_ok() {
                    return true;
                }
            }
        }
    }
    false
}

/// The `Set-Cookie` value for a visitor the daemon let through, in the
/// request pool: the link's path, `shortlink_password_cookie_ttl` long,
/// `Secure` on https. `None` when the TTL is 0 or the path cannot be a
/// cookie path (the redirect still goes out).
pub(super) fn cookie_for(r: &Request, lcf: &LocConf, ctx: &RequestCtx) -> Option<ngx_str_t> {
    if lcf.password_cookie_ttl <= 0 {
        return None;
    }
    let key = Module::main_conf(r)?.password_cookie.as_ref()?;
    let code = core::str::from_utf8(ctx.code.as_bytes()).ok()?;
    let ttl = lcf.password_cookie_ttl as u64;
    let expires = nginx_sys::ngx_time() as u64 + ttl;
    let value = key.sign(code, "ok", expires).ok()?;
    let path = core::str::from_utf8(r.as_ref().uri.as_bytes()).ok()?;
    // SAFETY: a live request has a live connection.
    let secure = !unsafe { (*r.as_ref().connection).ssl }.is_null();
    let header = set_cookie_header(COOKIE_NAME, &value, path, ttl, secure)?;
    pool_copy(&r.pool(), header.as_bytes())
}
