//! [`ClickStore`] over SQLite: ingest and fold are writer jobs with their
//! pending-clicks bookkeeping (see `SqliteStore::append_clicks`); stats read the
//! tables with the pending clicks laid over them.

use async_trait::async_trait;
use shortlink_core::ipc::ClickBatch;
use tokio::sync::Notify;

use crate::store::sqlite::{clicks, links as table, SqliteStore};
use crate::store::{ClickStore, FoldOutcome, Link, RangeStats, SiteFilter, SiteStats, StoreResult};

#[async_trait]
impl ClickStore for SqliteStore {
    async fn append_clicks(&self, batches: Vec<ClickBatch>, now: i64) -> StoreResult<Vec<bool>> {
        SqliteStore::append_clicks(self, batches, now).await
    }

    async fn fold_clicks(&self) -> StoreResult<FoldOutcome> {
        SqliteStore::fold_clicks(self).await
    }

    async fn fold_prompt_clicks(&self) -> StoreResult<FoldOutcome> {
        SqliteStore::fold_prompt_clicks(self).await
    }

    fn click_backlog(&self) -> (u64, u64) {
        self.pending_clicks().backlog()
    }

    fn fold_wake(&self) -> &Notify {
        SqliteStore::fold_wake(self)
    }

    async fn link_stats(
        &self,
        id: u64,
        from_hour: i64,
        to_hour: i64,
        daily: bool,
    ) -> StoreResult<RangeStats> {
        self.read_counted(move |c, o| clicks::range_stats(c, o, id, from_hour, to_hour, daily))
            .await
    }

    async fn site_stats(
        &self,
        from_hour: i64,
        to_hour: i64,
        daily: bool,
        top: usize,
        filter: SiteFilter,
    ) -> StoreResult<(SiteStats, Vec<(Link, i64)>)> {
        self.read_counted(move |c, o| {
            let r = clicks::site_stats(c, o, (from_hour, to_hour), daily, top, &filter)?;
            let mut top = Vec::with_capacity(r.top.len());
            for &(id, n) in &r.top {
                // Clicks of a deleted link go with it: every id is a link.
                if let Some(link) = table::by_id(c, id)? {
                    top.push((link, n));
                }
            }
            Ok((r, top))
        })
        .await
    }
}
