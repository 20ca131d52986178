//! The link checker's results: which links are due, who probes them (a
//! claim, so two nodes never probe one link at once), and what each probe
//! found.

use async_trait::async_trait;

use crate::store::StoreResult;

/// A link to probe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckTarget {
    pub link_id: u64,
    pub url: String,
    /// The link's own choice (never `off`: those are not candidates).
    pub check: Option<shortlink_core::check_mode::CheckMode>,
}

/// What one probe found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckResult {
    pub link_id: u64,
    /// Unix seconds.
    pub checked_at: i64,
    /// The last answer's status, if there was one.
    pub status: Option<u16>,
    /// Why it failed or was skipped.
    pub error: Option<String>,
    /// `Some(true)`: a failure (one more in a row); `Some(false)`: healthy
    /// (the row ends); `None`: not probed (private address), the count
    /// stays.
    pub failed: Option<bool>,
}

/// What recording a probe changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    /// Failed probes in a row, this one included.
    pub failures: u32,
    /// The link turned broken or healthy at the edge with this probe
    /// (its id and alias, for the edge): the change is in the change log.
    pub switched: Option<crate::store::ChangedLink>,
}

/// A link's last probe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkCheck {
    pub link_id: u64,
    /// The target now (`None` once the link is gone).
    pub url: Option<String>,
    pub checked_at: Option<i64>,
    pub status: Option<u16>,
    pub error: Option<String>,
    /// Failed probes in a row.
    pub failures: u32,
}

/// Where the checker keeps its work and results.
#[async_trait]
pub trait CheckStore: Send + Sync {
    /// Up to `limit` links due at `now`: on (not disabled, not expired),
    /// last probed before `checked_before` (or never) and not claimed; by
    /// id after `after`. The sweep reads on from the last id it got.
    async fn check_candidates(
        &self,
        after: u64,
        limit: u32,
        now: i64,
        checked_before: i64,
    ) -> StoreResult<Vec<CheckTarget>>;

    /// Claims, of `ids`, those last probed before `checked_before` (or
    /// never) and not claimed by anyone at `now`, until `until`; the ids
    /// claimed.
    async fn claim_checks(
        &self,
        ids: Vec<u64>,
        now: i64,
        checked_before: i64,
        until: i64,
    ) -> StoreResult<Vec<u64>>;

    /// Records a probe and ends its claim. With `fallback_after` > 0 the
    /// link is marked broken once that many probes in a row failed, and
    /// no longer once one finds it healthy; either switch is logged for
    /// the edge in the same transaction.
    async fn record_check(&self, r: CheckResult, fallback_after: u32) -> StoreResult<Recorded>;

    /// The last probes of these links (a link never probed has none).
    async fn link_checks(&self, ids: Vec<u64>) -> StoreResult<Vec<LinkCheck>>;

    /// Links of `min_failures` or more failures in a row, by link id after
    /// `after`.
    async fn failing_checks(
        &self,
        min_failures: u32,
        after: u64,
        limit: u32,
    ) -> StoreResult<Vec<LinkCheck>>;

    /// How many links have `min_failures` or more failures in a row.
    async fn count_failing(&self, min_failures: u32) -> StoreResult<u64>;
}
