//! `shortlink_status`: a location that answers the edge's figures, the way
//! `stub_status` does: requests by cache status, the zone's entries, bytes
//! and evictions, the daemon links, lookups in flight and clicks pending,
//! delivered and spooled, for every worker at once (`cache/figures.rs`
//! keeps them in the shared zone). Prometheus text by default, JSON with
//! `?format=json`; the formats are core's `edge_status`.

use nginx_sys::{
    ngx_int_t, ngx_str_t, NGX_HTTP_GET, NGX_HTTP_HEAD, NGX_HTTP_INTERNAL_SERVER_ERROR,
    NGX_HTTP_NOT_ALLOWED,
};
use ngx::http::Request;
use shortlink_core::edge_status::{self, ZoneFigures};

use crate::conf::MainConf;

const PROMETHEUS: &str = "text/plain; version=0.0.4; charset=utf-8";
const JSON: &str = "application/json";

/// Answers the figures (the location has `shortlink_status`; called from
/// the phase handler, after the access checks).
pub fn answer(r: &mut Request, main: &MainConf) -> ngx_int_t {
    let method = r.as_ref().method as u32;
    if method != NGX_HTTP_GET && method != NGX_HTTP_HEAD {
        return NGX_HTTP_NOT_ALLOWED as ngx_int_t;
    }
    // SAFETY: r is live; nginx reads and drops any body.
    let rc = unsafe { nginx_sys::ngx_http_discard_request_body(r.as_mut()) };
    if rc != nginx_sys::NGX_OK as ngx_int_t {
        return rc;
    }
    let zones: Vec<ZoneFigures> = figures(main).into_iter().collect();
    let (body, content_type) = if wants_json(r.as_ref().args.as_bytes()) {
        (edge_status::json(&zones), JSON)
    } else {
        (edge_status::prometheus(&zones), PROMETHEUS)
    };
    if r.add_header_out("Cache-Control", "no-store").is_none() {
        return NGX_HTTP_INTERNAL_SERVER_ERROR as ngx_int_t;
    }
    let Some(value) = crate::pool::pool_copy(&r.pool(), body.as_bytes()) else {
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
        nginx_sys::ngx_http_send_response(r.as_mut(), 200, &mut ct, &mut cv)
    };
    // Answered from the precontent phase: finish here, or the phase engine
    // would go on to the content phase after an NGX_OK.
    // SAFETY: r is live and its response is sent (or failed with rc).
    unsafe { nginx_sys::ngx_http_finalize_request(r.as_mut(), rc) };
    nginx_sys::NGX_DONE as ngx_int_t
}

/// True when the query string has `format=json`.
fn wants_json(args: &[u8]) -> bool {
    args.split(|&b| b == b'&').any(|p| p == b"format=json")
}

/// The zone's figures, if the configuration has one.
fn figures(main: &MainConf) -> Option<ZoneFigures> {
    let zone = main.zone()?;
    let cache = main.cache()?;
    // SAFETY: the shm zone lives as long as the cycle; its name is set.
    let name = unsafe { (*zone.zone).shm.name.to_string() };
    let mut f = ZoneFigures {
        name,
        ..ZoneFigures::default()
    };
    cache.status_rows().sum(&mut f);
    let (entries, used, free) = cache.usage();
    f.entries = entries as u64;
    f.bytes_used = used as u64;
    f.bytes_free = free as u64;
    Some(f)
}

#[cfg(test)]
mod tests {
    use super::wants_json;

    #[test]
    fn format_json_is_one_parameter_among_others() {
        assert!(wants_json(b"format=json"));
        assert!(wants_json(b"a=1&format=json"));
        assert!(!wants_json(b"format=jsonx"));
        assert!(!wants_json(b""));
    }
}
