//! [`IdStore`] over PostgreSQL: each lease is one statement on the shared
//! `id_alloc` row (`pg::ids::lease`), so leases taken by every node never
//! overlap.

use std::ops::Range;

use async_trait::async_trait;

use super::links::counted;
use super::PgStore;
use crate::db::IdStore;
use crate::pg::ids;
use crate::store::StoreResult;

/// The `id_alloc` row of link ids (the name SQLite uses too).
pub(super) const LINK_IDS: &str = "links";

#[async_trait]
impl IdStore for PgStore {
    async fn lease_ids(&self, floor: u64, size: u64) -> StoreResult<Range<u64>> {
        let result = async {
            let client = self.pg().get().await?;
            Ok(ids::lease(&client, LINK_IDS, floor, size).await?)
        }
        .await;
        counted(self.stats(), result)
    }

    async fn reserve_ids_through(&self, last: u64) -> StoreResult<()> {
        let result = async {
            let client = self.pg().get().await?;
            Ok(ids::advance_past(&client, LINK_IDS, last).await?)
        }
        .await;
        counted(self.stats(), result)
    }
}
