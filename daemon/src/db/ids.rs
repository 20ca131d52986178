//! Id segments: where `IdSegments` leases the ids of new links.

use std::ops::Range;

use async_trait::async_trait;

use crate::store::StoreResult;

/// Hands out ranges of ids no other lease (on any node) ever gets.
#[async_trait]
pub trait IdStore: Send + Sync {
    /// Leases the next `size` ids at or above `floor`, in one transaction:
    /// two leases never overlap.
    async fn lease_ids(&self, floor: u64, size: u64) -> StoreResult<Range<u64>>;

    /// Moves the next lease past `last` (an import kept ids up to it).
    async fn reserve_ids_through(&self, last: u64) -> StoreResult<()>;
}
