//! `PgStore`: the PostgreSQL implementation of the store interface
//! (`crate::db`), one file per trait beside this one. Several daemons share
//! one database; what one writes reaches the others through the change log
//! (`super::changes`, `super::follow`).

mod click_stats;
mod clicks;
mod credentials;
mod ids;
mod import;
mod links;
mod list;
mod rows;
mod users;

use shortlink_core::DeploymentKey;

use super::identity::{self, StoreIdentity};
use super::{connect, Pg, PgError};
use crate::auth::app_secret::SecretSeal;
use crate::config::Config;
use crate::store::{LinkCache, StoreError, StoreStats};

/// One daemon's handle on the shared database.
pub struct PgStore {
    /// The connection pool.
    pg: Pg,
    /// The database's id and key fingerprint, checked at open.
    identity: StoreIdentity,
    /// Seals app secrets under the deployment key, as SQLite does.
    seal: SecretSeal,
    /// Hot links in front of the database.
    cache: LinkCache,
    /// Write counters.
    stats: StoreStats,
}

impl PgStore {
    /// Connects (password from its file), brings the schema up to date and
    /// checks the database was made under `key`.
    pub async fn open(config: &Config, key: &DeploymentKey) -> Result<Self, PgError> {
        let pg = connect(config).await?;
        let identity = identity::claim(&pg, key.fingerprint()).await?;
        Ok(Self {
            pg,
            identity,
            seal: SecretSeal::new(key),
            cache: LinkCache::new(config.cache_size),
            stats: StoreStats::default(),
        })
    }

    /// The database's identity.
    pub fn identity(&self) -> &StoreIdentity {
        &self.identity
    }

    /// The connection pool.
    pub fn pg(&self) -> &Pg {
        &self.pg
    }

    /// The seal of app secrets.
    pub fn seal(&self) -> &SecretSeal {
        &self.seal
    }

    /// The cache of hot links.
    pub fn cache(&self) -> &LinkCache {
        &self.cache
    }

    /// Write counters.
    pub fn stats(&self) -> &StoreStats {
        &self.stats
    }
}

impl From<PgError> for StoreError {
    fn from(e: PgError) -> Self {
        StoreError::Database(Box::new(e))
    }
}
