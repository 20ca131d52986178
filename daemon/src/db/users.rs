//! Admin accounts.

use async_trait::async_trait;

use crate::store::users::User;
use crate::store::StoreResult;

/// Where admin accounts are kept.
#[async_trait]
pub trait UserStore: Send + Sync {
    /// Adds a user; a taken name is a `StoreError::Conflict`. Returns its id.
    async fn add_user(&self, name: String, password_hash: String, now: i64) -> StoreResult<i64>;

    /// Replaces a user's password hash (`NotFound` for no such user).
    async fn set_user_password(
        &self,
        name: String,
        password_hash: String,
        now: i64,
    ) -> StoreResult<()>;

    /// Every user.
    async fn list_users(&self) -> StoreResult<Vec<User>>;

    /// Deletes a user (`NotFound` for no such user).
    async fn delete_user(&self, name: String) -> StoreResult<()>;

    /// The user of this name.
    async fn user_by_name(&self, name: String) -> StoreResult<Option<User>>;
}
