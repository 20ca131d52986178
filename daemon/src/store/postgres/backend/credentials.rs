//! [`CredentialStore`] on PostgreSQL: API keys (their hash only), apps
//! with their secrets sealed by [`PgStore::seal`] before they are stored
//! and opened when read (the database never holds one in clear), the
//! signatures seen (one primary key for every node: a signature recorded
//! by one daemon is a replay on all of them) and credential uses.

use async_trait::async_trait;
use tokio_postgres::Row;

use super::users::conflict_or;
use super::PgStore;
use crate::access::Role;
use crate::store::postgres::PgError;
use crate::store::{ApiKey, App, CredentialStore, Owner, StoreError, StoreResult};

/// A key with its user's current team and role; a key whose user is gone
/// reads as revoked (as on SQLite, `store/sqlite/keys.rs`).
const KEY_COLUMNS: &str = "k.id, k.name, k.prefix, k.hash, k.scopes, k.created_at, \
     CASE WHEN k.user_id IS NOT NULL AND u.id IS NULL THEN coalesce(k.revoked_at, 0) \
     ELSE k.revoked_at END, k.expires_at, k.user_id, coalesce(u.team_id, k.team_id), \
     CASE WHEN k.user_id IS NULL THEN k.role ELSE coalesce(u.role, 'viewer') END \
     FROM api_keys k LEFT JOIN users u ON u.id = k.user_id";
/// The app columns; the fourth is the stored (sealed) secret.
const APP_COLUMNS: &str = "id, app_id, name, secret, scopes, created_at, revoked_at, team_id, role";

fn key_row(r: &Row) -> ApiKey {
    ApiKey {
        id: r.get(0),
        name: r.get(1),
        prefix: r.get(2),
        hash: r.get(3),
        scopes: r.get(4),
        created_at: r.get(5),
        revoked_at: r.get(6),
        expires_at: r.get(7),
        user_id: r.get(8),
        team_id: r.get(9),
        role: Role::from_stored(r.get(10)),
    }
}

/// An app with `secret` in place of the stored one (listing and revoking
/// leave it empty, as SQLite does: a secret that does not open must not
/// keep an app from being listed or revoked).
fn app_row(r: &Row, secret: String) -> App {
    App {
        id: r.get(0),
        app_id: r.get(1),
        name: r.get(2),
        secret,
        scopes: r.get(4),
        created_at: r.get(5),
        revoked_at: r.get(6),
        team_id: r.get(7),
        role: Role::from_stored(r.get(8)),
    }
}

#[async_trait]
impl CredentialStore for PgStore {
    async fn create_key(
        &self,
        name: String,
        prefix: String,
        hash: Vec<u8>,
        scopes: String,
        now: i64,
        expires_at: Option<i64>,
        owner: Owner,
    ) -> StoreResult<i64> {
        let c = self.pg().get().await?;
        let row = c
            .query_one(
                "INSERT INTO api_keys (name, prefix, hash, scopes, created_at, expires_at, \
                 user_id, team_id, role) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id",
                &[
                    &name,
                    &prefix,
                    &hash,
                    &scopes,
                    &now,
                    &expires_at,
                    &owner.user_id,
                    &owner.team_id,
                    &owner.role.as_str(),
                ],
            )
            .await
            .map_err(conflict_or("storing an API key", || {
                format!("API key prefix \"{prefix}\"")
            }))?;
        Ok(row.get(0))
    }

    async fn key_by_prefix(&self, prefix: String) -> StoreResult<Option<ApiKey>> {
        let c = self.pg().get().await?;
        let st = c
            .prepare_cached(&format!("SELECT {KEY_COLUMNS} WHERE k.prefix = $1"))
            .await
            .map_err(PgError::query("preparing an API key lookup"))?;
        let row = c
            .query_opt(&st, &[&prefix])
            .await
            .map_err(PgError::query("looking up an API key"))?;
        Ok(row.as_ref().map(key_row))
    }

    async fn list_keys(&self) -> StoreResult<Vec<ApiKey>> {
        let c = self.pg().get().await?;
        let rows = c
            .query(&format!("SELECT {KEY_COLUMNS} ORDER BY k.id"), &[])
            .await
            .map_err(PgError::query("listing API keys"))?;
        Ok(rows.iter().map(key_row).collect())
    }

    async fn revoke_key(&self, id: i64, now: i64) -> StoreResult<ApiKey> {
        let c = self.pg().get().await?;
        // The first revocation's time stays; the key is answered either way.
        c.execute(
            "UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $2) WHERE id = $1",
            &[&id, &now],
        )
        .await
        .map_err(PgError::query("revoking an API key"))?;
        let row = c
            .query_opt(&format!("SELECT {KEY_COLUMNS} WHERE k.id = $1"), &[&id])
            .await
            .map_err(PgError::query("reading a revoked API key"))?;
        row.as_ref()
            .map(key_row)
            .ok_or_else(|| StoreError::NotFound(format!("API key {id}")))
    }

    async fn create_app(
        &self,
        app_id: String,
        name: String,
        secret: String,
        scopes: String,
        now: i64,
        owner: Owner,
    ) -> StoreResult<i64> {
        let sealed = self.seal().seal(&app_id, &secret);
        let c = self.pg().get().await?;
        let row = c
            .query_one(
                "INSERT INTO apps (app_id, name, secret, scopes, created_at, team_id, role) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
                &[
                    &app_id,
                    &name,
                    &sealed,
                    &scopes,
                    &now,
                    &owner.team_id,
                    &owner.role.as_str(),
                ],
            )
            .await
            .map_err(conflict_or("storing an app", || {
                format!("app id \"{app_id}\"")
            }))?;
        Ok(row.get(0))
    }

    async fn app_by_app_id(&self, app_id: String) -> StoreResult<Option<App>> {
        let c = self.pg().get().await?;
        let st = c
            .prepare_cached(&format!("SELECT {APP_COLUMNS} FROM apps WHERE app_id = $1"))
            .await
            .map_err(PgError::query("preparing an app lookup"))?;
        let Some(row) = c
            .query_opt(&st, &[&app_id])
            .await
            .map_err(PgError::query("looking up an app"))?
        else {
            return Ok(None);
        };
        let stored: String = row.get(3);
        let secret = self
            .seal()
            .open(&app_id, &stored)
            .map_err(|e| StoreError::Database(Box::new(e)))?;
        Ok(Some(app_row(&row, secret)))
    }

    async fn list_apps(&self) -> StoreResult<Vec<App>> {
        let c = self.pg().get().await?;
        let rows = c
            .query(&format!("SELECT {APP_COLUMNS} FROM apps ORDER BY id"), &[])
            .await
            .map_err(PgError::query("listing apps"))?;
        Ok(rows.iter().map(|r| app_row(r, String::new())).collect())
    }

    async fn revoke_app(&self, which: String, now: i64) -> StoreResult<App> {
        let c = self.pg().get().await?;
        // By public id or by number, as on SQLite; the first revocation's
        // time stays.
        let row = c
            .query_opt(
                &format!(
                    "UPDATE apps SET revoked_at = COALESCE(revoked_at, $2) \
                     WHERE app_id = $1 OR id::text = $1 RETURNING {APP_COLUMNS}"
                ),
                &[&which, &now],
            )
            .await
            .map_err(PgError::query("revoking an app"))?;
        row.map(|r| app_row(&r, String::new()))
            .ok_or_else(|| StoreError::NotFound(format!("app \"{which}\"")))
    }

    async fn record_signature(&self, signature: String, ts: i64) -> StoreResult<bool> {
        let c = self.pg().get().await?;
        let st = c
            .prepare_cached(
                "INSERT INTO seen_signatures (signature, ts) VALUES ($1, $2) \
                 ON CONFLICT (signature) DO NOTHING",
            )
            .await
            .map_err(PgError::query("preparing a signature record"))?;
        let n = c
            .execute(&st, &[&signature, &ts])
            .await
            .map_err(PgError::query("recording a signature"))?;
        Ok(n == 1)
    }

    async fn recent_signatures(&self, since: i64) -> StoreResult<Vec<(String, i64)>> {
        let c = self.pg().get().await?;
        let rows = c
            .query(
                "SELECT signature, ts FROM seen_signatures WHERE ts >= $1",
                &[&since],
            )
            .await
            .map_err(PgError::query("reading recent signatures"))?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    }

    async fn record_credential_use(&self, kind: String, ident: String, at: i64) -> StoreResult<()> {
        let c = self.pg().get().await?;
        let st = c
            .prepare_cached(
                "INSERT INTO credential_use (kind, ident, last_used_at) VALUES ($1, $2, $3) \
                 ON CONFLICT (kind, ident) DO UPDATE SET last_used_at = \
                 GREATEST(credential_use.last_used_at, excluded.last_used_at)",
            )
            .await
            .map_err(PgError::query("preparing a credential use record"))?;
        c.execute(&st, &[&kind, &ident, &at])
            .await
            .map_err(PgError::query("recording a credential use"))?;
        Ok(())
    }

    async fn credential_uses(&self) -> StoreResult<Vec<(String, String, i64)>> {
        let c = self.pg().get().await?;
        let rows = c
            .query("SELECT kind, ident, last_used_at FROM credential_use", &[])
            .await
            .map_err(PgError::query("reading credential uses"))?;
        Ok(rows
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
            .collect())
    }
}
