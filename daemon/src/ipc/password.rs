//! Password checks of protected links, asked by the edge when a visitor
//! posts the form. The check is argon2 work, so it runs in a pool of its
//! own ([`GATE_WORKERS`] at once on the blocking pool, [`GATE_QUEUE`] more
//! waiting, the rest answered `Busy` at once): visitors can neither take
//! the daemon's memory nor the admin sign-ins' workers. Wrong passwords
//! are counted per (link, client address), per address and per link, as
//! sign-ins are ([`LoginThrottle`]); past the free ones the check is not
//! run and the edge is told how long to wait.

use std::net::IpAddr;
use std::time::Instant;

use shortlink_core::ipc::{LookupResult, PasswordResult, Reply};

use crate::app::App;
use crate::links::{edge_result, LinkError};
use crate::store::unix_now;
use crate::users::argon2_pool::{Argon2Pool, PoolError};
use crate::users::{ClientAddr, LoginThrottle};

/// Password checks running at once.
pub const GATE_WORKERS: usize = 2;
/// Password checks that may wait for a worker before more are refused.
pub const GATE_QUEUE: usize = 16;

/// The pool and the failure counts of link password checks.
pub struct PasswordGate {
    pool: Argon2Pool,
    throttle: LoginThrottle,
}

impl Default for PasswordGate {
    fn default() -> Self {
        Self {
            pool: Argon2Pool::new(GATE_WORKERS, GATE_QUEUE),
            throttle: LoginThrottle::default(),
        }
    }
}

impl std::fmt::Debug for PasswordGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PasswordGate")
    }
}

/// The client address as the throttle keys it (an IPv6 /64 as one); the
/// unparseable (a Unix-socket client) share one unknown address, which is
/// not counted on its own.
fn client_addr(text: &str) -> ClientAddr {
    match text.parse::<IpAddr>() {
        Ok(ip) => ClientAddr::of_ip(ip),
        Err(_) => ClientAddr::Unknown,
    }
}

/// Checks `password` for the link behind `code`; the reply to request `id`.
pub(super) async fn check(
    app: &App,
    id: u32,
    code: String,
    password: String,
    client: String,
) -> Reply {
    let result = match check_link(app, &code, password, &client).await {
        Ok(r) => r,
        Err(e) => {
            app.metrics.errors.inc();
            tracing::error!(code = %code, error = %e, "cannot check a link password");
            return Reply::Error {
                id,
                message: format!("while checking the password of code \"{code}\": {e}"),
            };
        }
    };
    Reply::Password { id, result }
}

async fn check_link(
    app: &App,
    code: &str,
    password: String,
    client: &str,
) -> Result<PasswordResult, LinkError> {
    if password.len() > shortlink_core::ipc::MAX_PASSWORD {
        return Ok(PasswordResult::Wrong);
    }
    let link = match app.links().get(code).await {
        Ok(link) => link,
        Err(LinkError::NotFound(_)) => return Ok(PasswordResult::NotFound),
        Err(e) => return Err(e),
    };
    let edge = match edge_result(&link, unix_now()) {
        LookupResult::Found(l) => l,
        LookupResult::Gone => return Ok(PasswordResult::Gone),
        LookupResult::NotFound => return Ok(PasswordResult::NotFound),
    };
    let Some(hash) = link.password_hash.clone() else {
        // The password was removed since the form was shown.
        return Ok(PasswordResult::Granted(edge));
    };
    let gate = &app.link_passwords;
    let subject = format!("link:{}", link.id);
    let attempt = match gate
        .throttle
        .attempt(&subject, &client_addr(client), Instant::now())
    {
        Ok(a) => a,
        Err(wait) => {
            return Ok(PasswordResult::Throttled {
                retry_after: wait.as_secs().max(1).min(u64::from(u32::MAX)) as u32,
            })
        }
    };
    let checked = gate
        .pool
        .try_run(move |memory| crate::users::verify_with(&password, &hash, memory))
        .await;
    match checked {
        Ok(Ok(true)) => {
            gate.throttle.succeeded(attempt);
            Ok(PasswordResult::Granted(edge))
        }
        // Dropped, the attempt stays a failure.
        Ok(Ok(false)) => Ok(PasswordResult::Wrong),
        Ok(Err(e)) => {
            gate.throttle.withdraw(attempt);
            Err(LinkError::Hashing(e.to_string()))
        }
        Err(PoolError::Busy) => {
            gate.throttle.withdraw(attempt);
            Ok(PasswordResult::Busy)
        }
        Err(e) => {
            gate.throttle.withdraw(attempt);
            Err(LinkError::Hashing(e.to_string()))
        }
    }
}
