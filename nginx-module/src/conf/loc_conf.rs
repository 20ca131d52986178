//! `LocConf`: the per-location settings (`shortlink on`, redirect status,
//! fallback, `Cache-Control`, click counting), their directives and the
//! merge that checks a `shortlink on` location can work.

use core::ffi::{c_char, c_void};

use nginx_sys::{
    ngx_command_t, ngx_conf_t, ngx_flag_t, ngx_http_get_variable_index, ngx_int_t, ngx_str_t,
    ngx_uint_t, NGX_CONF_UNSET, NGX_ERROR,
};
use shortlink_core::target::is_header_safe;
use shortlink_core::{validate_target, RedirectStatus, TargetRules};

use super::error::{run_block, run_directive, ConfError, Directive};
use super::UNSET_UINT;

/// `NGX_CONF_UNSET` for flags.
const UNSET_FLAG: ngx_flag_t = NGX_CONF_UNSET as ngx_flag_t;

/// `shortlink_password_cookie_ttl` when unset: one hour.
const DEFAULT_PASSWORD_COOKIE_TTL: nginx_sys::time_t = 3600;
/// `shortlink_variant_cookie_ttl` when unset: 30 days.
const DEFAULT_VARIANT_COOKIE_TTL: nginx_sys::time_t = 30 * 86_400;

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
    /// `shortlink_forward_query on|off`: the visit's query string joins
    /// the target (`shortlink_core::query`).
    pub forward_query: ngx_flag_t,
    /// `shortlink_preview_suffix`: `/<code><suffix>` answers the link's
    /// preview page (`shortlink_core::preview`); `Some(None)` is `off`.
    pub preview_suffix: Option<Option<String>>,
    /// `shortlink_country $variable|off`: the index of the variable that
    /// holds the visitor's country code; `Some(None)` is `off`.
    pub country: Option<Option<ngx_uint_t>>,
    /// `shortlink_status`: this location answers the edge's figures (not
    /// inherited, as `stub_status`).
    pub status: bool,
    /// `shortlink_password_cookie_ttl`: seconds a visitor who gave a
    /// protected link's password is let through by its cookie (0: no
    /// cookie, the password every time); default 1 hour.
    pub password_cookie_ttl: nginx_sys::time_t,
    /// `shortlink_variant_cookie_ttl`: seconds a visitor of a link with
    /// A/B variants is kept on the variant they got (0: every visit picks).
    pub variant_cookie_ttl: nginx_sys::time_t,
}

impl Default for LocConf {
    fn default() -> Self {
        Self {
            enabled: UNSET_FLAG,
            enabled_at: None,
            redirect: UNSET_UINT,
            fallback: None,
            cache_control: None,
            clicks: UNSET_FLAG,
            forward_query: UNSET_FLAG,
            preview_suffix: None,
            country: None,
            status: false,
            password_cookie_ttl: NGX_CONF_UNSET as nginx_sys::time_t,
            variant_cookie_ttl: NGX_CONF_UNSET as nginx_sys::time_t,
        }
    }
}

impl LocConf {
    /// True when the module answers requests in this location.
    pub fn is_enabled(&self) -> bool {
        self.enabled == 1
    }

    /// The `shortlink_fallback` URL, unless it is `off` or unset.
    pub fn fallback(&self) -> Option<&str> {
        self.fallback.as_ref().and_then(|f| f.as_deref())
    }

    /// The `shortlink_preview_suffix` value, unless it is `off` or unset.
    pub fn preview_suffix(&self) -> Option<&[u8]> {
        self.preview_suffix
            .as_ref()
            .and_then(|s| s.as_deref())
            .map(str::as_bytes)
    }

    /// The index of the `shortlink_country` variable, unless it is `off`
    /// or unset.
    pub fn country_variable(&self) -> Option<ngx_uint_t> {
        self.country.flatten()
    }

    /// The `shortlink_cache_control` value, unless it is `off` or unset.
    pub fn cache_control(&self) -> Option<&str> {
        self.cache_control.as_ref().and_then(|c| c.as_deref())
    }
}

/// `shortlink on|off`.
pub extern "C" fn set_enabled(
    cf: *mut ngx_conf_t,
    _cmd: *mut ngx_command_t,
    conf: *mut c_void,
) -> *mut c_char {
    // SAFETY: nginx calls set handlers with the conf being parsed; this
    // command's offset selects this module's location conf, a LocConf.
    unsafe { run_directive(cf, conf, enabled) }
}

fn enabled(d: &Directive<'_>, lcf: &mut LocConf) -> Result<(), ConfError> {
    if lcf.enabled != UNSET_FLAG {
        return Err(ConfError::Duplicate);
    }
    let value = d.value();
    lcf.enabled = match value.as_bytes() {
        b"on" => 1,
        b"off" => 0,
        _ => return Err(ConfError::NotAFlag(value.to_string())),
    };
    lcf.enabled_at = Some(d.position());
    Ok(())
}

/// `shortlink_redirect 301|302|307|308`.
/// `shortlink_status`.
pub extern "C" fn set_status(
    cf: *mut ngx_conf_t,
    _cmd: *mut ngx_command_t,
    conf: *mut c_void,
) -> *mut c_char {
    // SAFETY: as for set_enabled: a LocConf.
    unsafe { run_directive(cf, conf, status) }
}

fn status(_: &Directive<'_>, lcf: &mut LocConf) -> Result<(), ConfError> {
    if lcf.status {
        return Err(ConfError::Duplicate);
    }
    lcf.status = true;
    Ok(())
}

pub extern "C" fn set_redirect(
    cf: *mut ngx_conf_t,
    _cmd: *mut ngx_command_t,
    conf: *mut c_void,
) -> *mut c_char {
    // SAFETY: as for set_enabled: a LocConf.
    unsafe { run_directive(cf, conf, redirect) }
}

fn redirect(d: &Directive<'_>, lcf: &mut LocConf) -> Result<(), ConfError> {
    if lcf.redirect != UNSET_UINT {
        return Err(ConfError::Duplicate);
    }
    let value = d.value();
    let status = RedirectStatus::parse(value.as_bytes())
        .ok_or_else(|| ConfError::Redirect(value.to_string()))?;
    lcf.redirect = status.code() as ngx_uint_t;
    Ok(())
}

/// `shortlink_fallback URL|off`.
pub extern "C" fn set_fallback(
    cf: *mut ngx_conf_t,
    _cmd: *mut ngx_command_t,
    conf: *mut c_void,
) -> *mut c_char {
    // SAFETY: as for set_enabled: a LocConf.
    unsafe { run_directive(cf, conf, fallback) }
}

fn fallback(d: &Directive<'_>, lcf: &mut LocConf) -> Result<(), ConfError> {
    if lcf.fallback.is_some() {
        return Err(ConfError::Duplicate);
    }
    let text = d.value().to_string();
    if text == "off" {
        lcf.fallback = Some(None);
        return Ok(());
    }
    let relative = text.starts_with('/') && is_header_safe(text.as_bytes());
    if !relative {
        validate_target(&text, &TargetRules::default())?;
    }
    lcf.fallback = Some(Some(text));
    Ok(())
}

/// `shortlink_cache_control VALUE...|off`.
pub extern "C" fn set_cache_control(
    cf: *mut ngx_conf_t,
    _cmd: *mut ngx_command_t,
    conf: *mut c_void,
) -> *mut c_char {
    // SAFETY: as for set_enabled: a LocConf.
    unsafe { run_directive(cf, conf, cache_control) }
}

fn cache_control(d: &Directive<'_>, lcf: &mut LocConf) -> Result<(), ConfError> {
    if lcf.cache_control.is_some() {
        return Err(ConfError::Duplicate);
    }
    let parts: Vec<String> = d.values().iter().map(|a| a.to_string()).collect();
    let value = parts.join(" ");
    if value == "off" {
        lcf.cache_control = Some(None);
        return Ok(());
    }
    if !value.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        return Err(ConfError::NotPrintable);
    }
    lcf.cache_control = Some(Some(value));
    Ok(())
}

/// `shortlink_preview_suffix SUFFIX|off`.
pub extern "C" fn set_preview_suffix(
    cf: *mut ngx_conf_t,
    _cmd: *mut ngx_command_t,
    conf: *mut c_void,
) -> *mut c_char {
    // SAFETY: as for set_enabled: a LocConf.
    unsafe { run_directive(cf, conf, preview_suffix) }
}

fn preview_suffix(d: &Directive<'_>, lcf: &mut LocConf) -> Result<(), ConfError> {
    if lcf.preview_suffix.is_some() {
        return Err(ConfError::Duplicate);
    }
    let value = d.value().to_string();
    if value == "off" {
        lcf.preview_suffix = Some(None);
        return Ok(());
    }
    let suffix = shortlink_core::preview::parse_suffix(&value)?;
    lcf.preview_suffix = Some(Some(suffix.to_string()));
    Ok(())
}

/// `shortlink_country $variable|off`.
pub extern "C" fn set_country(
    cf: *mut ngx_conf_t,
    _cmd: *mut ngx_command_t,
    conf: *mut c_void,
) -> *mut c_char {
    // SAFETY: as for set_enabled: a LocConf.
    unsafe { run_directive(cf, conf, country) }
}

fn country(d: &Directive<'_>, lcf: &mut LocConf) -> Result<(), ConfError> {
    if lcf.country.is_some() {
        return Err(ConfError::Duplicate);
    }
    let value = d.value();
    let bytes = value.as_bytes();
    if bytes == b"off" {
        lcf.country = Some(None);
        return Ok(());
    }
    let name = match bytes {
        [b'$', name @ ..] if !name.is_empty() => name,
        _ => return Err(ConfError::CountryVariable(value.to_string())),
    };
    let mut name = ngx_str_t {
        len: name.len(),
        data: name.as_ptr().cast_mut(),
    };
    // SAFETY: cf is the configuration being parsed; nginx copies the name.
    let index = unsafe { ngx_http_get_variable_index(d.cf(), &mut name) };
    if index == NGX_ERROR as ngx_int_t {
        return Err(ConfError::Logged);
    }
    lcf.country = Some(Some(index as ngx_uint_t));
    Ok(())
}

/// `merge_loc_conf`: a location's settings over its parent's; a `shortlink
/// on` location needs the key.
pub extern "C" fn merge_loc_conf(
    cf: *mut ngx_conf_t,
    prev: *mut c_void,
    conf: *mut c_void,
) -> *mut c_char {
    // SAFETY: nginx calls merge_loc_conf with the configuration being
    // merged and two location confs of this module, parent first.
    unsafe {
        run_block(cf, || {
            let (prev, conf) = (&*prev.cast::<LocConf>(), &mut *conf.cast::<LocConf>());
            merge(conf, prev);
            let main = crate::main_conf_of(&*cf);
            check(conf, main.is_some_and(|m| m.codec.is_some()))
        })
    }
}

fn merge(conf: &mut LocConf, prev: &LocConf) {
    if conf.enabled == UNSET_FLAG {
        conf.enabled = if prev.enabled == UNSET_FLAG {
            0
        } else {
            prev.enabled
        };
        conf.enabled_at = prev.enabled_at.clone();
    }
    if conf.clicks == UNSET_FLAG {
        conf.clicks = if prev.clicks == UNSET_FLAG {
            1
        } else {
            prev.clicks
        };
    }
    if conf.password_cookie_ttl == NGX_CONF_UNSET as nginx_sys::time_t {
        conf.password_cookie_ttl =
            if prev.password_cookie_ttl == NGX_CONF_UNSET as nginx_sys::time_t {
                DEFAULT_PASSWORD_COOKIE_TTL
            } else {
                prev.password_cookie_ttl
            };
    }
    if conf.variant_cookie_ttl == NGX_CONF_UNSET as nginx_sys::time_t {
        conf.variant_cookie_ttl = if prev.variant_cookie_ttl == NGX_CONF_UNSET as nginx_sys::time_t
        {
            DEFAULT_VARIANT_COOKIE_TTL
        } else {
            prev.variant_cookie_ttl
        };
    }
    if conf.forward_query == UNSET_FLAG {
        conf.forward_query = if prev.forward_query == UNSET_FLAG {
            0
        } else {
            prev.forward_query
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
    if conf.preview_suffix.is_none() {
        conf.preview_suffix = Some(prev.preview_suffix.clone().flatten());
    }
    if conf.country.is_none() {
        conf.country = Some(prev.country.flatten());
    }
}

fn check(conf: &LocConf, have_key: bool) -> Result<(), ConfError> {
    if conf.is_enabled() && !have_key {
        let (file, line) = conf.enabled_at.clone().unwrap_or_default();
        return Err(ConfError::OnWithoutKey { file, line });
    }
    Ok(())
}
