//! [`RecycleStore`] over SQLite: each step is one job of the writer (one
//! transaction), the overview one read.

use std::ops::Range;

use async_trait::async_trait;

use crate::store::sqlite::{recycle, SqliteStore};
use crate::store::{IdRanges, Purged, RecycleStore, StoreResult};
use crate::timestamp::unix_now;

#[async_trait]
impl RecycleStore for SqliteStore {
    async fn claim_recycled_ids(&self, floor: u64) -> StoreResult<Option<Range<u64>>> {
        // A lease: on the bulk connection, as `lease_ids` says why.
        self.write_bulk(move |c| recycle::claim(c, floor, unix_now()))
            .await
    }

    async fn purge_recyclable_ids(&self, cutoff: i64, limit: u32) -> StoreResult<Vec<Purged>> {
        self.write(move |c| recycle::purge(c, cutoff, limit, unix_now()))
            .await
    }

    async fn release_purged_ids(&self, purged_before: i64) -> StoreResult<Vec<Range<u64>>> {
        self.write(move |c| recycle::release_purged(c, purged_before))
            .await
    }

    async fn id_ranges(&self, limit: u32) -> StoreResult<IdRanges> {
        self.read(move |c| recycle::overview(c, limit)).await
    }
}
