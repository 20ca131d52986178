//! [`RecycleStore`] over PostgreSQL: each step one transaction on the
//! shared `id_ranges` (`postgres::recycle`), its rows locked, so nodes sweeping
//! and claiming at once never share a range.

use std::ops::Range;

use async_trait::async_trait;

use super::ids::LINK_IDS;
use super::links::counted;
use super::rows::{bigint, failed};
use super::PgStore;
use crate::store::postgres::recycle;
use crate::store::{IdRanges, Purged, RecycleStore, StoreResult};
use crate::timestamp::unix_now;

#[async_trait]
impl RecycleStore for PgStore {
    async fn claim_recycled_ids(&self, floor: u64) -> StoreResult<Option<Range<u64>>> {
        let result = async {
            let mut client = self.pg().get().await?;
            let tx = client
                .transaction()
                .await
                .map_err(failed("starting a recycled range claim"))?;
            let got =
                recycle::claim(&tx, LINK_IDS, bigint(floor)?, self.holder, unix_now()).await?;
            tx.commit()
                .await
                .map_err(failed("committing a recycled range claim"))?;
            Ok(got)
        }
        .await;
        counted(self.stats(), result)
    }

    async fn purge_recyclable_ids(&self, cutoff: i64, limit: u32) -> StoreResult<Vec<Purged>> {
        let result = async {
            let mut client = self.pg().get().await?;
            let tx = client
                .transaction()
                .await
                .map_err(failed("starting an id range purge"))?;
            let purged = recycle::purge(&tx, cutoff, i64::from(limit), unix_now()).await?;
            tx.commit()
                .await
                .map_err(failed("committing an id range purge"))?;
            if !purged.is_empty() {
                self.pg.wake(&client).await;
            }
            Ok(purged)
        }
        .await;
        counted(self.stats(), result)
    }

    async fn release_purged_ids(&self, purged_before: i64) -> StoreResult<Vec<Range<u64>>> {
        let result = async {
            let client = self.pg().get().await?;
            Ok(recycle::release_purged(&client, purged_before).await?)
        }
        .await;
        counted(self.stats(), result)
    }

    async fn id_ranges(&self, limit: u32) -> StoreResult<IdRanges> {
        let client = self.pg().get().await?;
        Ok(recycle::overview(&client, i64::from(limit)).await?)
    }
}
