//! `shortlink_zone zone=NAME:SIZE [ttl=TIME] [negative_ttl=TIME]`: parsed into
//! a [`ZoneConf`] in the configuration pool and added as a shared zone whose
//! `init` is the cache's.

use core::ffi::{c_char, c_void};
use core::ptr;

use nginx_sys::{ngx_command_t, ngx_conf_t, ngx_msec_t, ngx_str_t};

use super::error::{run_directive, ConfError, Directive};
use super::main_conf::MainConf;
use crate::cache::{init_zone, ZoneConf};

/// Defaults of `ttl=` and `negative_ttl=`.
const TTL: ngx_msec_t = 10 * 60 * 1000;
const NEGATIVE_TTL: ngx_msec_t = 30 * 1000;

/// What the directive asks for.
struct ZoneSpec {
    /// Points into the directive's argument, which lives in the cycle's pool.
    name: ngx_str_t,
    size: usize,
    ttl: ngx_msec_t,
    negative_ttl: ngx_msec_t,
}

/// `shortlink_zone`.
pub extern "C" fn set_zone(
    cf: *mut ngx_conf_t,
    _cmd: *mut ngx_command_t,
    conf: *mut c_void,
) -> *mut c_char {
    // SAFETY: nginx calls set handlers with the conf being parsed; this
    // command's offset selects the http main conf, a MainConf.
    unsafe { run_directive(cf, conf, zone) }
}

fn zone(d: &Directive<'_>, main: &mut MainConf) -> Result<(), ConfError> {
    if !main.zone.is_null() {
        return Err(ConfError::Duplicate);
    }
    let mut spec = parse(d.values())?;
    let zone_conf = d.pool().allocate(ZoneConf {
        zone: ptr::null_mut(),
        ttl: spec.ttl,
        negative_ttl: spec.negative_ttl,
        fingerprint: shortlink_core::Fingerprint([0; 8]),
    });
    if zone_conf.is_null() {
        return Err(ConfError::Logged);
    }
    // SAFETY: adding a shared zone tagged with this module while the
    // configuration is parsed; nginx copies nothing it does not own.
    let zone = unsafe {
        nginx_sys::ngx_shared_memory_add(
            d.cf(),
            &mut spec.name,
            spec.size,
            ptr::addr_of_mut!(crate::ngx_http_shortlink_module).cast(),
        )
    };
    // SAFETY: null or the zone nginx just returned, live for the cycle.
    let Some(shm) = (unsafe { zone.as_mut() }) else {
        return Err(ConfError::Logged);
    };
    if !shm.data.is_null() {
        return Err(ConfError::ZoneUsed(spec.name.to_string()));
    }
    shm.init = Some(init_zone);
    shm.data = zone_conf.cast();
    // SAFETY: zone_conf is the fresh, initialised pool allocation above.
    unsafe { (*zone_conf).zone = zone };
    main.zone = zone_conf;
    Ok(())
}

fn parse(values: &[ngx_str_t]) -> Result<ZoneSpec, ConfError> {
    let mut spec = ZoneSpec {
        name: ngx_str_t::default(),
        size: 0,
        ttl: TTL,
        negative_ttl: NEGATIVE_TTL,
    };
    for arg in values {
        let text = arg.as_bytes();
        if let Some(value) = text.strip_prefix(b"zone=") {
            let Some(colon) = value.iter().rposition(|&b| b == b':') else {
                return Err(ConfError::ZoneSpec(arg.to_string()));
            };
            let Some(size) = parse_size(&value[colon + 1..]).filter(|_| colon > 0) else {
                return Err(ConfError::ZoneSize(arg.to_string()));
            };
            // SAFETY: ngx_pagesize is set before the configuration is parsed.
            let min = 8 * unsafe { nginx_sys::ngx_pagesize };
            if size < min {
                return Err(ConfError::ZoneTooSmall {
                    arg: arg.to_string(),
                    min,
                });
            }
            spec.name = str_of(&value[..colon]);
            spec.size = size;
        } else if let Some(value) = text.strip_prefix(b"ttl=") {
            spec.ttl = parse_msec(value).ok_or_else(|| ConfError::Time(arg.to_string()))?;
        } else if let Some(value) = text.strip_prefix(b"negative_ttl=") {
            spec.negative_ttl =
                parse_msec(value).ok_or_else(|| ConfError::Time(arg.to_string()))?;
        } else {
            return Err(ConfError::UnknownParameter(arg.to_string()));
        }
    }
    if spec.name.len == 0 {
        return Err(ConfError::NoZone);
    }
    Ok(spec)
}

/// An `ngx_str_t` over `bytes` (which nginx only reads).
fn str_of(bytes: &[u8]) -> ngx_str_t {
    ngx_str_t {
        len: bytes.len(),
        data: bytes.as_ptr().cast_mut(),
    }
}

/// `10m`, `512k`: nginx's size syntax.
fn parse_size(value: &[u8]) -> Option<usize> {
    let mut value = str_of(value);
    // SAFETY: ngx_parse_size reads `len` bytes at `data`, a live slice.
    let size = unsafe { nginx_sys::ngx_parse_size(&mut value) };
    (size > 0).then_some(size as usize)
}

/// `10m`, `30s`, `500ms`: nginx's time syntax, in milliseconds.
fn parse_msec(value: &[u8]) -> Option<ngx_msec_t> {
    let mut value = str_of(value);
    // SAFETY: ngx_parse_time reads `len` bytes at `data`, a live slice.
    let msec = unsafe { nginx_sys::ngx_parse_time(&mut value, 0) };
    (msec >= 0).then_some(msec as ngx_msec_t)
}
