//! Id segments: where `IdSegments` leases the ids of new links.

use std::ops::Range;

use async_trait::async_trait;

use crate::store::StoreResult;

/// Hands out ranges of ids no other lease (on any node) ever gets.
#[async_trait]
pub trait IdStore: Send + Sync {
    /// Leases the next `size` ids at or above `floor`, in one transaction:
    /// two leases never overlap. `used_up` names (by their end) earlier
    /// leases of this store handle whose ids are all handed out or dropped:
    /// a store that records live leases (for [`crate::store::ImportStore`]'s
    /// kept ids) forgets them.
    async fn lease_ids(&self, floor: u64, size: u64, used_up: Vec<u64>) -> StoreResult<Range<u64>>;

    /// Moves the next lease past `last` (an import kept ids up to it), and
    /// takes the ids up to it out of this handle's recorded leases.
    async fn reserve_ids_through(&self, last: u64) -> StoreResult<()>;

    /// Takes back the unused tails of this handle's leases (a clean
    /// shutdown): each range that ends where the next lease would start
    /// moves the allocator back to its start, in one transaction, and its
    /// records go with it; a range another lease already passed stays
    /// lost. How many ids came back.
    async fn return_ids(&self, unused: Vec<Range<u64>>) -> StoreResult<u64>;

    /// The ids in `range` some link already has: an import may keep an id
    /// anywhere without moving the allocator (a code-shaped alias), and a
    /// lease never hands such an id out again.
    async fn used_ids(&self, range: Range<u64>) -> StoreResult<Vec<u64>>;
}
