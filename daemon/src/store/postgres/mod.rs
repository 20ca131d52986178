//! The PostgreSQL building blocks of the multi-node mode (`--database
//! postgres://…`): the connection pool ([`connect`], [`Pg`]), versioned
//! migrations safe to run from several daemons at once ([`migrate`]), the
//! store's identity and deployment-key check ([`identity`]), id leasing
//! ([`ids`]), the cross-node change log and its follower ([`changes`],
//! [`follow`], applied to this node's edge by `crate::change_feed`), idempotent click
//! batches ([`clicks`]) and the store built on them ([`backend::PgStore`]),
//! opened by `app::open_store` when `database` is set.

pub mod backend;
pub mod bounds;
pub mod changes;
pub mod click_log;
pub mod clicks;
pub mod connect;
mod exchange;
pub mod follow;
pub mod identity;
pub mod ids;
pub mod migrate;
pub mod reach;
pub mod recycle;
pub mod startup;
pub mod tls;
pub mod watched;

use std::path::{Path, PathBuf};
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use tokio_postgres::config::TargetSessionAttrs;

use crate::config::{Config, DatabaseHost, DatabaseUrl};

/// Connections kept open by one daemon.
pub const POOL_SIZE: usize = 16;

pub use bounds::{PgBounds, IDLE_IN_TRANSACTION};

/// Why a PostgreSQL operation failed; every variant says what was being
/// done, and none carries the password.
#[derive(Debug, thiserror::Error)]
pub enum PgError {
    /// `postgres::connect` was called without a `database` setting.
    #[error("no database URL is configured (--database postgres://USER@HOST:PORT/DB)")]
    NotConfigured,
    /// The password file could not be read.
    #[error("cannot read the database password file {path}: {source}")]
    PasswordFile {
        /// The file.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// The password file can be read by users other than its owner and group.
    #[error(
        "the database password file {path} is readable by other users (mode {mode:o}): \
         chmod o-rwx it (0600, or 0640 with the daemon's group)"
    )]
    PasswordFileOpen {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// A connection could not be taken from the pool (server down, refused
    /// login, timeout).
    #[error("PostgreSQL at {url}: {}", describe_pool(source))]
    Connect {
        /// The database, without its password.
        url: String,
        /// What the pool or the server said.
        #[source]
        source: deadpool_postgres::PoolError,
    },
    /// A statement failed.
    #[error("PostgreSQL, while {doing}: {}", describe(source))]
    Query {
        /// What was being done.
        doing: &'static str,
        /// The server's or driver's error.
        #[source]
        source: tokio_postgres::Error,
    },
    /// The database holds a schema newer than this daemon knows.
    #[error("the database's schema is at version {found}, newer than this daemon's {known}: upgrade shortlinkd")]
    SchemaTooNew {
        /// Version recorded in the database.
        found: i32,
        /// The newest version this build has.
        known: i32,
    },
    /// The database was created under another deployment key.
    #[error(
        "the database was created under deployment key {database}, but this daemon's key \
         file has key {key}: point every node at the same key file"
    )]
    KeyMismatch {
        /// Fingerprint recorded in the database.
        database: String,
        /// Fingerprint of the key this daemon read.
        key: String,
    },
    /// No connection could be had within the bound ([`bounds`]): the
    /// server hangs (a stopped process, a cut network), or every
    /// connection is held by operations it does not answer.
    #[error("PostgreSQL at {url} did not answer within {after:?}")]
    Unanswered {
        /// The database, without its password.
        url: String,
        /// How long was waited.
        after: Duration,
    },
    /// The daemon was told to stop while it waited for the server
    /// ([`startup`]).
    #[error("stopped while waiting for PostgreSQL at {0}")]
    StoppedWaiting(String),
    /// A session to the server ended (server restart, network).
    #[error("PostgreSQL: {0} ended")]
    SessionEnded(&'static str),
    /// A lease or value outside what the database can hold.
    #[error("{0}")]
    Invalid(String),
}

/// Whether a driver error means the server went away or cannot be
/// reached (not a refused login or a failed statement).
fn gone(e: &tokio_postgres::Error) -> bool {
    match e.as_db_error() {
        // 08: connection exception; 57P0x: the server is shutting down or
        // starting.
        Some(db) => {
            let code = db.code().code();
            code.starts_with("08") || code.starts_with("57P0")
        }
        None => true,
    }
}

/// The server's own words for a failed statement (the driver's `Display`
/// says only "db error").
fn describe(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        // The driver's own words, then each cause's ("error performing TLS
        // handshake: invalid peer certificate: UnknownIssuer").
        None => {
            let mut text = e.to_string();
            let mut cause = std::error::Error::source(e);
            while let Some(c) = cause {
                text.push_str(": ");
                text.push_str(&c.to_string());
                cause = c.source();
            }
            text
        }
    }
}

/// The pool's error with the server's words in it.
fn describe_pool(e: &deadpool_postgres::PoolError) -> String {
    match e {
        deadpool_postgres::PoolError::Backend(e) => describe(e),
        other => other.to_string(),
    }
}

impl PgError {
    /// Whether the server could not be reached or went away (down,
    /// restarting, connection lost): the same request may succeed later.
    pub fn is_unreachable(&self) -> bool {
        match self {
            PgError::SessionEnded(_) | PgError::Unanswered { .. } => true,
            PgError::Connect { source, .. } => match source {
                deadpool_postgres::PoolError::Backend(e) => gone(e),
                deadpool_postgres::PoolError::Timeout(t) => {
                    // Every connection busy is load, not an outage.
                    !matches!(t, deadpool_postgres::TimeoutType::Wait)
                }
                _ => false,
            },
            PgError::Query { source, .. } => gone(source),
            _ => false,
        }
    }

    /// True when the server cut a statement for the daemon's own bounds
    /// (`statement_timeout`: 57014, `lock_timeout`: 55P03): the server
    /// runs but is too busy or too locked now, and the same request may
    /// succeed later (a 503, not a 500).
    pub fn ran_out_of_time(&self) -> bool {
        match self {
            PgError::Query { source, .. } => source
                .as_db_error()
                .is_some_and(|db| matches!(db.code().code(), "57014" | "55P03")),
            _ => false,
        }
    }

    /// Wraps a driver error with what was being done.
    pub fn query(doing: &'static str) -> impl FnOnce(tokio_postgres::Error) -> PgError {
        move |source| PgError::Query { doing, source }
    }
}

/// The daemon's handle on one PostgreSQL database: a pool of connections,
/// each with its prepared-statement cache. Cheap to clone.
#[derive(Clone)]
pub struct Pg {
    pool: Pool,
    /// How long taking a connection may take in all ([`bounds`]).
    get_bound: Duration,
    /// How long making one connection may take (every listed server
    /// tried); also the bound of taking one during a known outage, so a
    /// hung server is not waited for in full by every request.
    create_bound: Duration,
    /// The URL without its password, for messages.
    shown: String,
    /// How to open a connection outside the pool (the change follower's
    /// `LISTEN` session).
    config: tokio_postgres::Config,
    /// Opens sessions: TLS as the URL's `sslmode` asks ([`tls`]), each
    /// server bounded, requests [watched](watched).
    connector: connect::Connector,
    /// Whether the server answers; an outage is logged once ([`reach`]).
    reach: std::sync::Arc<reach::Reach>,
    /// Whether writers `NOTIFY` and followers `LISTEN` (`database_notify`).
    notify: bool,
}

impl std::fmt::Debug for Pg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Pg({})", self.shown)
    }
}

impl Pg {
    /// A pooled connection, within [`bounds`]: an unanswering server is
    /// an error after a bounded wait, never a hang.
    pub async fn get(&self) -> Result<deadpool_postgres::Client, PgError> {
        let started = std::time::Instant::now();
        match self.take().await {
            Ok(client) => {
                // A connection made since the outage was noticed proves
                // the server answers; one handed out again (checked only
                // for being open) proves nothing newer.
                let made = deadpool_postgres::Object::metrics(&client).created;
                self.reach.answered(&self.shown, made);
                Ok(client)
            }
            Err(e) => {
                if e.is_unreachable() {
                    self.reach.failed(&self.shown, &e, started);
                    // The idle connections are to the server that failed:
                    // checking each would cost the next requests a bound
                    // apiece (a hung server), so drop them all; new ones
                    // go to whichever listed server takes writes now.
                    self.pool.retain(|_, _| false);
                }
                Err(e)
            }
        }
    }

    /// A pooled connection within the bound, outside the outage state
    /// (the wait at start says it waits its own way).
    async fn take(&self) -> Result<deadpool_postgres::Client, PgError> {
        let started = std::time::Instant::now();
        let bound = if self.reach.is_down() {
            self.create_bound
        } else {
            self.get_bound
        };
        let got = tokio::time::timeout(bound, self.pool.get()).await;
        Err(match got {
            Ok(Ok(client)) => return Ok(client),
            Err(_) => PgError::Unanswered {
                url: self.shown.clone(),
                after: bound,
            },
            // Every connection busy is load, unless the server is known
            // not to answer: then they are held by operations it hangs.
            Ok(Err(deadpool_postgres::PoolError::Timeout(
                deadpool_postgres::TimeoutType::Wait,
            ))) if self.reach.is_down() => PgError::Unanswered {
                url: self.shown.clone(),
                after: started.elapsed(),
            },
            Ok(Err(source)) => PgError::Connect {
                url: self.shown.clone(),
                source,
            },
        })
    }

    /// Whether changes wake the followers by `NOTIFY` (else they poll).
    pub fn notifies(&self) -> bool {
        self.notify
    }

    /// Wakes every follower after a commit that logged a change, on the
    /// writer's session but outside its transaction; nothing when
    /// notifications are off. The write stands if the wake fails
    /// (followers also poll): the failure is logged, not returned.
    pub async fn wake(&self, client: &impl deadpool_postgres::GenericClient) {
        if !self.notify {
            return;
        }
        if let Err(e) = changes::notify(client).await {
            tracing::warn!(error = %e, "a change is committed but followers were not woken; they catch up by polling");
        }
    }

    /// Whether the server answers, as every user of this pool saw it.
    pub fn reach(&self) -> &reach::Reach {
        &self.reach
    }

    /// The database, without its password.
    pub fn url(&self) -> &str {
        &self.shown
    }

    /// Closes the pool: connections are dropped as they come back, and
    /// every later [`Pg::get`] fails.
    pub fn close(&self) {
        self.pool.close();
    }

    /// The connection settings (for a session of its own, outside the pool).
    pub fn client_config(&self) -> &tokio_postgres::Config {
        &self.config
    }

    /// How long making one connection may take (every listed server
    /// tried): the bound of a session of its own, too.
    pub fn create_bound(&self) -> Duration {
        self.create_bound
    }

    /// Opens a session of its own (outside the pool) to the first listed
    /// server that fits `target_session_attrs`.
    pub async fn session(&self) -> Result<connect::Session, PgError> {
        self.connector
            .session(&self.config)
            .await
            .map_err(|e| self.connect_error(e))
    }

    /// Like [`Pg::session`], but a request may run as long as it takes (a
    /// migration rewriting a big table); the session's connection is
    /// driven by a task of its own.
    pub async fn unwatched_session(&self) -> Result<tokio_postgres::Client, PgError> {
        let (client, connection) = self
            .connector
            .unwatched()
            .session(&self.config)
            .await
            .map_err(|e| self.connect_error(e))?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(client)
    }

    fn connect_error(&self, e: tokio_postgres::Error) -> PgError {
        PgError::Connect {
            url: self.shown.clone(),
            source: deadpool_postgres::PoolError::Backend(e),
        }
    }
}

/// Builds the pool for `config.database`, reading the password from
/// `database_password_file`, and brings the schema up to date
/// ([`migrate::run`]).
pub async fn connect(config: &Config) -> Result<Pg, PgError> {
    let pg = pool(config)?;
    migrate::run(&pg).await?;
    Ok(pg)
}

/// Builds the pool for `config.database` (no connection is made yet).
pub fn pool(config: &Config) -> Result<Pg, PgError> {
    let url = config.database.as_ref().ok_or(PgError::NotConfigured)?;
    let password = match &config.database_password_file {
        Some(path) => Some(read_password(path)?),
        None => url.password.clone(),
    };
    let mut pg = open_bounded(
        url,
        password.as_deref(),
        POOL_SIZE,
        PgBounds::from_config(config),
    )?;
    pg.notify = config.database_notify;
    Ok(pg)
}

/// The pool alone (no connection is made until the first `get`), with the
/// default bounds.
pub fn open(url: &DatabaseUrl, password: Option<&str>, size: usize) -> Result<Pg, PgError> {
    open_bounded(url, password, size, PgBounds::default())
}

/// The pool alone, with `bounds` on every wait.
pub fn open_bounded(
    url: &DatabaseUrl,
    password: Option<&str>,
    size: usize,
    bounds: PgBounds,
) -> Result<Pg, PgError> {
    let mut pc = tokio_postgres::Config::new();
    pc.user(&url.user).dbname(&url.dbname);
    // libpq's host list: tried in order, each with its own port.
    for server in &url.servers {
        match &server.host {
            DatabaseHost::Tcp(host) => pc.host(host),
            DatabaseHost::Socket(dir) => pc.host_path(dir),
        };
        pc.port(server.port);
    }
    if let Some(attrs) = url.param("target_session_attrs") {
        pc.target_session_attrs(
            crate::config::session_attrs(&attrs).unwrap_or(TargetSessionAttrs::Any),
        );
    }
    if let Some(password) = password {
        pc.password(password);
    }
    pc.application_name(
        url.param("application_name")
            .as_deref()
            .unwrap_or("shortlinkd"),
    );
    let connect = url
        .param("connect_timeout")
        .and_then(|s| s.parse().ok())
        .map_or(bounds.timeout, Duration::from_secs);
    bounds.apply(&mut pc, connect);
    pc.ssl_mode(url.ssl_mode().wire());
    let tls = tls::connector(url.ssl_mode(), url.param("sslrootcert").as_deref())?;
    let create = bounds.create(url.servers.len(), connect);
    let connector = connect::Connector::new(tls, bounds.request());
    let manager = Manager::from_connect(
        pc.clone(),
        connector.clone(),
        ManagerConfig {
            // A query per hand-out: a connection to a server that stopped
            // answering fails its check within the bound instead of
            // hanging the request that would use it.
            recycling_method: RecyclingMethod::Verified,
        },
    );
    let pool = Pool::builder(manager)
        .max_size(size)
        .runtime(deadpool_postgres::Runtime::Tokio1)
        .wait_timeout(Some(bounds.timeout))
        .recycle_timeout(Some(bounds.timeout))
        .create_timeout(Some(create))
        .build()
        .map_err(|e| PgError::Invalid(format!("cannot build the connection pool: {e}")))?;
    Ok(Pg {
        pool,
        get_bound: bounds.get(create),
        create_bound: create,
        shown: url.to_string(),
        config: pc,
        connector,
        reach: Default::default(),
        notify: true,
    })
}

/// The first line of the password file, without its line ending; a file
/// other users can read is refused (a secret there is no secret).
fn read_password(path: &Path) -> Result<String, PgError> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path)
        .map_err(|source| PgError::PasswordFile {
            path: path.to_path_buf(),
            source,
        })?
        .permissions()
        .mode()
        & 0o777;
    if crate::config::open_to_others(mode) {
        return Err(PgError::PasswordFileOpen {
            path: path.to_path_buf(),
            mode,
        });
    }
    let text = std::fs::read_to_string(path).map_err(|source| PgError::PasswordFile {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(text.lines().next().unwrap_or("").to_string())
}
