//! Teams: who links, users and keys belong to.

use async_trait::async_trait;

use crate::store::sqlite::teams::Team;
use crate::store::sqlite::StoreResult;

/// Where teams are kept.
#[async_trait]
pub trait TeamStore: Send + Sync {
    /// Adds a team; a taken name is a `StoreError::Conflict`.
    async fn add_team(&self, name: String, now: i64) -> StoreResult<Team>;

    /// Every team, by id.
    async fn list_teams(&self) -> StoreResult<Vec<Team>>;

    /// The team of this name.
    async fn team_by_name(&self, name: String) -> StoreResult<Option<Team>>;

    /// Deletes team `id` (`NotFound` for none, `InUse` while a link, user,
    /// key, app or webhook is in it).
    async fn delete_team(&self, id: i64) -> StoreResult<()>;
}
