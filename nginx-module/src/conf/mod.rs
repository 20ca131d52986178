//! Directives and the typed configuration they parse into.
//!
//! Every directive handler reports a bad value with `[emerg]`, the
//! directive's name and what was wrong; nginx adds the file and line, so
//! `nginx -t` tells the operator what to fix.

use core::ffi::{c_char, c_void};
use core::ptr;

use core::mem::offset_of;

use nginx_sys::{
    ngx_command_t, ngx_conf_set_msec_slot, ngx_conf_t, ngx_flag_t, ngx_msec_t, ngx_str_t,
    ngx_uint_t, NGX_CONF_1MORE, NGX_CONF_FLAG, NGX_CONF_TAKE1, NGX_CONF_UNSET, NGX_HTTP_LOC_CONF,
    NGX_HTTP_LOC_CONF_OFFSET, NGX_HTTP_MAIN_CONF, NGX_HTTP_MAIN_CONF_OFFSET, NGX_LOG_EMERG,
};
use ngx::core::{NGX_CONF_ERROR, NGX_CONF_OK};
use ngx::ngx_string;
use shortlink_core::{Codec, DeploymentKey};

use crate::cache::ZoneConf;

/// `NGX_CONF_UNSET_MSEC`.
const UNSET_MSEC: ngx_msec_t = ngx_msec_t::MAX;
/// `NGX_CONF_UNSET_UINT`.
const UNSET_UINT: ngx_uint_t = ngx_uint_t::MAX;

/// `http{}`-level settings, shared by every location.
pub struct MainConf {
    /// Built from `shortlink_key_file`; `None` until that directive is seen.
    pub codec: Option<Codec>,
    /// The key itself, for its fingerprint in the daemon handshake.
    pub key: Option<DeploymentKey>,
    /// Absolute path of the key file, for messages.
    pub key_file: String,
    /// `shortlink_zone`: allocated in the conf pool, pointed at by the shm zone.
    pub zone: *mut ZoneConf,
    /// `shortlink_pass unix:PATH`: the daemon's IPC socket path.
    pub pass: Option<String>,
    pub connect_timeout: ngx_msec_t,
    /// Per lookup.
    pub timeout: ngx_msec_t,
    /// How often click counts go to the daemon.
    pub flush_interval: ngx_msec_t,
    /// `shortlink_spool PATH`: where undeliverable clicks are written.
    pub spool: Option<String>,
}

impl Default for MainConf {
    fn default() -> Self {
        Self {
            codec: None,
            key: None,
            key_file: String::new(),
            zone: ptr::null_mut(),
            pass: None,
            connect_timeout: UNSET_MSEC,
            timeout: UNSET_MSEC,
            flush_interval: UNSET_MSEC,
            spool: None,
        }
    }
}

impl MainConf {
    /// The zone settings, if `shortlink_zone` was given.
    pub fn zone(&self) -> Option<&ZoneConf> {
        // SAFETY: set once from a conf-pool allocation that lives as long as self.
        unsafe { self.zone.as_ref() }
    }
}

/// Per-location settings.
pub struct LocConf {
    /// `shortlink on|off`.
    pub enabled: ngx_flag_t,
    /// Where `shortlink on` was written, for the "no key file" error.
    pub enabled_at: Option<(String, ngx_uint_t)>,
    /// `shortlink_redirect`: status for links without their own.
    pub redirect: ngx_uint_t,
    /// `shortlink_fallback`: where unknown, gone and unanswerable codes go.
    pub fallback: Option<Option<String>>,
    /// `shortlink_cache_control`: `Some(None)` is `off`.
    pub cache_control: Option<Option<String>>,
    /// `shortlink_clicks on|off`: count redirects for stats.
    pub clicks: ngx_flag_t,
}

impl Default for LocConf {
    fn default() -> Self {
        Self {
            enabled: NGX_CONF_UNSET as ngx_flag_t,
            enabled_at: None,
            redirect: UNSET_UINT,
            fallback: None,
            cache_control: None,
            clicks: NGX_CONF_UNSET as ngx_flag_t,
        }
    }
}

impl LocConf {
    /// True when the module answers requests in this location.
    pub fn is_enabled(&self) -> bool {
        self.enabled == 1
    }
}

const fn command(
    name: ngx_str_t,
    type_: u32,
    set: unsafe extern "C" fn(*mut ngx_conf_t, *mut ngx_command_t, *mut c_void) -> *mut c_char,
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

/// The directives, terminated by nginx's null command.
pub static mut COMMANDS: [ngx_command_t; 13] = [
    command(
        ngx_string!("shortlink_key_file"),
        MAIN | NGX_CONF_TAKE1,
        set_key_file,
        NGX_HTTP_MAIN_CONF_OFFSET,
        0,
    ),
    command(
        ngx_string!("shortlink_zone"),
        MAIN | NGX_CONF_1MORE,
        set_zone,
        NGX_HTTP_MAIN_CONF_OFFSET,
        0,
    ),
    command(
        ngx_string!("shortlink_pass"),
        MAIN | NGX_CONF_TAKE1,
        set_pass,
        NGX_HTTP_MAIN_CONF_OFFSET,
        0,
    ),
    command(
        ngx_string!("shortlink_connect_timeout"),
        MAIN | NGX_CONF_TAKE1,
        ngx_conf_set_msec_slot,
        NGX_HTTP_MAIN_CONF_OFFSET,
        offset_of!(MainConf, connect_timeout),
    ),
    command(
        ngx_string!("shortlink_timeout"),
        MAIN | NGX_CONF_TAKE1,
        ngx_conf_set_msec_slot,
        NGX_HTTP_MAIN_CONF_OFFSET,
        offset_of!(MainConf, timeout),
    ),
    command(
        ngx_string!("shortlink_flush_interval"),
        MAIN | NGX_CONF_TAKE1,
        ngx_conf_set_msec_slot,
        NGX_HTTP_MAIN_CONF_OFFSET,
        offset_of!(MainConf, flush_interval),
    ),
    command(
        ngx_string!("shortlink_spool"),
        MAIN | NGX_CONF_TAKE1,
        set_spool,
        NGX_HTTP_MAIN_CONF_OFFSET,
        0,
    ),
    command(
        ngx_string!("shortlink"),
        LOC | NGX_CONF_FLAG,
        set_enabled,
        NGX_HTTP_LOC_CONF_OFFSET,
        0,
    ),
    command(
        ngx_string!("shortlink_redirect"),
        LOC | NGX_CONF_TAKE1,
        set_redirect,
        NGX_HTTP_LOC_CONF_OFFSET,
        0,
    ),
    command(
        ngx_string!("shortlink_fallback"),
        LOC | NGX_CONF_TAKE1,
        set_fallback,
        NGX_HTTP_LOC_CONF_OFFSET,
        0,
    ),
    command(
        ngx_string!("shortlink_clicks"),
        LOC | NGX_CONF_FLAG,
        nginx_sys::ngx_conf_set_flag_slot,
        NGX_HTTP_LOC_CONF_OFFSET,
        offset_of!(LocConf, clicks),
    ),
    command(
        ngx_string!("shortlink_cache_control"),
        LOC | NGX_CONF_1MORE,
        set_cache_control,
        NGX_HTTP_LOC_CONF_OFFSET,
        0,
    ),
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
            main.key = Some(key);
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
    if conf.clicks == NGX_CONF_UNSET as ngx_flag_t {
        conf.clicks = if prev.clicks == NGX_CONF_UNSET as ngx_flag_t {
            1
        } else {
            prev.clicks
        };
    }
    if conf.redirect == UNSET_UINT {
        conf.redirect = if prev.redirect == UNSET_UINT {
            302
        } else {
            prev.redirect
        };
    }
    if conf.fallback.is_none() {
        conf.fallback = Some(prev.fallback.clone().flatten());
    }
    if conf.cache_control.is_none() {
        conf.cache_control = Some(prev.cache_control.clone().flatten());
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

/// Parses `zone=NAME:SIZE [ttl=TIME] [negative_ttl=TIME]` and adds the zone.
extern "C" fn set_zone(
    cf: *mut ngx_conf_t,
    _cmd: *mut ngx_command_t,
    conf: *mut c_void,
) -> *mut c_char {
    // SAFETY: nginx calls this with the http main conf.
    let main = unsafe { &mut *conf.cast::<MainConf>() };
    if !main.zone.is_null() {
        return unsafe { conf_error(cf, format_args!("is duplicate")) };
    }
    let mut name = None;
    let mut size = 0usize;
    let mut ttl: ngx_msec_t = 10 * 60 * 1000;
    let mut negative_ttl: ngx_msec_t = 30 * 1000;
    // SAFETY: directive arguments.
    for arg in unsafe { &args(cf)[1..] } {
        let text = arg.as_bytes();
        if let Some(spec) = text.strip_prefix(b"zone=") {
            let Some(colon) = spec.iter().rposition(|&b| b == b':') else {
                return unsafe {
                    conf_error(cf, format_args!("needs zone=NAME:SIZE, not \"{arg}\""))
                };
            };
            let mut sz = ngx_str_t {
                len: spec.len() - colon - 1,
                data: unsafe { arg.data.add(5 + colon + 1) },
            };
            // SAFETY: sz points into the argument.
            let parsed = unsafe { nginx_sys::ngx_parse_size(&mut sz) };
            if colon == 0 || parsed <= 0 {
                return unsafe {
                    conf_error(cf, format_args!("has an invalid zone size in \"{arg}\""))
                };
            }
            // SAFETY: ngx_pagesize is set before configuration is parsed.
            let min = 8 * unsafe { nginx_sys::ngx_pagesize };
            if (parsed as usize) < min {
                return unsafe {
                    conf_error(
                        cf,
                        format_args!("zone \"{arg}\" is too small, the minimum is {min} bytes"),
                    )
                };
            }
            name = Some(ngx_str_t {
                len: colon,
                data: unsafe { arg.data.add(5) },
            });
            size = parsed as usize;
        } else if let Some(t) = text.strip_prefix(b"ttl=") {
            match parse_msec(arg, t.len()) {
                Some(v) => ttl = v,
                None => {
                    return unsafe {
                        conf_error(cf, format_args!("has an invalid time in \"{arg}\""))
                    }
                }
            }
        } else if let Some(t) = text.strip_prefix(b"negative_ttl=") {
            match parse_msec(arg, t.len()) {
                Some(v) => negative_ttl = v,
                None => {
                    return unsafe {
                        conf_error(cf, format_args!("has an invalid time in \"{arg}\""))
                    }
                }
            }
        } else {
            return unsafe { conf_error(cf, format_args!("has an unknown parameter \"{arg}\"")) };
        }
    }
    let Some(mut name) = name else {
        return unsafe { conf_error(cf, format_args!("needs zone=NAME:SIZE")) };
    };
    // SAFETY: cf->pool is the cycle's configuration pool.
    let pool = unsafe { ngx::core::Pool::from_ngx_pool((*cf).pool) };
    let zone_conf = pool.allocate(ZoneConf {
        zone: ptr::null_mut(),
        ttl,
        negative_ttl,
        fingerprint: shortlink_core::Fingerprint([0; 8]),
    });
    if zone_conf.is_null() {
        return NGX_CONF_ERROR;
    }
    // SAFETY: adding a shared zone tagged with our module during parsing.
    let zone = unsafe {
        nginx_sys::ngx_shared_memory_add(
            cf,
            &mut name,
            size,
            core::ptr::addr_of_mut!(crate::ngx_http_shortlink_module).cast(),
        )
    };
    if zone.is_null() {
        return NGX_CONF_ERROR;
    }
    // SAFETY: zone was just returned by nginx.
    unsafe {
        if !(*zone).data.is_null() {
            return conf_error(cf, format_args!("zone \"{}\" is already used", name));
        }
        (*zone).init = Some(crate::cache::init_zone);
        (*zone).data = zone_conf.cast();
        (*zone_conf).zone = zone;
    }
    main.zone = zone_conf;
    NGX_CONF_OK
}

/// The time after `prefix_len` bytes of "name=" in `arg`, in milliseconds.
fn parse_msec(arg: &ngx_str_t, value_len: usize) -> Option<ngx_msec_t> {
    let mut value = ngx_str_t {
        len: value_len,
        // SAFETY: the value is the tail of the argument.
        data: unsafe { arg.data.add(arg.len - value_len) },
    };
    // SAFETY: value points into a live argument.
    let v = unsafe { nginx_sys::ngx_parse_time(&mut value, 0) };
    (v >= 0).then_some(v as ngx_msec_t)
}

extern "C" fn set_pass(
    cf: *mut ngx_conf_t,
    _cmd: *mut ngx_command_t,
    conf: *mut c_void,
) -> *mut c_char {
    // SAFETY: nginx calls this with the http main conf.
    let main = unsafe { &mut *conf.cast::<MainConf>() };
    if main.pass.is_some() {
        return unsafe { conf_error(cf, format_args!("is duplicate")) };
    }
    // SAFETY: one argument.
    let value = unsafe { args(cf) }[1];
    match value.as_bytes().strip_prefix(b"unix:") {
        Some(path) if path.len() > 1 && path[0] == b'/' && path.len() < 108 => {
            main.pass = Some(String::from_utf8_lossy(path).into_owned());
            NGX_CONF_OK
        }
        _ => unsafe {
            conf_error(
                cf,
                format_args!(
                    "needs \"unix:/absolute/path\" (shorter than 108 bytes), not \"{value}\""
                ),
            )
        },
    }
}

extern "C" fn set_spool(
    cf: *mut ngx_conf_t,
    _cmd: *mut ngx_command_t,
    conf: *mut c_void,
) -> *mut c_char {
    // SAFETY: nginx calls this with the http main conf.
    let main = unsafe { &mut *conf.cast::<MainConf>() };
    if main.spool.is_some() {
        return unsafe { conf_error(cf, format_args!("is duplicate")) };
    }
    // SAFETY: one argument.
    let mut path = unsafe { args(cf) }[1];
    // SAFETY: resolve against the prefix like other paths.
    if unsafe { nginx_sys::ngx_conf_full_name((*cf).cycle, &mut path, 0) } != 0 {
        return NGX_CONF_ERROR;
    }
    main.spool = Some(path.to_string());
    NGX_CONF_OK
}

extern "C" fn set_redirect(
    cf: *mut ngx_conf_t,
    _cmd: *mut ngx_command_t,
    conf: *mut c_void,
) -> *mut c_char {
    // SAFETY: nginx calls this with this module's location conf.
    let lcf = unsafe { &mut *conf.cast::<LocConf>() };
    if lcf.redirect != UNSET_UINT {
        return unsafe { conf_error(cf, format_args!("is duplicate")) };
    }
    // SAFETY: one argument.
    let value = unsafe { args(cf) }[1];
    lcf.redirect = match value.as_bytes() {
        b"301" => 301,
        b"302" => 302,
        b"307" => 307,
        b"308" => 308,
        _ => {
            return unsafe {
                conf_error(
                    cf,
                    format_args!("takes 301, 302, 307 or 308, not \"{value}\""),
                )
            }
        }
    };
    NGX_CONF_OK
}

extern "C" fn set_fallback(
    cf: *mut ngx_conf_t,
    _cmd: *mut ngx_command_t,
    conf: *mut c_void,
) -> *mut c_char {
    // SAFETY: nginx calls this with this module's location conf.
    let lcf = unsafe { &mut *conf.cast::<LocConf>() };
    if lcf.fallback.is_some() {
        return unsafe { conf_error(cf, format_args!("is duplicate")) };
    }
    // SAFETY: one argument.
    let value = unsafe { args(cf) }[1];
    let text = value.to_string();
    if text == "off" {
        lcf.fallback = Some(None);
        return NGX_CONF_OK;
    }
    let relative = text.starts_with('/') && shortlink_core::target::is_header_safe(text.as_bytes());
    if !relative {
        if let Err(e) =
            shortlink_core::validate_target(&text, &shortlink_core::TargetRules::default())
        {
            return unsafe {
                conf_error(
                    cf,
                    format_args!("needs an absolute http(s) URL or a path: {e}"),
                )
            };
        }
    }
    lcf.fallback = Some(Some(text));
    NGX_CONF_OK
}

extern "C" fn set_cache_control(
    cf: *mut ngx_conf_t,
    _cmd: *mut ngx_command_t,
    conf: *mut c_void,
) -> *mut c_char {
    // SAFETY: nginx calls this with this module's location conf.
    let lcf = unsafe { &mut *conf.cast::<LocConf>() };
    if lcf.cache_control.is_some() {
        return unsafe { conf_error(cf, format_args!("is duplicate")) };
    }
    // SAFETY: directive arguments.
    let parts: Vec<String> = unsafe { &args(cf)[1..] }
        .iter()
        .map(|a| a.to_string())
        .collect();
    let value = parts.join(" ");
    if value == "off" {
        lcf.cache_control = Some(None);
        return NGX_CONF_OK;
    }
    if !value.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        return unsafe { conf_error(cf, format_args!("value must be printable ASCII")) };
    }
    lcf.cache_control = Some(Some(value));
    NGX_CONF_OK
}

/// Fills defaults and hands the key fingerprint to the zone.
pub extern "C" fn init_main_conf(cf: *mut ngx_conf_t, conf: *mut c_void) -> *mut c_char {
    // SAFETY: nginx passes our main conf.
    let main = unsafe { &mut *conf.cast::<MainConf>() };
    for (value, default) in [
        (&mut main.connect_timeout, 1000),
        (&mut main.timeout, 500),
        (&mut main.flush_interval, 1000),
    ] {
        if *value == UNSET_MSEC {
            *value = default;
        }
    }
    if let (Some(zone), Some(key)) = (unsafe { main.zone.as_mut() }, main.key.as_ref()) {
        zone.fingerprint = key.fingerprint();
    }
    if main.key.is_none() && (!main.zone.is_null() || main.pass.is_some()) {
        ngx::ngx_log_error!(
            NGX_LOG_EMERG,
            unsafe { (*cf).log },
            "\"shortlink_zone\" and \"shortlink_pass\" need \"shortlink_key_file\" in the http block"
        );
        return NGX_CONF_ERROR;
    }
    NGX_CONF_OK
}
