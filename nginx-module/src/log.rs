//! Logging in nginx's own voice: `error!(log, "...")` and friends over
//! `ngx_log_error!`, so lines land in the error log with nginx's prefix.

/// `[error]` line on the given `*mut ngx_log_t`.
macro_rules! error {
    ($log:expr, $($arg:tt)+) => {{
        ngx::ngx_log_error!(nginx_sys::NGX_LOG_ERR, $log, $($arg)+);
    }};
}

/// `[warn]` line on the given `*mut ngx_log_t`.
macro_rules! warning {
    ($log:expr, $($arg:tt)+) => {{
        ngx::ngx_log_error!(nginx_sys::NGX_LOG_WARN, $log, $($arg)+);
    }};
}

/// `[info]` line on the given `*mut ngx_log_t`.
macro_rules! info {
    ($log:expr, $($arg:tt)+) => {{
        ngx::ngx_log_error!(nginx_sys::NGX_LOG_INFO, $log, $($arg)+);
    }};
}

/// `[debug]` line, only in nginx builds `--with-debug` and when enabled.
macro_rules! debug {
    ($log:expr, $($arg:tt)+) => {{
        if ngx::log::DEBUG {
            ngx::ngx_log_error!(nginx_sys::NGX_LOG_DEBUG, $log, $($arg)+);
        }
    }};
}

pub(crate) use {debug, error, info, warning};
