//! `PgStore`: the PostgreSQL implementation of the store interface
//! (`crate::store`), one file per trait beside this one. Several daemons share
//! one database; what one writes reaches the others through the change log
//! (`super::changes`, `super::follow`).

mod bulk;
mod changes;
mod checks;
mod click_stats;
mod clicks;
mod create_groups;
mod credentials;
#[cfg(test)]
mod fold_tests;
mod ids;
mod import;
mod links;
mod list;
mod name_locks;
mod new_link;
mod plain;
mod recycle;
mod rows;
mod takedowns;
mod teams;
mod users;
mod visits;
mod webhooks;

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use async_trait::async_trait;
use shortlink_core::DeploymentKey;

pub use changes::SETTLE;

use super::identity::{self, StoreIdentity};
use super::{clicks as click_batches, connect, startup, Pg, PgError};
use crate::app_secret::SecretSeal;
use crate::config::Config;
use crate::store::{Database, LinkCache, Store, StoreError, StoreResult, StoreStats};

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
    /// Write counters (shared with the create groups' drains).
    stats: Arc<StoreStats>,
    /// Single plain creates waiting to be written together.
    creates: Arc<create_groups::CreateGroups>,
    /// Clicks counted since `fold_clicks` last asked (for the daemon's
    /// clicks metric).
    clicks_counted: AtomicU64,
    /// Batches this node appended to `click_log` since its last fold.
    clicks_logged: AtomicU64,
    /// Notified when a lot was logged (see `stats::fold_loop`).
    fold_wake: tokio::sync::Notify,
    /// The oldest running transaction (xid) a read after a write last
    /// waited on in vain: not waited on again (`changes::sequence_settled`).
    outlasted: AtomicU64,
    /// The change-log version when the store was opened: the live feed to
    /// the workers starts after it.
    opened_at: u64,
    /// This handle's number on the id leases it records (`postgres::ids`).
    holder: i64,
}

impl PgStore {
    /// Connects (password from its file), brings the schema up to date and
    /// checks the database was made under `key`.
    pub async fn open(config: &Config, key: &DeploymentKey) -> Result<Self, PgError> {
        Self::open_on(connect(config).await?, config, key).await
    }

    /// Like [`PgStore::open`], but a server that cannot be reached is
    /// waited for ([`startup::wait`]) until `stop` is cancelled.
    pub async fn open_waiting(
        config: &Config,
        key: &DeploymentKey,
        stop: &tokio_util::sync::CancellationToken,
    ) -> Result<Self, PgError> {
        let pg = super::pool(config)?;
        startup::wait(&pg, stop).await?;
        super::migrate::run(&pg).await?;
        Self::open_on(pg, config, key).await
    }

    /// Checks the database's identity on a migrated pool.
    async fn open_on(pg: Pg, config: &Config, key: &DeploymentKey) -> Result<Self, PgError> {
        let identity = identity::claim(&pg, key.fingerprint()).await?;
        let opened_at = changes::head_at_open(&mut pg.get().await?).await?;
        Ok(Self {
            clicks_counted: AtomicU64::new(0),
            clicks_logged: AtomicU64::new(0),
            fold_wake: tokio::sync::Notify::new(),
            outlasted: AtomicU64::new(0),
            opened_at,
            holder: lease_holder()?,
            pg,
            identity,
            seal: SecretSeal::new(key),
            cache: LinkCache::new(config.cache_size),
            stats: Arc::default(),
            creates: create_groups::CreateGroups::new(),
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

#[async_trait]
impl Database for PgStore {
    fn cache(&self) -> &LinkCache {
        PgStore::cache(self)
    }

    fn stats(&self) -> &StoreStats {
        PgStore::stats(self)
    }

    async fn prune(
        &self,
        batches_before: i64,
        signatures_before: i64,
    ) -> StoreResult<(usize, usize)> {
        let mut client = self.pg.get().await?;
        let tx = client
            .transaction()
            .await
            .map_err(PgError::query("starting a prune"))?;
        let batches = click_batches::prune_batches(&tx, batches_before).await?;
        let signatures = tx
            .execute(
                "DELETE FROM seen_signatures WHERE ts < $1",
                &[&signatures_before],
            )
            .await
            .map_err(PgError::query("pruning seen signatures"))?;
        tx.commit()
            .await
            .map_err(PgError::query("committing a prune"))?;
        Ok((batches as usize, signatures as usize))
    }

    /// Closes the pool: every write has answered by now (each commits
    /// before it returns); later calls fail with `StoreError::Closed`.
    fn close(&self) {
        self.pg.close();
    }
}

/// A random holder number: one per store handle, so each daemon process
/// (and each restart) records its id leases apart from the others'.
fn lease_holder() -> Result<i64, PgError> {
    let mut bytes = [0u8; 8];
    getrandom::getrandom(&mut bytes)
        .map_err(|e| PgError::Invalid(format!("no randomness for the id lease holder: {e}")))?;
    Ok(i64::from_le_bytes(bytes))
}

impl From<PgStore> for Store {
    fn from(store: PgStore) -> Self {
        Store::new(Arc::new(store))
    }
}

impl From<PgError> for StoreError {
    fn from(e: PgError) -> Self {
        match e {
            PgError::Connect {
                source: deadpool_postgres::PoolError::Closed,
                ..
            } => StoreError::Closed,
            e if e.is_unreachable() || e.ran_out_of_time() => {
                StoreError::Unavailable(e.to_string())
            }
            e => StoreError::Database(Box::new(e)),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::PgStore;

    /// A fresh PostgreSQL store on a private cluster named `name` (the
    /// cluster goes when the returned guard drops).
    pub async fn pg_store(name: &str) -> (testpg::PgCluster, PgStore) {
        let cluster = testpg::PgCluster::start(name);
        let url = cluster.create_db(name);
        let config = crate::config::Config {
            database: Some(crate::config::DatabaseUrl::parse(&url).unwrap()),
            database_password_file: Some(cluster.password_file()),
            ..crate::config::Config::default()
        };
        let key = shortlink_core::DeploymentKey::from_bytes([7; 32]);
        let pg = PgStore::open(&config, &key).await.unwrap();
        (cluster, pg)
    }
}
