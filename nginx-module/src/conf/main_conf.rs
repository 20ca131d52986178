//! `MainConf`: the `http{}`-level settings (key, zone, daemon socket, timers,
//! spool), their directives and the defaults filled in at the block's end.

use core::ffi::{c_char, c_void};
use core::ptr::{self, NonNull};

use nginx_sys::{ngx_command_t, ngx_conf_t, ngx_msec_t, ngx_shm_zone_t};
use shortlink_core::edge_cookie::{EdgeCookieKey, PASSWORD_PURPOSE};
use shortlink_core::{variants, Codec, DeploymentKey};

use super::error::{run_block, run_directive, ConfError, Directive};
use super::UNSET_MSEC;
use crate::cache::{LinkCache, ZoneConf};

/// `http{}`-level settings, shared by every location.
pub struct MainConf {
    /// Built from `shortlink_key_file`; `None` until that directive is seen.
    pub codec: Option<Codec>,
    /// The key itself, for its fingerprint in the daemon handshake.
    pub key: Option<DeploymentKey>,
    /// Absolute path of the key file, for messages.
    pub key_file: String,
    /// Signs and checks the cookie of protected links (a subkey of the key).
    pub password_cookie: Option<EdgeCookieKey>,
    /// Signs and checks the cookie that keeps a visitor on an A/B variant.
    pub variant_cookie: Option<EdgeCookieKey>,
    /// `shortlink_zone`: allocated in the conf pool, pointed at by the shm zone.
    pub zone: *mut ZoneConf,
    /// `shortlink_pass unix:PATH`: the daemon's IPC socket path.
    pub pass: Option<String>,
    /// `shortlink_connect_timeout`: bounds the handshake with the daemon.
    pub connect_timeout: ngx_msec_t,
    /// `shortlink_timeout`: per lookup.
    pub timeout: ngx_msec_t,
    /// `shortlink_flush_interval`: how often click counts go to the daemon.
    pub flush_interval: ngx_msec_t,
    /// `shortlink_spool PATH`: where undeliverable clicks are written.
    pub spool: Option<String>,
    /// The workers' click slots, added with `shortlink_pass`.
    pub clicks_zone: Option<NonNull<ngx_shm_zone_t>>,
}

impl Default for MainConf {
    fn default() -> Self {
        Self {
            codec: None,
            key: None,
            key_file: String::new(),
            password_cookie: None,
            variant_cookie: None,
            zone: ptr::null_mut(),
            pass: None,
            connect_timeout: UNSET_MSEC,
            timeout: UNSET_MSEC,
            flush_interval: UNSET_MSEC,
            spool: None,
            clicks_zone: None,
        }
    }
}

impl MainConf {
    /// The zone settings, if `shortlink_zone` was given.
    pub fn zone(&self) -> Option<&ZoneConf> {
        // SAFETY: set once from a conf-pool allocation that lives as long as self.
        unsafe { self.zone.as_ref() }
    }

    /// The shared zone's cache, once nginx has initialised the zone (in a
    /// worker, always).
    pub fn cache(&self) -> Option<LinkCache> {
        let zone = self.zone()?;
        // SAFETY: zone.zone is this module's zone, initialised by init_zone
        // before workers start and mapped for their whole life.
        unsafe { LinkCache::from_zone(zone.zone) }
    }
}

/// `shortlink_key_file PATH`.
pub extern "C" fn set_key_file(
    cf: *mut ngx_conf_t,
    _cmd: *mut ngx_command_t,
    conf: *mut c_void,
) -> *mut c_char {
    // SAFETY: nginx calls set handlers with the conf being parsed; this
    // command's offset selects the http main conf, a MainConf.
    unsafe { run_directive(cf, conf, key_file) }
}

fn key_file(d: &Directive<'_>, main: &mut MainConf) -> Result<(), ConfError> {
    if main.codec.is_some() {
        return Err(ConfError::Duplicate);
    }
    let path = d.full_name(d.value(), true)?;
    let key = DeploymentKey::load(std::path::Path::new(&path))?;
    main.codec = Some(Codec::new(&key));
    main.password_cookie = Some(EdgeCookieKey::new(&key, PASSWORD_PURPOSE));
    main.variant_cookie = Some(EdgeCookieKey::new(&key, variants::COOKIE_PURPOSE));
    main.key = Some(key);
    main.key_file = path;
    Ok(())
}

/// `shortlink_pass unix:PATH`.
pub extern "C" fn set_pass(
    cf: *mut ngx_conf_t,
    _cmd: *mut ngx_command_t,
    conf: *mut c_void,
) -> *mut c_char {
    // SAFETY: as for set_key_file: a MainConf.
    unsafe { run_directive(cf, conf, pass) }
}

fn pass(d: &Directive<'_>, main: &mut MainConf) -> Result<(), ConfError> {
    if main.pass.is_some() {
        return Err(ConfError::Duplicate);
    }
    let value = d.value();
    match value.as_bytes().strip_prefix(b"unix:") {
        // sun_path holds 108 bytes with the terminating zero.
        Some(path) if path.len() > 1 && path[0] == b'/' && path.len() < 108 => {
            main.pass = Some(String::from_utf8_lossy(path).into_owned());
            Ok(())
        }
        _ => Err(ConfError::Pass(value.to_string())),
    }
}

/// `shortlink_spool PATH`.
pub extern "C" fn set_spool(
    cf: *mut ngx_conf_t,
    _cmd: *mut ngx_command_t,
    conf: *mut c_void,
) -> *mut c_char {
    // SAFETY: as for set_key_file: a MainConf.
    unsafe { run_directive(cf, conf, spool) }
}

fn spool(d: &Directive<'_>, main: &mut MainConf) -> Result<(), ConfError> {
    if main.spool.is_some() {
        return Err(ConfError::Duplicate);
    }
    main.spool = Some(d.full_name(d.value(), false)?);
    Ok(())
}

/// `init_main_conf`: fills defaults and hands the key fingerprint to the zone.
pub extern "C" fn init_main_conf(cf: *mut ngx_conf_t, conf: *mut c_void) -> *mut c_char {
    // SAFETY: nginx calls init_main_conf with the http configuration and
    // this module's main conf, a MainConf.
    unsafe { run_block(cf, || init(cf, &mut *conf.cast::<MainConf>())) }
}

/// The worker processes the configuration asks for, as far as it is read:
/// `worker_processes` normally comes before `http{}`; if it comes after,
/// the CPU count (what `auto` gives) is the guess.
///
/// # Safety
/// `cf` must be the configuration being parsed.
unsafe fn workers(cf: *mut ngx_conf_t) -> usize {
    // SAFETY: the core module's conf exists from the start of parsing.
    let ccf = unsafe {
        let ctx = (*(*cf).cycle).conf_ctx;
        (*ctx.add(nginx_sys::ngx_core_module.index)).cast::<nginx_sys::ngx_core_conf_t>()
    };
    // SAFETY: as above; read only.
    let set = unsafe { ccf.as_ref() }.map_or(-1, |c| c.worker_processes);
    // SAFETY: set by nginx at start.
    let n = if set > 0 {
        set
    } else {
        unsafe { nginx_sys::ngx_ncpu }
    };
    n.max(1) as usize
}

fn init(cf: *mut ngx_conf_t, main: &mut MainConf) -> Result<(), ConfError> {
    for (value, default) in [
        (&mut main.connect_timeout, 1000),
        (&mut main.timeout, 500),
        (&mut main.flush_interval, 1000),
    ] {
        if *value == UNSET_MSEC {
            *value = default;
        }
    }
    if main.key.is_none() && (!main.zone.is_null() || main.pass.is_some()) {
        return Err(ConfError::ZoneOrPassWithoutKey);
    }
    // SAFETY: zone is null or the conf-pool ZoneConf set by shortlink_zone;
    // nothing else refers to it while the configuration is parsed.
    if let (Some(zone), Some(key)) = (unsafe { main.zone.as_mut() }, main.key.as_ref()) {
        zone.fingerprint = key.fingerprint();
    }
    if main.pass.is_some() {
        // SAFETY: cf is the configuration being parsed (init_main_conf).
        main.clicks_zone = unsafe { crate::clicks::add_zone(cf, workers(cf)) };
        if main.clicks_zone.is_none() {
            return Err(ConfError::Logged);
        }
    }
    Ok(())
}
