//! Directives and the typed configuration they parse into.
//!
//! `main_conf.rs` and `loc_conf.rs` hold the `http{}` and location settings
//! with their directives, `zone.rs` the `shortlink_zone` parameters, and
//! `error.rs` the `ConfError` every setter returns: one `[emerg]` line with
//! the directive's name, to which nginx adds the file and line, so `nginx -t`
//! tells the operator what to fix.

use core::ffi::{c_char, c_void};
use core::mem::offset_of;
use core::ptr;

use nginx_sys::{
    ngx_command_t, ngx_conf_set_flag_slot, ngx_conf_set_msec_slot, ngx_conf_set_sec_slot,
    ngx_conf_t, ngx_msec_t, ngx_str_t, ngx_uint_t, NGX_CONF_1MORE, NGX_CONF_FLAG, NGX_CONF_NOARGS,
    NGX_CONF_TAKE1, NGX_HTTP_LOC_CONF, NGX_HTTP_LOC_CONF_OFFSET, NGX_HTTP_MAIN_CONF,
    NGX_HTTP_MAIN_CONF_OFFSET, NGX_HTTP_SRV_CONF,
};
use ngx::ngx_string;

mod error;
mod loc_conf;
mod main_conf;
mod zone;

pub use loc_conf::{merge_loc_conf, LocConf};
pub use main_conf::{init_main_conf, MainConf};

/// `NGX_CONF_UNSET_MSEC`.
const UNSET_MSEC: ngx_msec_t = ngx_msec_t::MAX;
/// `NGX_CONF_UNSET_UINT`.
const UNSET_UINT: ngx_uint_t = ngx_uint_t::MAX;

type Setter = unsafe extern "C" fn(*mut ngx_conf_t, *mut ngx_command_t, *mut c_void) -> *mut c_char;

const fn command(
    name: ngx_str_t,
    type_: u32,
    set: Setter,
    conf: usize,
    offset: usize,
) -> ngx_command_t {
    ngx_command_t {
        name,
        type_: type_ as ngx_uint_t,
        set: Some(set),
        conf,
        offset,
        post: ptr::null_mut(),
    }
}

const MAIN: u32 = NGX_HTTP_MAIN_CONF;
const LOC: u32 = NGX_HTTP_LOC_CONF;
/// A location setting also accepted at `http{}` and `server{}`, inherited
/// the usual way (the innermost level that sets it wins).
const ANY: u32 = NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_HTTP_LOC_CONF;
const MAIN_OFFSET: usize = NGX_HTTP_MAIN_CONF_OFFSET;
const LOC_OFFSET: usize = NGX_HTTP_LOC_CONF_OFFSET;

/// The directives, terminated by nginx's null command.
pub static mut COMMANDS: [ngx_command_t; 19] = [
    command(
        ngx_string!("shortlink_key_file"),
        MAIN | NGX_CONF_TAKE1,
        main_conf::set_key_file,
        MAIN_OFFSET,
        0,
    ),
    command(
        ngx_string!("shortlink_zone"),
        MAIN | NGX_CONF_1MORE,
        zone::set_zone,
        MAIN_OFFSET,
        0,
    ),
    command(
        ngx_string!("shortlink_pass"),
        MAIN | NGX_CONF_TAKE1,
        main_conf::set_pass,
        MAIN_OFFSET,
        0,
    ),
    command(
        ngx_string!("shortlink_connect_timeout"),
        MAIN | NGX_CONF_TAKE1,
        ngx_conf_set_msec_slot,
        MAIN_OFFSET,
        offset_of!(MainConf, connect_timeout),
    ),
    command(
        ngx_string!("shortlink_timeout"),
        MAIN | NGX_CONF_TAKE1,
        ngx_conf_set_msec_slot,
        MAIN_OFFSET,
        offset_of!(MainConf, timeout),
    ),
    command(
        ngx_string!("shortlink_flush_interval"),
        MAIN | NGX_CONF_TAKE1,
        ngx_conf_set_msec_slot,
        MAIN_OFFSET,
        offset_of!(MainConf, flush_interval),
    ),
    command(
        ngx_string!("shortlink_spool"),
        MAIN | NGX_CONF_TAKE1,
        main_conf::set_spool,
        MAIN_OFFSET,
        0,
    ),
    command(
        ngx_string!("shortlink"),
        LOC | NGX_CONF_FLAG,
        loc_conf::set_enabled,
        LOC_OFFSET,
        0,
    ),
    command(
        ngx_string!("shortlink_redirect"),
        ANY | NGX_CONF_TAKE1,
        loc_conf::set_redirect,
        LOC_OFFSET,
        0,
    ),
    command(
        ngx_string!("shortlink_fallback"),
        ANY | NGX_CONF_TAKE1,
        loc_conf::set_fallback,
        LOC_OFFSET,
        0,
    ),
    command(
        ngx_string!("shortlink_clicks"),
        ANY | NGX_CONF_FLAG,
        ngx_conf_set_flag_slot,
        LOC_OFFSET,
        offset_of!(LocConf, clicks),
    ),
    command(
        ngx_string!("shortlink_forward_query"),
        ANY | NGX_CONF_FLAG,
        ngx_conf_set_flag_slot,
        LOC_OFFSET,
        offset_of!(LocConf, forward_query),
    ),
    command(
        ngx_string!("shortlink_preview_suffix"),
        ANY | NGX_CONF_TAKE1,
        loc_conf::set_preview_suffix,
        LOC_OFFSET,
        0,
    ),
    command(
        ngx_string!("shortlink_country"),
        ANY | NGX_CONF_TAKE1,
        loc_conf::set_country,
        LOC_OFFSET,
        0,
    ),
    command(
        ngx_string!("shortlink_cache_control"),
        ANY | NGX_CONF_1MORE,
        loc_conf::set_cache_control,
        LOC_OFFSET,
        0,
    ),
    command(
        ngx_string!("shortlink_password_cookie_ttl"),
        ANY | NGX_CONF_TAKE1,
        ngx_conf_set_sec_slot,
        LOC_OFFSET,
        offset_of!(LocConf, password_cookie_ttl),
    ),
    command(
        ngx_string!("shortlink_variant_cookie_ttl"),
        ANY | NGX_CONF_TAKE1,
        ngx_conf_set_sec_slot,
        LOC_OFFSET,
        offset_of!(LocConf, variant_cookie_ttl),
    ),
    command(
        ngx_string!("shortlink_status"),
        LOC | NGX_CONF_NOARGS,
        loc_conf::set_status,
        LOC_OFFSET,
        0,
    ),
    ngx_command_t::empty(),
];
