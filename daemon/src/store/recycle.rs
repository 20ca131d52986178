//! Id recycling (opt-in, `[recycling]`): the ranges of ids ever leased,
//! when, and which of them are free to be handed out again.
//!
//! A range is recycled in two steps so that no code answers with a new
//! target while an edge may still hold the old one: [`RecycleStore::purge_recyclable_ids`]
//! deletes the old links (their clicks and per-link rows go with them) and
//! logs an edge change for every id of the range in one transaction; the
//! caller pushes those changes to the workers (and lets the other nodes'
//! followers read them), and only then does
//! [`RecycleStore::release_purged_ids`] make the ranges available, to be
//! taken by [`RecycleStore::claim_recycled_ids`] (lowest first).

use std::ops::Range;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::store::StoreResult;

/// Where a recorded range is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RangeState {
    /// Handed to a daemon (fresh, or taken again after recycling).
    Leased,
    /// Its old links are deleted and the edges told; not reusable yet.
    Purged,
    /// Free to be handed out again.
    Available,
}

impl RangeState {
    /// The state's name in the `id_ranges` table.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Leased => "leased",
            Self::Purged => "purged",
            Self::Available => "available",
        }
    }

    /// The state named `s` in the table (an unknown name reads as leased:
    /// never reused).
    pub fn parse(s: &str) -> Self {
        match s {
            "purged" => Self::Purged,
            "available" => Self::Available,
            _ => Self::Leased,
        }
    }
}

/// One recorded range of ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdRange {
    /// First id of the range.
    pub start: u64,
    /// One past the last id.
    pub stop: u64,
    /// When it was last handed to a daemon (Unix seconds).
    pub leased_at: i64,
    /// Where it is in its life.
    pub state: RangeState,
    /// When it was last purged for reuse (Unix seconds), if ever.
    pub recycled_at: Option<i64>,
    /// How many times it was handed out again after recycling.
    pub reuses: u32,
}

/// The recorded ranges at a glance.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IdRanges {
    /// Ranges handed out.
    pub leased: u64,
    /// Ranges purged and waiting to be released.
    pub purged: u64,
    /// Ranges free to be handed out again.
    pub available: u64,
    /// Ids in the available ranges.
    pub available_ids: u64,
    /// Ranges taken again after recycling, over all time.
    pub reused: u64,
    /// The newest ranges (by start, highest first), at most the limit asked.
    pub ranges: Vec<IdRange>,
}

/// One range purged for reuse: the ids of its range and the aliases of the
/// links deleted from it (the edge drops them too).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Purged {
    /// The range.
    pub range: Range<u64>,
    /// `(id, alias)` of each deleted link that had an alias.
    pub aliases: Vec<(u64, String)>,
    /// Links deleted (expired ones; deleted links had no row left).
    pub links: u64,
}

/// The recorded id ranges and their recycling.
#[async_trait]
pub trait RecycleStore: Send + Sync {
    /// Takes the lowest available range at or above `floor` for this
    /// handle, in one transaction with a row lock: two daemons never get
    /// the same one. A range that holds links again (an import kept ids in
    /// it) is not handed out: it goes back to leased, to wait another
    /// grace period. `None`: nothing available.
    async fn claim_recycled_ids(&self, floor: u64) -> StoreResult<Option<Range<u64>>>;

    /// Purges up to `limit` ranges leased at or before `cutoff` whose every
    /// id is unused, deleted at or before `cutoff` or expired at or before
    /// it: deletes their links (clicks with them) and per-link rows, logs
    /// an edge change for every id, and marks them purged, in one
    /// transaction. Lowest first.
    async fn purge_recyclable_ids(&self, cutoff: i64, limit: u32) -> StoreResult<Vec<Purged>>;

    /// Makes the ranges purged at or before `purged_before` available (call
    /// once the changes that purged them are pushed, and on several nodes
    /// once the followers have had time to read them); returns them.
    async fn release_purged_ids(&self, purged_before: i64) -> StoreResult<Vec<Range<u64>>>;

    /// Counts of the recorded ranges, and the `limit` newest.
    async fn id_ranges(&self, limit: u32) -> StoreResult<IdRanges>;
}
