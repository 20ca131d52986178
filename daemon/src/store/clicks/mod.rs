//! Clicks: durable ingest of batches, the fold into the tables, and the
//! stats read back over a range.

mod aggregate;
mod range;
mod site;

pub use aggregate::{Aggregate, LinkAgg, RowKey};
pub use range::{RangeStats, RangeTally};
pub use site::{SiteFilter, SiteStats, SiteTally};

use async_trait::async_trait;
use shortlink_core::ipc::ClickBatch;
use tokio::sync::Notify;

use crate::store::{Link, StoreResult};

/// What a fold did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FoldOutcome {
    /// Batches folded.
    pub batches: u64,
    /// Clicks added to the tables (items for unknown or deleted links are
    /// dropped).
    pub counted: u64,
    /// Links whose edge view changed (reached max visits, expiry renewed):
    /// id and alias, so the edge can be told to refetch.
    pub changed: Vec<(u64, Option<String>)>,
}

/// Where clicks go and are counted.
#[async_trait]
pub trait ClickStore: Send + Sync {
    /// Makes click batches durable and counts them, each exactly once by
    /// its batch id; resolves after they are durable and visible to every
    /// read (the caller may acknowledge). `true` per batch counted, `false`
    /// per duplicate.
    async fn append_clicks(&self, batches: Vec<ClickBatch>, now: i64) -> StoreResult<Vec<bool>>;

    /// Adds the acknowledged clicks not folded yet to the click tables and
    /// the link totals; one fold at a time.
    async fn fold_clicks(&self) -> StoreResult<FoldOutcome>;

    /// Like [`ClickStore::fold_clicks`] for the links with a visit limit or
    /// renew-on-access only (the others may wait for the next fold of
    /// everything; reads see them meanwhile).
    async fn fold_prompt_clicks(&self) -> StoreResult<FoldOutcome>;

    /// `(batches, rows)` acknowledged and not folded yet.
    fn click_backlog(&self) -> (u64, u64);

    /// Notified when a fold should run before its time.
    fn fold_wake(&self) -> &Notify;

    /// Stats of link `id` for hours `from_hour..=to_hour`, in hour or day
    /// buckets, every acknowledged click included.
    async fn link_stats(
        &self,
        id: u64,
        from_hour: i64,
        to_hour: i64,
        daily: bool,
    ) -> StoreResult<RangeStats>;

    /// Stats of every link `filter` keeps over the same range, with the
    /// `top` most clicked links (deleted ones left out), every
    /// acknowledged click included.
    async fn site_stats(
        &self,
        from_hour: i64,
        to_hour: i64,
        daily: bool,
        top: usize,
        filter: SiteFilter,
    ) -> StoreResult<(SiteStats, Vec<(Link, i64)>)>;
}
