//! The edge change log: every write that the nginx workers must see
//! appends a row in its own transaction; the edge replays them in order.

use async_trait::async_trait;
use shortlink_core::ipc::ChangePosition;

use crate::store::sqlite::changes::Change;
use crate::store::sqlite::StoreResult;

/// What a (re)subscribing worker is sent first.
#[derive(Debug, Clone)]
pub struct Resume {
    /// Every alias, for the worker's alias set.
    pub aliases: Vec<String>,
    /// The changes after the worker's position, or `None` when the log
    /// cannot say (another database, or pruned): the worker drops its cache.
    pub changes: Option<Vec<Change>>,
    /// The position `changes` lead to.
    pub head: ChangePosition,
}

/// The change log.
#[async_trait]
pub trait ChangeLog: Send + Sync {
    /// The log's head when the store was opened: the live feed starts after
    /// it.
    fn changes_at_open(&self) -> ChangePosition;

    /// The head now and the changes after `from` up to it (`None` when some
    /// were pruned), read together.
    async fn changes_since(&self, from: u64) -> StoreResult<(ChangePosition, Option<Vec<Change>>)>;

    /// A worker's start at `since`, read in one read transaction.
    async fn resume(&self, since: Option<ChangePosition>) -> StoreResult<Resume>;
}
