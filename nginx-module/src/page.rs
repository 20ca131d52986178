//! A page made by the module (the `shortlink_status` figures, a link's
//! preview page, a protected link's password form), sent from the
//! precontent phase.

use nginx_sys::{ngx_int_t, ngx_str_t, ngx_uint_t, NGX_HTTP_INTERNAL_SERVER_ERROR};
use ngx::http::Request;

/// Sends `body` as `content_type` with `headers`, and finishes the
/// request: the phase handler returns what this returns.
pub fn send_page(
    r: &mut Request,
    content_type: &'static str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> ngx_int_t {
    send_page_with_status(r, 200, content_type, headers, body)
}

/// [`send_page`] with another status (a password form refused with 429 or
/// 503).
pub fn send_page_with_status(
    r: &mut Request,
    status: ngx_uint_t,
    content_type: &'static str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> ngx_int_t {
    // SAFETY: r is live; nginx reads and drops any body.
    let rc = unsafe { nginx_sys::ngx_http_discard_request_body(r.as_mut()) };
    if rc != nginx_sys::NGX_OK as ngx_int_t {
        return rc;
    }
    for (name, value) in headers {
        if r.add_header_out(name, value).is_none() {
            return NGX_HTTP_INTERNAL_SERVER_ERROR as ngx_int_t;
        }
    }
    let Some(value) = crate::pool::pool_copy(&r.pool(), body) else {
        return NGX_HTTP_INTERNAL_SERVER_ERROR as ngx_int_t;
    };
    let mut ct = ngx_str_t {
        len: content_type.len(),
        data: content_type.as_ptr().cast_mut(),
    };
    // SAFETY: a zeroed complex value is a constant one, as `return 200
    // "text"` builds it; the body lives in the request pool and the content
    // type in a static, both outliving the response.
    let rc = unsafe {
        let mut cv: nginx_sys::ngx_http_complex_value_t = core::mem::zeroed();
        cv.value = value;
        nginx_sys::ngx_http_send_response(r.as_mut(), status, &mut ct, &mut cv)
    };
    // Answered from the precontent phase: finish here, or the phase engine
    // would go on to the content phase after an NGX_OK.
    // SAFETY: r is live and its response is sent (or failed with rc).
    unsafe { nginx_sys::ngx_http_finalize_request(r.as_mut(), rc) };
    nginx_sys::NGX_DONE as ngx_int_t
}
