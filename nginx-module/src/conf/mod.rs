//! Directives and the typed configuration they parse into.
//!
//! Every directive handler reports a bad value with `[emerg]`, the
//! directive's name and what was wrong; nginx adds the file and line, so
//! `nginx -t` tells the operator what to fix.

use core::ffi::{c_char, c_void};
use core::ptr;

use nginx_sys::{
    ngx_command_t, ngx_conf_t, ngx_flag_t, ngx_str_t, ngx_uint_t, NGX_CONF_FLAG, NGX_CONF_TAKE1,
    NGX_CONF_UNSET, NGX_HTTP_LOC_CONF, NGX_HTTP_LOC_CONF_OFFSET, NGX_HTTP_MAIN_CONF,
    NGX_HTTP_MAIN_CONF_OFFSET, NGX_LOG_EMERG,
};
use ngx::core::{NGX_CONF_ERROR, NGX_CONF_OK};
use ngx::ngx_string;
use shortlink_core::{Codec, DeploymentKey};

/// `http{}`-level settings, shared by every location.
#[derive(Default)]
pub struct MainConf {
    /// Built from `shortlink_key_file`; `None` until that directive is seen.
    pub codec: Option<Codec>,
    /// Absolute path of the key file, for messages.
    pub key_file: String,
}

/// Per-location settings.
pub struct LocConf {
    /// `shortlink on|off`.
    pub enabled: ngx_flag_t,
    /// Where `shortlink on` was written, for the "no key file" error.
    pub enabled_at: Option<(String, ngx_uint_t)>,
}

impl Default for LocConf {
    fn default() -> Self {
        Self {
            enabled: NGX_CONF_UNSET as ngx_flag_t,
            enabled_at: None,
        }
    }
}

impl LocConf {
    /// True when the module answers requests in this location.
    pub fn is_enabled(&self) -> bool {
        self.enabled == 1
    }
}

/// The directives, terminated by nginx's null command.
pub static mut COMMANDS: [ngx_command_t; 3] = [
    ngx_command_t {
        name: ngx_string!("shortlink_key_file"),
        type_: (NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1) as ngx_uint_t,
        set: Some(set_key_file),
        conf: NGX_HTTP_MAIN_CONF_OFFSET,
        offset: 0,
        post: ptr::null_mut(),
    },
    ngx_command_t {
        name: ngx_string!("shortlink"),
        type_: (NGX_HTTP_LOC_CONF | NGX_CONF_FLAG) as ngx_uint_t,
        set: Some(set_enabled),
        conf: NGX_HTTP_LOC_CONF_OFFSET,
        offset: 0,
        post: ptr::null_mut(),
    },
    ngx_command_t::empty(),
];

/// The directive's arguments, name first.
///
/// # Safety
/// `cf` must be the configuration being parsed (as passed to a `set` handler).
unsafe fn args<'a>(cf: *mut ngx_conf_t) -> &'a [ngx_str_t] {
    // SAFETY: while a directive is parsed, cf->args is an array of ngx_str_t.
    unsafe { (*(*cf).args).as_slice() }
}

/// Logs `[emerg] "<directive>" <message>` with the file and line, and fails the directive.
unsafe fn conf_error(cf: *mut ngx_conf_t, message: core::fmt::Arguments<'_>) -> *mut c_char {
    // SAFETY: cf is the configuration being parsed; its args start with the directive name.
    let name = unsafe { args(cf) }[0].to_string();
    ngx::ngx_conf_log_error!(NGX_LOG_EMERG, cf, "\"{}\" {}", name, message);
    NGX_CONF_ERROR
}

/// Where the directive being parsed is written.
unsafe fn position(cf: *mut ngx_conf_t) -> (String, ngx_uint_t) {
    // SAFETY: conf_file is set while a file is being parsed.
    unsafe {
        let file = &*(*cf).conf_file;
        (file.file.name.to_string(), file.line)
    }
}

extern "C" fn set_key_file(
    cf: *mut ngx_conf_t,
    _cmd: *mut ngx_command_t,
    conf: *mut c_void,
) -> *mut c_char {
    // SAFETY: nginx calls this with the http main conf allocated by create_main_conf.
    let main = unsafe { &mut *conf.cast::<MainConf>() };
    if main.codec.is_some() {
        return unsafe { conf_error(cf, format_args!("is duplicate")) };
    }
    // SAFETY: the directive takes exactly one argument.
    let mut path = unsafe { args(cf) }[1];
    // SAFETY: cf->cycle is the cycle being configured; the name is resolved
    // against the configuration prefix, as nginx does for ssl_certificate.
    if unsafe { nginx_sys::ngx_conf_full_name((*cf).cycle, &mut path, 1) } != 0 {
        return NGX_CONF_ERROR;
    }
    let path = path.to_string();
    match DeploymentKey::load(std::path::Path::new(&path)) {
        Ok(key) => {
            main.codec = Some(Codec::new(&key));
            main.key_file = path;
            NGX_CONF_OK
        }
        Err(e) => unsafe { conf_error(cf, format_args!("cannot use key file: {e}")) },
    }
}

extern "C" fn set_enabled(
    cf: *mut ngx_conf_t,
    _cmd: *mut ngx_command_t,
    conf: *mut c_void,
) -> *mut c_char {
    // SAFETY: nginx calls this with this module's location conf.
    let lcf = unsafe { &mut *conf.cast::<LocConf>() };
    if lcf.enabled != NGX_CONF_UNSET as ngx_flag_t {
        return unsafe { conf_error(cf, format_args!("is duplicate")) };
    }
    // SAFETY: the directive takes exactly one argument.
    let value = unsafe { args(cf) }[1];
    lcf.enabled = match value.as_bytes() {
        b"on" => 1,
        b"off" => 0,
        _ => {
            return unsafe {
                conf_error(
                    cf,
                    format_args!("takes \"on\" or \"off\", not \"{}\"", value),
                )
            }
        }
    };
    lcf.enabled_at = Some(unsafe { position(cf) });
    NGX_CONF_OK
}

/// Merges a location's settings with its parent's and checks they can work.
pub extern "C" fn merge_loc_conf(
    cf: *mut ngx_conf_t,
    prev: *mut c_void,
    conf: *mut c_void,
) -> *mut c_char {
    // SAFETY: nginx passes two location confs of this module.
    let (prev, conf) = unsafe { (&*prev.cast::<LocConf>(), &mut *conf.cast::<LocConf>()) };
    if conf.enabled == NGX_CONF_UNSET as ngx_flag_t {
        conf.enabled = if prev.enabled == NGX_CONF_UNSET as ngx_flag_t {
            0
        } else {
            prev.enabled
        };
        conf.enabled_at = prev.enabled_at.clone();
    }
    if conf.is_enabled() {
        // SAFETY: cf is the configuration being merged; its ctx is the http conf ctx.
        let main = unsafe { crate::main_conf_of(&*cf) };
        if main.is_none_or(|m| m.codec.is_none()) {
            let (file, line) = conf.enabled_at.clone().unwrap_or_default();
            ngx::ngx_log_error!(
                NGX_LOG_EMERG,
                unsafe { (*cf).log },
                "\"shortlink on\" in {}:{} needs \"shortlink_key_file\" in the http block",
                file,
                line
            );
            return NGX_CONF_ERROR;
        }
    }
    NGX_CONF_OK
}
