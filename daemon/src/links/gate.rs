//! The check of a protected link's password: argon2 work in a pool of its
//! own ([`GATE_WORKERS`] at once on the blocking pool, [`GATE_QUEUE`] more
//! waiting, the rest answered busy at once), so visitors can take neither
//! the daemon's memory nor the admin sign-ins' workers. Wrong passwords
//! are counted per (link, client address), per address and per link, as
//! sign-ins are ([`LoginThrottle`]); past the free ones the check is not
//! run and the caller is told how long to wait.

use std::net::IpAddr;
use std::time::Instant;

use crate::store::LinkError;
use crate::users::argon2_pool::{Argon2Pool, PoolError};
use crate::users::client::ClientAddr;
use crate::users::lockout::LoginThrottle;
use crate::users::password::verify_with;

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

/// What a check found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Right,
    Wrong,
    /// Too many wrong ones: try again after this many seconds.
    Throttled(u32),
    /// Every worker and queue place is taken.
    Busy,
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

impl PasswordGate {
    /// Checks `password` against link `link_id`'s argon2 `hash` for a
    /// visitor at `client`.
    pub async fn check(
        &self,
        link_id: u64,
        hash: String,
        password: String,
        client: &str,
    ) -> Result<Verdict, LinkError> {
        let subject = format!("link:{link_id}");
        let attempt = match self
            .throttle
            .attempt(&subject, &client_addr(client), Instant::now())
        {
            Ok(a) => a,
            Err(wait) => {
                let secs = wait.as_secs().clamp(1, u64::from(u32::MAX)) as u32;
                return Ok(Verdict::Throttled(secs));
            }
        };
        let checked = self
            .pool
            .try_run(move |memory| verify_with(&password, &hash, memory))
            .await;
        match checked {
            Ok(Ok(true)) => {
                self.throttle.succeeded(attempt);
                Ok(Verdict::Right)
            }
            // Dropped, the attempt stays a failure.
            Ok(Ok(false)) => Ok(Verdict::Wrong),
            Ok(Err(e)) => {
                self.throttle.withdraw(attempt);
                Err(LinkError::Hashing(e.to_string()))
            }
            Err(PoolError::Busy) => {
                self.throttle.withdraw(attempt);
                Ok(Verdict::Busy)
            }
            Err(e) => {
                self.throttle.withdraw(attempt);
                Err(LinkError::Hashing(e.to_string()))
            }
        }
    }
}
