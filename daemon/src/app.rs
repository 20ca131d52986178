//! The daemon's shared state: configuration, codec, link rules, store, id
//! allocator, event hub, metrics and credential caches.

use std::sync::Arc;
use std::time::Instant;

use shortlink_core::handshake::LinkAuth;
use shortlink_core::spool::SpoolSeal;
use shortlink_core::{Codec, DeploymentKey, Fingerprint};
use tokio_util::sync::CancellationToken;

use crate::app_secret::SecretSeal;
use crate::auth::AuthCache;
use crate::config::Config;
use crate::edge::Edge;
use crate::events::EventHub;
use crate::ids::IdSegments;
use crate::links::{LinkRules, Links};
use crate::metrics::Metrics;
use crate::store::postgres::backend::PgStore;
use crate::store::postgres::{Pg, PgError};
use crate::store::sqlite::SqliteStore;
use crate::store::{Store, StoreError};

pub(crate) mod files;

/// Why the state could not be built.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// The deployment key could not be read.
    #[error("cannot load the key file {path}: {}", key_problem(.source))]
    Key {
        /// The key file.
        path: String,
        /// Why it could not be loaded.
        #[source]
        source: shortlink_core::KeyError,
    },
    /// The database could not be opened.
    #[error("cannot open the database {path}: {source}")]
    Store {
        /// The database file.
        path: String,
        /// Why it could not be opened.
        #[source]
        source: StoreError,
    },
    /// A directory or file could not be created, or its mode not set.
    #[error("cannot create or restrict {path}: {source}")]
    Dir {
        /// The directory.
        path: String,
        /// Why it could not be created.
        #[source]
        source: std::io::Error,
    },
    /// The PostgreSQL database could not be opened (unreachable, refused
    /// login, schema too new, another deployment key).
    #[error("cannot open the database {url}: {source}")]
    Postgres {
        /// The database, without its password.
        url: String,
        /// Why it could not be opened.
        #[source]
        source: PgError,
    },
}

/// What is wrong with the key file, without its path again.
fn key_problem(e: &shortlink_core::KeyError) -> String {
    match e {
        shortlink_core::KeyError::Io { source, .. } => source.to_string(),
        other => other.to_string(),
    }
}

/// The deployment key the configuration names.
fn load_key(config: &Config) -> Result<DeploymentKey, AppError> {
    let path = config.key_path();
    DeploymentKey::load(&path).map_err(|source| AppError::Key {
        path: path.display().to_string(),
        source,
    })
}

/// Opens the store the configuration names: the PostgreSQL database of
/// `database` (shared with the other nodes; its pool is returned for the
/// change-log follower), else the SQLite database under the data directory
/// (its files created with their modes first).
/// A PostgreSQL server that cannot be reached is waited for when `wait`
/// is given, until it is cancelled (`store::postgres::startup`).
async fn open_store(
    config: &Config,
    key: &DeploymentKey,
    wait: Option<&CancellationToken>,
) -> Result<(Store, Option<Pg>), AppError> {
    files::data_dir(config)?;
    if let Some(url) = &config.database {
        let opened = match wait {
            Some(stop) => PgStore::open_waiting(config, key, stop).await,
            None => PgStore::open(config, key).await,
        };
        let pg = opened.map_err(|source| AppError::Postgres {
            url: url.to_string(),
            source,
        })?;
        let pool = pg.pg().clone();
        return Ok((Store::from(pg), Some(pool)));
    }
    let db = config.db_path();
    files::database_files(&db)?;
    let seal = SecretSeal::new(key);
    let sqlite = SqliteStore::open_sealed(&db, config.readers, config.cache_size, Some(seal))
        .map_err(|source| AppError::Store {
            path: db.display().to_string(),
            source,
        })?;
    Ok((Store::new(Arc::new(sqlite)), None))
}

/// Shared by every task; hand out `Arc<App>`.
pub struct App {
    /// The settings the daemon was started with.
    pub config: Config,
    /// Encoder and decoder of generated codes.
    pub codec: Codec,
    /// Sent in the IPC handshake.
    pub fingerprint: Fingerprint,
    /// Proves the daemon holds the key to the workers, and checks that they do.
    pub link_auth: LinkAuth,
    /// Checks that spool files were written by a holder of the key.
    pub spool_seal: SpoolSeal,
    /// Links, keys, users and clicks.
    pub store: Store,
    /// Ids for new links, leased from the store in segments.
    pub ids: Arc<IdSegments>,
    /// Subscribed nginx workers.
    pub hub: EventHub,
    /// Counters for `/metrics`.
    pub metrics: Metrics,
    /// Verified API keys and apps, and recently used signatures.
    pub auth: AuthCache,
    /// What link requests are judged by (from the config and the key).
    pub rules: LinkRules,
    /// When the process started, for `/api/v1/health`.
    pub started: Instant,
    /// The shared PostgreSQL database when the store is PostgreSQL: the
    /// server follows its change log (`change_feed`). `None` on SQLite.
    pub shared: Option<Pg>,
    /// Checks of protected links' passwords: bounded and throttled.
    pub link_passwords: crate::links::gate::PasswordGate,
    /// Seals webhook secrets for the store and opens them to sign.
    pub secret_seal: SecretSeal,
}

impl std::fmt::Debug for App {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("App")
            .field("fingerprint", &self.fingerprint)
            .finish()
    }
}

/// The handle every task holds.
pub type SharedApp = Arc<App>;

impl App {
    /// Loads the key, opens the database and builds the allocator.
    /// `segment_size` overrides the configured lease size (the CLI leases
    /// small ones).
    pub async fn open(config: Config, segment_size: Option<u64>) -> Result<SharedApp, AppError> {
        let key = load_key(&config)?;
        Self::with_key(config, &key, segment_size).await
    }

    /// Like [`App::open`] for `serve`: a PostgreSQL server that cannot be
    /// reached is waited for until `stop` is cancelled.
    pub async fn open_waiting(
        config: Config,
        stop: &CancellationToken,
    ) -> Result<SharedApp, AppError> {
        let key = load_key(&config)?;
        let (store, shared) = open_store(&config, &key, Some(stop)).await?;
        Ok(Self::build(config, &key, store, shared, None))
    }

    /// Like [`App::open`] with a key already in hand.
    pub async fn with_key(
        config: Config,
        key: &DeploymentKey,
        segment_size: Option<u64>,
    ) -> Result<SharedApp, AppError> {
        let (store, shared) = open_store(&config, key, None).await?;
        Ok(Self::build(config, key, store, shared, segment_size))
    }

    /// Like [`App::with_key`] over a store already open (any
    /// implementation of the store interface).
    pub fn with_store(
        config: Config,
        key: &DeploymentKey,
        store: Store,
        segment_size: Option<u64>,
    ) -> SharedApp {
        Self::build(config, key, store, None, segment_size)
    }

    fn build(
        config: Config,
        key: &DeploymentKey,
        store: Store,
        shared: Option<Pg>,
        segment_size: Option<u64>,
    ) -> SharedApp {
        let floor = Codec::first_id_of_length(config.min_length);
        // Ids of codes no longer than max_length (the table ends past the
        // longest code there is).
        let ceiling = match config.max_length {
            n if n >= shortlink_core::MAX_CODE_LEN => u64::MAX,
            n => Codec::first_id_of_length(n + 1),
        };
        let size = segment_size.unwrap_or(config.segment_size);
        let hold = config
            .recycling
            .enabled
            .then(|| config.recycling.hold_limit());
        let ids = IdSegments::within(
            store.clone(),
            floor..ceiling,
            size,
            config.segments_in_memory,
            hold,
        );
        let codec = Codec::new(key);
        Arc::new(App {
            rules: LinkRules::new(&config, codec.clone()),
            codec,
            fingerprint: key.fingerprint(),
            link_auth: LinkAuth::new(key),
            spool_seal: SpoolSeal::new(key),
            store,
            ids,
            hub: EventHub::default(),
            metrics: Metrics::default(),
            auth: AuthCache::default(),
            started: Instant::now(),
            link_passwords: crate::links::gate::PasswordGate::default(),
            secret_seal: SecretSeal::new(key),
            shared,
            config,
        })
    }

    /// The one path by which the nginx workers learn that links changed.
    pub fn edge(&self) -> Edge<'_> {
        Edge::new(&self.codec, &self.store, &self.hub)
    }

    /// The link operations (create, edit, import, edge lookups) over this
    /// state.
    pub fn links(&self) -> Links<'_> {
        Links {
            rules: &self.rules,
            store: &self.store,
            ids: &self.ids,
            edge: self.edge(),
            metrics: &self.metrics,
            team: crate::links::team::TeamScope::ALL,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::links::CreateLink;

    /// A store plugged in at start-up is the one every operation uses.
    #[tokio::test]
    async fn the_app_works_on_the_store_it_is_given() {
        let (_dir, sqlite) = crate::store::sqlite::tests::temp_store();
        let key = DeploymentKey::from_bytes([3; 32]);
        let app = App::with_store(
            Config::default(),
            &key,
            Store::from(sqlite.clone()),
            Some(10),
        );
        let req = CreateLink {
            url: "https://e.com/x".into(),
            ..CreateLink::default()
        };
        app.links().create(&req, None).await.unwrap();
        let stored = sqlite
            .read(crate::store::sqlite::links::count)
            .await
            .unwrap();
        assert_eq!(stored, 1);
        app.store.close();
    }

    /// `database = postgres://…` opens PostgreSQL, never quietly SQLite:
    /// an unreachable server is an error naming the database, and no
    /// SQLite file is made.
    #[tokio::test]
    async fn a_postgres_database_is_opened_not_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let config = Config {
            data_dir: dir.path().to_path_buf(),
            database: Some(
                crate::config::DatabaseUrl::parse(
                    "postgres://shortlink@127.0.0.1:1/links?connect_timeout=1",
                )
                .unwrap(),
            ),
            ..Config::default()
        };
        let Err(err) = open_store(&config, &DeploymentKey::from_bytes([3; 32]), None).await else {
            panic!("nothing listens on port 1");
        };
        assert!(
            err.to_string()
                .contains("cannot open the database postgres://shortlink@127.0.0.1:1/links"),
            "{err}"
        );
        assert!(!config.db_path().exists(), "no SQLite file made");
    }
}
