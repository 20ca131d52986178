//! `$shortlink_*` variables for `log_format`, `map`, `add_header`.

use nginx_sys::{
    ngx_conf_t, ngx_http_add_variable, ngx_http_request_t, ngx_http_variable_value_t, ngx_int_t,
    ngx_str_t, NGX_ERROR, NGX_HTTP_VAR_NOCACHEABLE, NGX_OK,
};
use ngx::http::Request;
use ngx::ngx_string;

use crate::guard::guard;
use crate::request::{CacheStatus, RequestCtx};

const CODE: usize = 0;
const ID: usize = 1;
const CACHE_STATUS: usize = 2;
const TARGET: usize = 3;

const VARIABLES: [(ngx_str_t, usize); 4] = [
    (ngx_string!("shortlink_code"), CODE),
    (ngx_string!("shortlink_id"), ID),
    (ngx_string!("shortlink_cache_status"), CACHE_STATUS),
    (ngx_string!("shortlink_target"), TARGET),
];

/// Registers the variables; called from preconfiguration.
///
/// # Safety
/// `cf` must be the configuration being parsed.
pub unsafe fn register(cf: *mut ngx_conf_t) -> ngx_int_t {
    for (name, data) in VARIABLES {
        let mut name = name;
        // SAFETY: cf is valid during preconfiguration; nginx copies the name.
        let var = unsafe { ngx_http_add_variable(cf, &mut name, NGX_HTTP_VAR_NOCACHEABLE as _) };
        if var.is_null() {
            return NGX_ERROR as ngx_int_t;
        }
        // SAFETY: ngx_http_add_variable returned a live variable definition.
        unsafe {
            (*var).get_handler = Some(get);
            (*var).data = data;
        }
    }
    NGX_OK as ngx_int_t
}

/// The variables' `get_handler`: points the value at bytes in the
/// request's ctx (or a static), or marks it not found.
unsafe extern "C" fn get(
    r: *mut ngx_http_request_t,
    v: *mut ngx_http_variable_value_t,
    data: usize,
) -> ngx_int_t {
    // SAFETY: nginx passes a live request, with its connection and log.
    let log = || unsafe { (*(*r).connection).log };
    guard("a variable", log, NGX_ERROR as ngx_int_t, || {
        // SAFETY: nginx passes a live request.
        let r = unsafe { Request::from_ngx_http_request(r) };
        let value = RequestCtx::get_or_init(r).and_then(|ctx| {
            let value: &[u8] = match data {
                CODE if ctx.status != CacheStatus::Invalid => ctx.code.as_bytes(),
                TARGET => ctx.target.as_bytes(),
                ID => ctx.id_text(),
                CACHE_STATUS => ctx.status.as_bytes(),
                _ => &[],
            };
            (!value.is_empty()).then_some((value.as_ptr(), value.len()))
        });
        // SAFETY: v is the value slot nginx asked us to fill; the data points
        // into the request-pool ctx or a static, both outliving the variable.
        let v = unsafe { &mut *v };
        match value {
            Some((ptr, len)) => {
                v.data = ptr.cast_mut();
                v.set_len(len as u32);
                v.set_valid(1);
                v.set_no_cacheable(0);
                v.set_not_found(0);
            }
            None => v.set_not_found(1),
        }
        NGX_OK as ngx_int_t
    })
}
