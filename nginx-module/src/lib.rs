//! `ngx_http_shortlink_module`: answers short-link requests inside nginx.
//!
//! This file holds the module statics, the `HttpModule` impl and thin C
//! callbacks. Everything else sits in named folders: `conf/` (directives and
//! typed settings), `handler/` (the request path), `request/` (a request's
//! state and visitor), `cache/` (the shared zone), `net/` (the daemon link),
//! with `clicks.rs`, `variables.rs`, `guard.rs` (no panic crosses into nginx)
//! and `log.rs` beside them. The logic worth unit tests is in
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
mod guard;
mod handler;
mod log;
mod net;
mod page;
mod pool;
mod request;
mod status;
mod variables;

use guard::guard;

/// Type-level handle for the module's configuration accessors.
pub struct Module;

impl HttpModule for Module {
    fn module() -> &'static ngx_module_t {
        Self::module_ref()
    }

    unsafe extern "C" fn preconfiguration(cf: *mut ngx_conf_t) -> ngx_int_t {
        // SAFETY: nginx passes the configuration being parsed, live for the call.
        let log = || unsafe { (*cf).log };
        guard("preconfiguration", log, ERROR, || {
            // SAFETY: as above.
            unsafe { variables::register(cf) }
        })
    }

    unsafe extern "C" fn postconfiguration(cf: *mut ngx_conf_t) -> ngx_int_t {
        // SAFETY: nginx passes the http configuration, live for the call.
        let log = || unsafe { (*cf).log };
        guard("postconfiguration", log, ERROR, || {
            // SAFETY: cf is the http configuration; the core main conf exists.
            let Some(cmcf) = (unsafe { NgxHttpCoreModule::main_conf_mut(&*cf) }) else {
                return ERROR;
            };
            let phase =
                &mut cmcf.phases[ngx_http_phases_NGX_HTTP_PRECONTENT_PHASE as usize].handlers;
            // SAFETY: the phase handler array is an ngx_array_t of handler pointers.
            let slot = unsafe { ngx_array_push(phase) }.cast::<ngx_http_handler_pt>();
            if slot.is_null() {
                return ERROR;
            }
            // SAFETY: slot is a fresh element of the right type.
            unsafe { *slot = Some(handler::precontent_handler) };
            NGX_OK as ngx_int_t
        })
    }
}

/// `NGX_ERROR` as callbacks return it.
const ERROR: ngx_int_t = NGX_ERROR as ngx_int_t;

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
    // SAFETY: nginx passes the worker's cycle, live for the worker's life.
    let log = || unsafe { (*cycle).log };
    guard("worker start", log, ERROR, || {
        // SAFETY: as above; its http configuration is complete.
        let main =
            unsafe { (*cycle).http_main_conf_unchecked::<conf::MainConf>(Module::module_ref()) };
        // SAFETY: the main conf lives as long as the cycle.
        if let Some(main) = main.map(|m| unsafe { m.as_ref() }) {
            if let Some(cache) = main.cache() {
                cache.status_rows().claim(std::process::id());
            }
            net::start_worker(main, log(), handler::deliver);
        }
        NGX_OK as ngx_int_t
    })
}

/// Worker exit: what could not be delivered goes to the spool.
extern "C" fn exit_process(cycle: *mut ngx_cycle_t) {
    // SAFETY: nginx passes the exiting worker's cycle.
    let log = || unsafe { (*cycle).log };
    guard("worker exit", log, (), || {
        if let Some(mut link) = net::uninstall() {
            link.shutdown();
        }
        // SAFETY: as above; the main conf lives as long as the cycle.
        let main =
            unsafe { (*cycle).http_main_conf_unchecked::<conf::MainConf>(Module::module_ref()) };
        // SAFETY: as above.
        if let Some(cache) = main.and_then(|m| unsafe { m.as_ref() }.cache()) {
            cache.status_rows().release();
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
