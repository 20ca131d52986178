//! How long the daemon waits on PostgreSQL. A server that stops answering
//! without closing its connections (a crashed host, a cut network, a
//! stopped process) must be met with a fast 503 like a stopped one, not
//! with requests that hang: every session carries server-side bounds
//! (`statement_timeout`, `lock_timeout`) and TCP keepalives, and taking a
//! connection from the pool is bounded as a whole (wait, check that the
//! connection still answers, connect).

use std::time::Duration;

use crate::config::Config;

/// How long a session may sit idle inside a transaction before the server
/// ends it: such a session holds back the change-log horizon of every node
/// (`changes`).
pub const IDLE_IN_TRANSACTION: Duration = Duration::from_secs(60);

/// Idle time before the first TCP keepalive probe.
const KEEPALIVE_IDLE: Duration = Duration::from_secs(30);

/// Time between probes.
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(10);

/// Probes unanswered before the connection is dropped.
const KEEPALIVE_RETRIES: u32 = 3;

/// How long sent data may stay unacknowledged (a host gone from the
/// network) before the kernel drops the connection.
const UNACKNOWLEDGED: Duration = Duration::from_secs(30);

/// The daemon's bounds on PostgreSQL (`database_timeout`,
/// `database_statement_timeout`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PgBounds {
    /// To connect to one server, to wait for a pooled connection or a
    /// lock, to check that a pooled connection answers.
    pub timeout: Duration,
    /// The server's `statement_timeout`.
    pub statement: Duration,
}

impl Default for PgBounds {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(5),
            statement: Duration::from_secs(30),
        }
    }
}

impl PgBounds {
    /// The configured bounds.
    pub fn from_config(config: &Config) -> Self {
        Self {
            timeout: Duration::from_secs(config.database_timeout),
            statement: Duration::from_secs(config.database_statement_timeout),
        }
    }

    /// The `options` startup parameter: the server-side bounds of every
    /// session, the change follower's included.
    pub fn session_options(&self) -> String {
        format!(
            "-c idle_in_transaction_session_timeout={} -c statement_timeout={} -c lock_timeout={}",
            IDLE_IN_TRANSACTION.as_millis(),
            self.statement.as_millis(),
            self.timeout.as_millis()
        )
    }

    /// Sets the session bounds, keepalives and the per-server connect
    /// timeout (`connect`, from the URL's `connect_timeout` if it has one).
    pub fn apply(&self, pc: &mut tokio_postgres::Config, connect: Duration) {
        pc.options(self.session_options())
            .connect_timeout(connect)
            .keepalives(true)
            .keepalives_idle(KEEPALIVE_IDLE)
            .keepalives_interval(KEEPALIVE_INTERVAL)
            .keepalives_retries(KEEPALIVE_RETRIES)
            .tcp_user_timeout(UNACKNOWLEDGED);
    }

    /// How long making one connection may take: each of the `servers` in
    /// turn may take `connect`, then the login.
    pub fn create(&self, servers: usize, connect: Duration) -> Duration {
        connect * servers.max(1) as u32 + self.timeout
    }

    /// How long a request on an open session may go unanswered before the
    /// session is given up ([`super::watched`]): past the statement
    /// timeout, a server that runs has answered (if only to cancel it).
    pub fn request(&self) -> Duration {
        self.statement + self.timeout
    }

    /// How long taking a connection from the pool may take in all: waiting
    /// for a free one or checking an idle one (`timeout` against a hung
    /// server), then making one.
    pub fn get(&self, create: Duration) -> Duration {
        self.timeout + create
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_carry_the_configured_bounds() {
        let bounds = PgBounds {
            timeout: Duration::from_secs(2),
            statement: Duration::from_secs(7),
        };
        let options = bounds.session_options();
        for set in [
            "statement_timeout=7000",
            "lock_timeout=2000",
            "idle_in_transaction_session_timeout=60000",
        ] {
            assert!(options.contains(set), "{options}");
        }
        let mut pc = tokio_postgres::Config::new();
        bounds.apply(&mut pc, Duration::from_secs(3));
        assert_eq!(pc.get_options(), Some(options.as_str()));
        assert_eq!(pc.get_connect_timeout(), Some(&Duration::from_secs(3)));
        assert!(pc.get_keepalives());
        assert_eq!(pc.get_keepalives_idle(), KEEPALIVE_IDLE);
        // Two servers to try, each up to 3 s, then the login.
        let create = bounds.create(2, Duration::from_secs(3));
        assert_eq!(create, Duration::from_secs(8));
        assert_eq!(bounds.get(create), Duration::from_secs(10));
    }
}
