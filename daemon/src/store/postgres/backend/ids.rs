//! [`IdStore`] over PostgreSQL: each lease is one statement on the shared
//! `id_alloc` row (`postgres::ids::lease`), so leases taken by every node never
//! overlap, and each is recorded under this handle's holder number until
//! it is used up.

use std::ops::Range;

use async_trait::async_trait;

use super::links::counted;
use super::rows::failed;
use super::PgStore;
use crate::store::postgres::ids;
use crate::store::{IdStore, StoreResult};

/// The `id_alloc` row of link ids (the name SQLite uses too).
pub(super) const LINK_IDS: &str = "links";

#[async_trait]
impl IdStore for PgStore {
    async fn lease_ids(&self, floor: u64, size: u64, used_up: Vec<u64>) -> StoreResult<Range<u64>> {
        let result = async {
            let client = self.pg().get().await?;
            Ok(ids::lease(&client, LINK_IDS, floor, size, self.holder, &used_up).await?)
        }
        .await;
        counted(self.stats(), result)
    }

    async fn reserve_ids_through(&self, last: u64) -> StoreResult<()> {
        let result = async {
            let mut client = self.pg().get().await?;
            let tx = client
                .transaction()
                .await
                .map_err(failed("starting an id reservation"))?;
            ids::advance_past(&tx, LINK_IDS, last).await?;
            ids::trim_leases(&tx, LINK_IDS, self.holder, last).await?;
            tx.commit()
                .await
                .map_err(failed("committing an id reservation"))?;
            Ok(())
        }
        .await;
        counted(self.stats(), result)
    }

    async fn used_ids(&self, range: Range<u64>) -> StoreResult<Vec<u64>> {
        let result = async {
            let client = self.pg().get().await?;
            Ok(ids::used_in(&client, &range).await?)
        }
        .await;
        counted(self.stats(), result)
    }

    async fn return_ids(&self, unused: Vec<Range<u64>>) -> StoreResult<u64> {
        let result = async {
            let mut client = self.pg().get().await?;
            let tx = client
                .transaction()
                .await
                .map_err(failed("starting an id hand-back"))?;
            let taken = ids::give_back(&tx, LINK_IDS, self.holder, &unused).await?;
            tx.commit()
                .await
                .map_err(failed("committing an id hand-back"))?;
            Ok(taken)
        }
        .await;
        counted(self.stats(), result)
    }
}
