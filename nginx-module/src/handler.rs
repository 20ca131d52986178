//! The request path: runs in the precontent phase of `shortlink on`
//! locations, after access checks and `limit_req`, before `try_files`.

use nginx_sys::{
    ngx_http_request_t, ngx_int_t, NGX_DECLINED, NGX_HTTP_INTERNAL_SERVER_ERROR, NGX_HTTP_NOT_FOUND,
};
use ngx::http::Request;

use crate::log::{debug, error};
use crate::request::{CacheStatus, RequestCtx};

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

fn handle(r: &mut Request) -> ngx_int_t {
    if !r.is_main() {
        return NGX_DECLINED as ngx_int_t;
    }
    let log = r.log();
    let Some(ctx) = RequestCtx::get_or_init(r) else {
        return NGX_DECLINED as ngx_int_t;
    };
    match ctx.status {
        CacheStatus::Invalid => {
            debug!(log, "shortlink: \"{}\" is not a valid code", ctx.code);
            NGX_HTTP_NOT_FOUND as ngx_int_t
        }
        CacheStatus::Unset => NGX_DECLINED as ngx_int_t,
    }
}
