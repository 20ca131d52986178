//! The daemon's shared state: configuration, codec, store, id allocator,
//! event hub, metrics and credential caches.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use shortlink_core::{Codec, DeploymentKey, Fingerprint};

use crate::api::auth::AuthCache;
use crate::config::Config;
use crate::events::EventHub;
use crate::ids::IdSegments;
use crate::metrics::Metrics;
use crate::store::{Store, StoreError};

/// Why the state could not be built.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// The deployment key could not be read.
    #[error("cannot load the key file: {0}")]
    Key(#[from] shortlink_core::KeyError),
    /// The database could not be opened.
    #[error("cannot open the database {path}: {source}")]
    Store {
        path: String,
        #[source]
        source: StoreError,
    },
    /// A directory could not be created.
    #[error("cannot create {path}: {source}")]
    Dir {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// Shared by every task; hand out `Arc<App>`.
pub struct App {
    pub config: Config,
    /// Encoder and decoder of generated codes.
    pub codec: Codec,
    /// Sent in the IPC handshake.
    pub fingerprint: Fingerprint,
    pub store: Store,
    pub ids: Arc<IdSegments>,
    /// Subscribed nginx workers.
    pub hub: EventHub,
    pub metrics: Metrics,
    /// Verified API keys and apps, and recently used signatures.
    pub auth: AuthCache,
    /// Aliases refused by name (built-in plus configured).
    pub reserved: Vec<String>,
    /// When the process started, for `/api/v1/health`.
    pub started: Instant,
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
    pub fn open(config: Config, segment_size: Option<u64>) -> Result<SharedApp, AppError> {
        let key = DeploymentKey::load(&config.key_path())?;
        Self::with_key(config, &key, segment_size)
    }

    /// Like [`App::open`] with a key already in hand.
    pub fn with_key(
        config: Config,
        key: &DeploymentKey,
        segment_size: Option<u64>,
    ) -> Result<SharedApp, AppError> {
        create_dir(&config.data_dir)?;
        let db = config.db_path();
        let store = Store::open(&db, config.readers, config.cache_size).map_err(|source| {
            AppError::Store {
                path: db.display().to_string(),
                source,
            }
        })?;
        let floor = Codec::first_id_of_length(config.min_length);
        let ids = IdSegments::new(
            store.clone(),
            floor,
            segment_size.unwrap_or(config.segment_size),
            config.segments_in_memory,
        );
        Ok(Arc::new(App {
            codec: Codec::new(key),
            fingerprint: key.fingerprint(),
            store,
            ids,
            hub: EventHub::default(),
            metrics: Metrics::default(),
            auth: AuthCache::default(),
            reserved: config.reserved(),
            started: Instant::now(),
            config,
        }))
    }
}

fn create_dir(path: &Path) -> Result<(), AppError> {
    std::fs::create_dir_all(path).map_err(|source| AppError::Dir {
        path: path.display().to_string(),
        source,
    })
}
