//! [`TeamStore`] on PostgreSQL: the `teams` table, with the answers of
//! SQLite's `store/sqlite/teams.rs` (a taken name a conflict, a team still in use
//! refused).

use async_trait::async_trait;
use tokio_postgres::Row;

use super::users::conflict_or;
use super::PgStore;
use crate::store::postgres::PgError;
use crate::store::{StoreError, StoreResult, Team, TeamStore};

fn team_row(r: &Row) -> Team {
    Team {
        id: r.get(0),
        name: r.get(1),
        created_at: r.get(2),
    }
}

#[async_trait]
impl TeamStore for PgStore {
    async fn add_team(&self, name: String, now: i64) -> StoreResult<Team> {
        let c = self.pg().get().await?;
        let row = c
            .query_one(
                "INSERT INTO teams (name, created_at) VALUES ($1, $2) \
                 RETURNING id, name, created_at",
                &[&name, &now],
            )
            .await
            .map_err(conflict_or("adding a team", || {
                format!("team name \"{name}\"")
            }))?;
        Ok(team_row(&row))
    }

    async fn list_teams(&self) -> StoreResult<Vec<Team>> {
        let c = self.pg().get().await?;
        let rows = c
            .query("SELECT id, name, created_at FROM teams ORDER BY id", &[])
            .await
            .map_err(PgError::query("listing teams"))?;
        Ok(rows.iter().map(team_row).collect())
    }

    async fn team_by_name(&self, name: String) -> StoreResult<Option<Team>> {
        let c = self.pg().get().await?;
        let row = c
            .query_opt(
                "SELECT id, name, created_at FROM teams WHERE name = $1",
                &[&name],
            )
            .await
            .map_err(PgError::query("reading a team"))?;
        Ok(row.as_ref().map(team_row))
    }

    async fn delete_team(&self, id: i64) -> StoreResult<()> {
        let mut c = self.pg().get().await?;
        let tx = c
            .transaction()
            .await
            .map_err(PgError::query("starting to delete a team"))?;
        // Locked first, so a user or link added meanwhile waits and is
        // refused by the foreign key or counted here.
        let found = tx
            .query_opt("SELECT id FROM teams WHERE id = $1 FOR UPDATE", &[&id])
            .await
            .map_err(PgError::query("locking a team"))?;
        if found.is_none() {
            return Err(StoreError::NotFound(format!("team {id}")));
        }
        let in_use: i64 = tx
            .query_one(
                "SELECT (SELECT count(*) FROM links WHERE team_id = $1) \
                 + (SELECT count(*) FROM users WHERE team_id = $1) \
                 + (SELECT count(*) FROM api_keys WHERE team_id = $1 AND user_id IS NULL \
                    AND revoked_at IS NULL) \
                 + (SELECT count(*) FROM apps WHERE team_id = $1 AND revoked_at IS NULL) \
                 + (SELECT count(*) FROM webhooks WHERE team_id = $1)",
                &[&id],
            )
            .await
            .map_err(PgError::query("counting a team's members"))?
            .get(0);
        if in_use > 0 {
            return Err(StoreError::InUse(format!(
                "team {id} still has {in_use} links, users, keys, apps or webhooks; move or delete them first"
            )));
        }
        tx.execute("DELETE FROM teams WHERE id = $1", &[&id])
            .await
            .map_err(PgError::query("deleting a team"))?;
        tx.commit()
            .await
            .map_err(PgError::query("committing a team's deletion"))?;
        Ok(())
    }
}
