//! [`IdStore`] over SQLite. One daemon owns the file, and an import on it
//! first drops the kept ids from its own memory
//! (`IdSegments::reserve_through`), so no live lease is recorded here.
//!
//! Each lease is a transaction of its own on the bulk connection
//! ([`SqliteStore::write_bulk`]), not a job grouped with the other writes:
//! batch creates and import chunks lease right before their bulk write,
//! and a commit made on the writer's other connection would empty the
//! bulk connection's page cache (SQLite drops it whenever another
//! connection changed the database), so every index page the bulk write
//! touches would be read again from the WAL. A lease is rare (one per
//! `segment_size` single creates), so its own commit costs nothing there.

use std::ops::Range;

use async_trait::async_trait;

use crate::store::sqlite::{ids, SqliteStore};
use crate::store::{IdStore, StoreResult};

#[async_trait]
impl IdStore for SqliteStore {
    async fn lease_ids(
        &self,
        floor: u64,
        size: u64,
        _used_up: Vec<u64>,
    ) -> StoreResult<Range<u64>> {
        self.write_bulk(move |c| ids::lease(c, floor, size)).await
    }

    async fn reserve_ids_through(&self, last: u64) -> StoreResult<()> {
        self.write_bulk(move |c| ids::advance_past(c, last)).await
    }

    async fn return_ids(&self, unused: Vec<Range<u64>>) -> StoreResult<u64> {
        self.write_bulk(move |c| ids::give_back(c, &unused)).await
    }

    async fn used_ids(&self, range: Range<u64>) -> StoreResult<Vec<u64>> {
        self.read(move |c| ids::used_in(c, &range)).await
    }
}
