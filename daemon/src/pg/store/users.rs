//! [`UserStore`] on PostgreSQL: the `users` table, a taken name answered
//! as [`StoreError::Conflict`] as on SQLite.

use async_trait::async_trait;
use tokio_postgres::error::SqlState;
use tokio_postgres::Row;

use super::PgStore;
use crate::db::UserStore;
use crate::pg::PgError;
use crate::store::users::User;
use crate::store::{StoreError, StoreResult};

/// True when `e` is a unique-constraint violation.
pub(super) fn is_unique_violation(e: &tokio_postgres::Error) -> bool {
    e.code() == Some(&SqlState::UNIQUE_VIOLATION)
}

/// `e` as a store error: a unique violation is a conflict on `taken`,
/// anything else the database's error with what was being done.
pub(super) fn conflict_or(
    doing: &'static str,
    taken: impl FnOnce() -> String,
) -> impl FnOnce(tokio_postgres::Error) -> StoreError {
    move |e| {
        if is_unique_violation(&e) {
            StoreError::Conflict(taken())
        } else {
            PgError::query(doing)(e).into()
        }
    }
}

const USER_COLUMNS: &str = "id, name, password_hash, created_at, updated_at";

fn user_row(r: &Row) -> User {
    User {
        id: r.get(0),
        name: r.get(1),
        password_hash: r.get(2),
        created_at: r.get(3),
        updated_at: r.get(4),
    }
}

#[async_trait]
impl UserStore for PgStore {
    async fn add_user(&self, name: String, password_hash: String, now: i64) -> StoreResult<i64> {
        let c = self.pg().get().await?;
        let row = c
            .query_one(
                "INSERT INTO users (name, password_hash, created_at, updated_at) \
                 VALUES ($1, $2, $3, $3) RETURNING id",
                &[&name, &password_hash, &now],
            )
            .await
            .map_err(conflict_or("adding a user", || {
                format!("user name \"{name}\"")
            }))?;
        Ok(row.get(0))
    }

    async fn set_user_password(
        &self,
        name: String,
        password_hash: String,
        now: i64,
    ) -> StoreResult<()> {
        let c = self.pg().get().await?;
        let n = c
            .execute(
                "UPDATE users SET password_hash = $2, updated_at = $3 WHERE name = $1",
                &[&name, &password_hash, &now],
            )
            .await
            .map_err(PgError::query("changing a user's password"))?;
        if n == 0 {
            return Err(StoreError::NotFound(format!("user \"{name}\"")));
        }
        Ok(())
    }

    async fn list_users(&self) -> StoreResult<Vec<User>> {
        let c = self.pg().get().await?;
        let sql = format!("SELECT {USER_COLUMNS} FROM users ORDER BY name COLLATE \"C\"");
        let rows = c
            .query(&sql, &[])
            .await
            .map_err(PgError::query("listing users"))?;
        Ok(rows.iter().map(user_row).collect())
    }

    async fn delete_user(&self, name: String) -> StoreResult<()> {
        let c = self.pg().get().await?;
        let n = c
            .execute("DELETE FROM users WHERE name = $1", &[&name])
            .await
            .map_err(PgError::query("deleting a user"))?;
        if n == 0 {
            return Err(StoreError::NotFound(format!("user \"{name}\"")));
        }
        Ok(())
    }

    async fn user_by_name(&self, name: String) -> StoreResult<Option<User>> {
        let c = self.pg().get().await?;
        let sql = format!("SELECT {USER_COLUMNS} FROM users WHERE name = $1");
        let row = c
            .query_opt(&sql, &[&name])
            .await
            .map_err(PgError::query("reading a user"))?;
        Ok(row.as_ref().map(user_row))
    }
}
