//! `ConfError`: why a directive or a block's settings were refused, and the
//! one way every directive setter reports it: a single `[emerg]` line that
//! names the directive, to which nginx adds the file and line.

use core::ffi::{c_char, c_void};

use nginx_sys::{ngx_conf_t, ngx_str_t, ngx_uint_t, NGX_LOG_EMERG};
use ngx::core::{Pool, NGX_CONF_ERROR, NGX_CONF_OK};
use shortlink_core::key::KeyError;
use shortlink_core::target::TargetError;

use crate::guard::guard;

/// A refused setting. Directive errors read after the quoted directive
/// name (`"shortlink_zone" has an invalid time in "ttl=soon"`); block errors
/// are whole sentences.
#[derive(Debug, thiserror::Error)]
pub enum ConfError {
    #[error("is duplicate")]
    Duplicate,
    #[error("cannot use key file: {0}")]
    KeyFile(#[from] KeyError),
    #[error("takes \"on\" or \"off\", not \"{0}\"")]
    NotAFlag(String),
    #[error("needs zone=NAME:SIZE, not \"{0}\"")]
    ZoneSpec(String),
    #[error("has an invalid zone size in \"{0}\"")]
    ZoneSize(String),
    #[error("zone \"{arg}\" is too small, the minimum is {min} bytes")]
    ZoneTooSmall { arg: String, min: usize },
    #[error("has an invalid time in \"{0}\"")]
    Time(String),
    #[error("has an unknown parameter \"{0}\"")]
    UnknownParameter(String),
    #[error("needs zone=NAME:SIZE")]
    NoZone,
    #[error("zone \"{0}\" is already used")]
    ZoneUsed(String),
    #[error("needs \"unix:/absolute/path\" (shorter than 108 bytes), not \"{0}\"")]
    Pass(String),
    #[error("takes 301, 302, 307 or 308, not \"{0}\"")]
    Redirect(String),
    #[error("needs an absolute http(s) URL or a path: {0}")]
    Fallback(#[from] TargetError),
    #[error("value must be printable ASCII")]
    NotPrintable,
    #[error("takes a variable such as \"$geoip2_country_code\" or \"off\", not \"{0}\"")]
    CountryVariable(String),
    #[error("{0}")]
    PreviewSuffix(#[from] shortlink_core::preview::SuffixError),
    #[error("\"shortlink on\" in {file}:{line} needs \"shortlink_key_file\" in the http block")]
    OnWithoutKey { file: String, line: ngx_uint_t },
    #[error(
        "\"shortlink_zone\" and \"shortlink_pass\" need \"shortlink_key_file\" in the http block"
    )]
    ZoneOrPassWithoutKey,
    /// nginx has already logged why (an allocation or a path it could not
    /// resolve): no second line.
    #[error("")]
    Logged,
}

/// The directive being parsed: its arguments, name first, and the
/// configuration they belong to.
pub struct Directive<'a> {
    cf: *mut ngx_conf_t,
    args: &'a [ngx_str_t],
}

impl Directive<'_> {
    /// The configuration being parsed.
    pub fn cf(&self) -> *mut ngx_conf_t {
        self.cf
    }

    /// The first value (directives of one argument).
    pub fn value(&self) -> ngx_str_t {
        self.values().first().copied().unwrap_or_default()
    }

    /// The values after the directive's name.
    pub fn values(&self) -> &[ngx_str_t] {
        self.args.get(1..).unwrap_or(&[])
    }

    /// The configuration's pool, which lives as long as the cycle.
    pub fn pool(&self) -> Pool {
        // SAFETY: cf is the configuration being parsed; its pool is the cycle's.
        unsafe { Pool::from_ngx_pool((*self.cf).pool) }
    }

    /// Where the directive is written.
    pub fn position(&self) -> (String, ngx_uint_t) {
        // SAFETY: conf_file is set while a file is being parsed.
        let file = unsafe { &*(*self.cf).conf_file };
        (file.file.name.to_string(), file.line)
    }

    /// `path` resolved against the prefix (`conf_prefix`: the configuration
    /// prefix), as nginx resolves `ssl_certificate` and `*_temp_path`.
    pub fn full_name(&self, mut path: ngx_str_t, conf_prefix: bool) -> Result<String, ConfError> {
        // SAFETY: cf->cycle is the cycle being configured; nginx allocates
        // the resolved name from its pool.
        let rc = unsafe {
            nginx_sys::ngx_conf_full_name((*self.cf).cycle, &mut path, conf_prefix.into())
        };
        if rc != 0 {
            return Err(ConfError::Logged);
        }
        Ok(path.to_string())
    }
}

/// Body of every directive setter: runs `parse` on the module's conf of type
/// `C` under the panic guard; an error becomes one `[emerg]` line.
///
/// # Safety
/// `cf` and `conf` must be what nginx passes to the `set` handler of a
/// command whose `conf` offset selects this module's conf of type `C`.
pub unsafe fn run_directive<C>(
    cf: *mut ngx_conf_t,
    conf: *mut c_void,
    parse: fn(&Directive<'_>, &mut C) -> Result<(), ConfError>,
) -> *mut c_char {
    // SAFETY: per the contract, cf is live while the directive is parsed.
    let log = || unsafe { (*cf).log };
    guard("a directive", log, NGX_CONF_ERROR, || {
        // SAFETY: while a directive is parsed, cf->args is an array of
        // ngx_str_t holding its name and values; the conf is a `C` of this
        // module, created by create_main_conf or create_loc_conf.
        let (args, conf) = unsafe { ((*(*cf).args).as_slice(), &mut *conf.cast::<C>()) };
        let directive = Directive { cf, args };
        match parse(&directive, conf) {
            Ok(()) => NGX_CONF_OK,
            Err(ConfError::Logged) => NGX_CONF_ERROR,
            Err(e) => {
                let name = args.first().copied().unwrap_or_default();
                ngx::ngx_conf_log_error!(NGX_LOG_EMERG, cf, "\"{}\" {}", name, e);
                NGX_CONF_ERROR
            }
        }
    })
}

/// Body of the merge and init callbacks: `check` under the panic guard; an
/// error becomes one `[emerg]` line on the configuration's log.
///
/// # Safety
/// `cf` must be the configuration nginx passes to the callback.
pub unsafe fn run_block(
    cf: *mut ngx_conf_t,
    check: impl FnOnce() -> Result<(), ConfError>,
) -> *mut c_char {
    // SAFETY: per the contract, cf is live during the callback.
    let log = unsafe { (*cf).log };
    guard(
        "the configuration",
        || log,
        NGX_CONF_ERROR,
        || match check() {
            Ok(()) => NGX_CONF_OK,
            Err(ConfError::Logged) => NGX_CONF_ERROR,
            Err(e) => {
                ngx::ngx_log_error!(NGX_LOG_EMERG, log, "{}", e);
                NGX_CONF_ERROR
            }
        },
    )
}
