//! The SQLite implementation of the store interface (`crate::store`): each
//! method sends one job to the writer or a reader thread, built from the
//! SQL helpers of the files beside it.

mod changes;
mod checks;
mod clicks;
mod credentials;
mod ids;
mod import;
mod link_writer;
mod links;
mod recycle;
mod takedowns;
mod visits;
mod webhooks;

use async_trait::async_trait;

use crate::store::sqlite::{clicks as click_log, keys, SqliteStore};
use crate::store::{Database, LinkCache, StoreResult, StoreStats};

#[async_trait]
impl Database for SqliteStore {
    fn cache(&self) -> &LinkCache {
        SqliteStore::cache(self)
    }

    fn stats(&self) -> &StoreStats {
        SqliteStore::stats(self)
    }

    async fn prune(
        &self,
        batches_before: i64,
        signatures_before: i64,
    ) -> StoreResult<(usize, usize)> {
        self.write(move |c| {
            let b = click_log::prune_batches(c, batches_before)?;
            let s = keys::prune_signatures(c, signatures_before)?;
            Ok((b, s))
        })
        .await
    }

    fn close(&self) {
        SqliteStore::close(self)
    }
}

impl From<SqliteStore> for crate::store::Store {
    fn from(store: SqliteStore) -> Self {
        Self::new(std::sync::Arc::new(store))
    }
}
