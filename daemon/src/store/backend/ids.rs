//! [`IdStore`] over SQLite: each lease is one job grouped with the other
//! writes. One daemon owns the file, and an import on it first drops the
//! kept ids from its own memory (`IdSegments::reserve_through`), so no
//! live lease is recorded here.

use std::ops::Range;

use async_trait::async_trait;

use crate::db::IdStore;
use crate::store::{ids, SqliteStore, StoreResult};

#[async_trait]
impl IdStore for SqliteStore {
    async fn lease_ids(
        &self,
        floor: u64,
        size: u64,
        _used_up: Vec<u64>,
    ) -> StoreResult<Range<u64>> {
        self.write(move |c| ids::lease(c, floor, size)).await
    }

    async fn reserve_ids_through(&self, last: u64) -> StoreResult<()> {
        self.write(move |c| ids::advance_past(c, last)).await
    }
}
