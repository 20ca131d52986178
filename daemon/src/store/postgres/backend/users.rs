//! [`UserStore`] on PostgreSQL: the `users` table, a taken name answered
//! as [`StoreError::Conflict`] as on SQLite.

use async_trait::async_trait;
use deadpool_postgres::GenericClient;
use tokio_postgres::error::SqlState;
use tokio_postgres::Row;

use super::PgStore;
use crate::access::Role;
use crate::store::postgres::PgError;
use crate::store::{StoreError, StoreResult, User, UserStore};

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

/// `StoreError::NotFound` unless team `id` exists.
async fn require_team(c: &impl GenericClient, id: i64) -> StoreResult<()> {
    let row = c
        .query_opt("SELECT id FROM teams WHERE id = $1", &[&id])
        .await
        .map_err(PgError::query("reading a team"))?;
    row.map(|_| ())
        .ok_or_else(|| StoreError::NotFound(format!("team {id}")))
}

const USER_COLUMNS: &str = "id, name, password_hash, created_at, updated_at, team_id, role";

fn user_row(r: &Row) -> User {
    User {
        id: r.get(0),
        name: r.get(1),
        password_hash: r.get(2),
        created_at: r.get(3),
        updated_at: r.get(4),
        team_id: r.get(5),
        role: Role::from_stored(r.get(6)),
    }
}

#[async_trait]
impl UserStore for PgStore {
    async fn add_user(
        &self,
        name: String,
        password_hash: String,
        now: i64,
        team_id: i64,
        role: Role,
    ) -> StoreResult<i64> {
        let c = self.pg().get().await?;
        require_team(&c, team_id).await?;
        let row = c
            .query_one(
                "INSERT INTO users (name, password_hash, created_at, updated_at, team_id, role) \
                 VALUES ($1, $2, $3, $3, $4, $5) RETURNING id",
                &[&name, &password_hash, &now, &team_id, &role.as_str()],
            )
            .await
            .map_err(conflict_or("adding a user", || {
                format!("user name \"{name}\"")
            }))?;
        Ok(row.get(0))
    }

    async fn set_user_membership(
        &self,
        name: String,
        team_id: i64,
        role: Role,
    ) -> StoreResult<User> {
        let c = self.pg().get().await?;
        require_team(&c, team_id).await?;
        let sql = format!(
            "UPDATE users SET team_id = $2, role = $3 WHERE name = $1 RETURNING {USER_COLUMNS}"
        );
        let row = c
            .query_opt(&sql, &[&name, &team_id, &role.as_str()])
            .await
            .map_err(PgError::query("changing a user's team and role"))?;
        row.as_ref()
            .map(user_row)
            .ok_or_else(|| StoreError::NotFound(format!("user \"{name}\"")))
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

    async fn delete_user(&self, name: String, now: i64) -> StoreResult<()> {
        let mut c = self.pg().get().await?;
        let tx = c
            .transaction()
            .await
            .map_err(PgError::query("starting to delete a user"))?;
        tx.execute(
            "UPDATE api_keys SET revoked_at = $2 WHERE revoked_at IS NULL \
             AND user_id = (SELECT id FROM users WHERE name = $1)",
            &[&name, &now],
        )
        .await
        .map_err(PgError::query("revoking a deleted user's keys"))?;
        let n = tx
            .execute("DELETE FROM users WHERE name = $1", &[&name])
            .await
            .map_err(PgError::query("deleting a user"))?;
        tx.commit()
            .await
            .map_err(PgError::query("committing a user's deletion"))?;
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
