//! User accounts, each in a team with a role.

use async_trait::async_trait;

use crate::access::Role;
use crate::store::StoreResult;

/// An admin UI account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    /// Row id.
    pub id: i64,
    /// Sign-in name, unique.
    pub name: String,
    /// Argon2id PHC string.
    pub password_hash: String,
    /// Unix seconds.
    pub created_at: i64,
    /// Unix seconds of the last password change.
    pub updated_at: i64,
    /// The team the user belongs to.
    pub team_id: i64,
    /// What the user (and every key made for them) may do.
    pub role: Role,
}

/// Where user accounts are kept.
#[async_trait]
pub trait UserStore: Send + Sync {
    /// Adds a user to team `team_id` with `role`; a taken name is a
    /// `StoreError::Conflict`, no such team `NotFound`. Returns its id.
    async fn add_user(
        &self,
        name: String,
        password_hash: String,
        now: i64,
        team_id: i64,
        role: Role,
    ) -> StoreResult<i64>;

    /// Moves a user to team `team_id` with `role` (`NotFound` for no such
    /// user or team); the user as it is now.
    async fn set_user_membership(
        &self,
        name: String,
        team_id: i64,
        role: Role,
    ) -> StoreResult<User>;

    /// Replaces a user's password hash (`NotFound` for no such user).
    async fn set_user_password(
        &self,
        name: String,
        password_hash: String,
        now: i64,
    ) -> StoreResult<()>;

    /// Every user.
    async fn list_users(&self) -> StoreResult<Vec<User>>;

    /// Deletes a user and revokes their keys at `now`, in one transaction
    /// (`NotFound` for no such user).
    async fn delete_user(&self, name: String, now: i64) -> StoreResult<()>;

    /// The user of this name.
    async fn user_by_name(&self, name: String) -> StoreResult<Option<User>>;
}
