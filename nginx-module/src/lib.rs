//! `ngx_http_shortlink_module`: answers short-link requests inside nginx.
//!
//! This file holds the module statics, the `HttpModule` impl and thin C
//! callbacks; directives live in `conf/`, the request path in `handler.rs`,
//! variables in `variables.rs`. The logic worth unit tests is in
//! `shortlink-core`.

use core::ffi::c_void;
use core::ptr::addr_of;

use nginx_sys::{
    ngx_array_push, ngx_conf_t, ngx_cycle_t, ngx_http_handler_pt, ngx_http_module_t,
    ngx_http_phases_NGX_HTTP_PRECONTENT_PHASE, ngx_int_t, ngx_module_t, NGX_ERROR, NGX_HTTP_MODULE,
    NGX_OK,
};
use ngx::http::{
    HttpModule, HttpModuleConfExt, HttpModuleLocationConf, HttpModuleMainConf, NgxHttpCoreModule,
};

mod cache;
mod clicks;
mod conf;
mod handler;
mod log;
mod net;
mod request;
mod variables;

/// Type-level handle for the module's configuration accessors.
pub struct Module;

impl HttpModule for Module {
    fn module() -> &'static ngx_module_t {
        Self::module_ref()
    }

    unsafe extern "C" fn preconfiguration(cf: *mut ngx_conf_t) -> ngx_int_t {
        // SAFETY: nginx passes the configuration being parsed.
        unsafe { variables::register(cf) }
    }

    unsafe extern "C" fn postconfiguration(cf: *mut ngx_conf_t) -> ngx_int_t {
        // SAFETY: cf is the http configuration; the core main conf exists.
        let Some(cmcf) = (unsafe { NgxHttpCoreModule::main_conf_mut(&*cf) }) else {
            return NGX_ERROR as ngx_int_t;
        };
        let phase = &mut cmcf.phases[ngx_http_phases_NGX_HTTP_PRECONTENT_PHASE as usize].handlers;
        // SAFETY: the phase handler array is an ngx_array_t of handler pointers.
        let slot = unsafe { ngx_array_push(phase) }.cast::<ngx_http_handler_pt>();
        if slot.is_null() {
            return NGX_ERROR as ngx_int_t;
        }
        // SAFETY: slot is a fresh element of the right type.
        unsafe { *slot = Some(handler::precontent_handler) };
        NGX_OK as ngx_int_t
    }
}

impl Module {
    /// The module descriptor, usable where a `&'static` is needed.
    pub fn module_ref() -> &'static ngx_module_t {
        // SAFETY: the static is only written by nginx while loading modules,
        // before any request or configuration callback runs.
        unsafe { &*addr_of!(ngx_http_shortlink_module) }
    }
}

// SAFETY: MainConf is what create_main_conf allocates for this module.
unsafe impl HttpModuleMainConf for Module {
    type MainConf = conf::MainConf;
}

// SAFETY: LocConf is what create_loc_conf allocates for this module.
unsafe impl HttpModuleLocationConf for Module {
    type LocationConf = conf::LocConf;
}

/// The module's main conf as seen from a configuration context.
///
/// # Safety
/// `cf` must be inside the http block.
pub(crate) unsafe fn main_conf_of(cf: &ngx_conf_t) -> Option<&'static conf::MainConf> {
    // SAFETY: the caller guarantees cf->ctx is an http conf ctx.
    unsafe {
        cf.http_main_conf_unchecked::<conf::MainConf>(Module::module_ref())
            .map(|p| &*p.as_ptr())
    }
}

/// Worker start: open the link to the daemon (if `shortlink_pass` is set).
extern "C" fn init_process(cycle: *mut ngx_cycle_t) -> ngx_int_t {
    let started = std::panic::catch_unwind(|| {
        // SAFETY: nginx passes the worker's cycle; its http conf is complete.
        let Some(main) =
            (unsafe { (*cycle).http_main_conf_unchecked::<conf::MainConf>(Module::module_ref()) })
        else {
            return;
        };
        // SAFETY: the conf lives as long as the cycle.
        let main = unsafe { main.as_ref() };
        let (Some(socket), Some(key)) = (main.pass.clone(), main.key.as_ref()) else {
            return;
        };
        let zone = main.zone();
        // SAFETY: the zone was initialised by the master before forking.
        let cache = zone.and_then(|z| unsafe { cache::LinkCache::from_zone(z.zone) });
        let started_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let link_conf = net::LinkConf {
            socket,
            fingerprint: key.fingerprint(),
            connect_timeout: main.connect_timeout,
            timeout: main.timeout,
            flush_interval: main.flush_interval,
            // SAFETY: ngx_worker is set before init_process runs.
            subscribe: unsafe { nginx_sys::ngx_worker } == 0,
            cache,
            ttl: zone.map_or(0, |z| z.ttl),
            negative_ttl: zone.map_or(0, |z| z.negative_ttl),
            deliver: handler::deliver,
            clicks: clicks::ClickBook::new(
                std::process::id(),
                started_ms,
                main.spool.clone().map(Into::into),
            ),
        };
        // SAFETY: the cycle log outlives the worker's event loop.
        net::install(net::DaemonLink::new(link_conf, unsafe { (*cycle).log }));
    });
    if started.is_err() {
        return NGX_ERROR as ngx_int_t;
    }
    NGX_OK as ngx_int_t
}

/// Worker exit: what could not be delivered goes to the spool.
extern "C" fn exit_process(_cycle: *mut ngx_cycle_t) {
    let _ = std::panic::catch_unwind(|| {
        if let Some(mut link) = net::uninstall() {
            link.shutdown();
        }
    });
}

static CTX: ngx_http_module_t = ngx_http_module_t {
    preconfiguration: Some(Module::preconfiguration),
    postconfiguration: Some(Module::postconfiguration),
    create_main_conf: Some(Module::create_main_conf),
    init_main_conf: Some(conf::init_main_conf),
    create_srv_conf: None,
    merge_srv_conf: None,
    create_loc_conf: Some(Module::create_loc_conf),
    merge_loc_conf: Some(conf::merge_loc_conf),
};

ngx::ngx_modules!(ngx_http_shortlink_module);

/// The module descriptor nginx loads.
#[used]
#[no_mangle]
#[allow(non_upper_case_globals)]
pub static mut ngx_http_shortlink_module: ngx_module_t = ngx_module_t {
    ctx: addr_of!(CTX) as *mut c_void,
    commands: addr_of!(conf::COMMANDS) as *mut _,
    type_: NGX_HTTP_MODULE as _,
    init_process: Some(init_process),
    exit_process: Some(exit_process),
    ..ngx_module_t::default()
};
