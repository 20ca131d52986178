//! The edge change log: every write that the nginx workers must see
//! appends a row in its own transaction; the edge replays them in order.

use async_trait::async_trait;
use shortlink_core::ipc::ChangePosition;

use crate::store::StoreResult;

/// Rows kept: a worker away for fewer changes than this resumes where it
/// left off.
pub const KEEP: u64 = 200_000;

/// One logged change: a link and its alias before and after the write
/// (`None` before: it had none or did not exist; after: it has none or was
/// deleted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// Position of the change in the log.
    pub seq: u64,
    /// The link; its generated code is invalidated.
    pub link_id: u64,
    /// Alias before the write.
    pub old_alias: Option<String>,
    /// Alias after the write.
    pub new_alias: Option<String>,
}

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
