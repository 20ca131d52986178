//! Teams: who links, users and keys belong to.

use async_trait::async_trait;

use crate::access::Role;
use crate::store::StoreResult;

/// The team every link, user and key made before teams belongs to.
pub const DEFAULT_TEAM: i64 = 1;

/// A team: a set of users and the links they made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Team {
    /// Row id, what links, users and keys refer to.
    pub id: i64,
    /// Unique name, what the CLI and the admin UI show.
    pub name: String,
    /// Unix seconds.
    pub created_at: i64,
}

/// A credential's owner when it is made: a user (whose team and role the
/// credential follows), or a team and role of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owner {
    /// The user it acts for, if any.
    pub user_id: Option<i64>,
    /// Its team (the user's, when there is a user).
    pub team_id: i64,
    /// Its role (the user's, when there is a user).
    pub role: Role,
}

impl Owner {
    /// A credential of its own in `team_id` with `role`, no user.
    pub fn of_team(team_id: i64, role: Role) -> Self {
        Self {
            user_id: None,
            team_id,
            role,
        }
    }
}

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
