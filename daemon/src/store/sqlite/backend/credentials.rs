//! [`CredentialStore`], [`UserStore`] and [`TeamStore`] over SQLite: one
//! job each.

use async_trait::async_trait;

use crate::access::Role;
use crate::store::sqlite::{keys, teams, users, SqliteStore};
use crate::store::{
    ApiKey, App, CredentialStore, Owner, StoreResult, Team, TeamStore, User, UserStore,
};

#[async_trait]
impl CredentialStore for SqliteStore {
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
        self.write(move |c| {
            keys::insert_key(c, &name, &prefix, &hash, &scopes, now, expires_at, owner)
        })
        .await
    }

    async fn key_by_prefix(&self, prefix: String) -> StoreResult<Option<ApiKey>> {
        self.read(move |c| keys::key_by_prefix(c, &prefix)).await
    }

    async fn list_keys(&self) -> StoreResult<Vec<ApiKey>> {
        self.read(keys::list_keys).await
    }

    async fn revoke_key(&self, id: i64, now: i64) -> StoreResult<ApiKey> {
        self.write(move |c| keys::revoke_key(c, id, now)).await
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
        self.write(move |c| keys::insert_app(c, &app_id, &name, &secret, &scopes, now, owner))
            .await
    }

    async fn app_by_app_id(&self, app_id: String) -> StoreResult<Option<App>> {
        self.read(move |c| keys::app_by_app_id(c, &app_id)).await
    }

    async fn list_apps(&self) -> StoreResult<Vec<App>> {
        self.read(keys::list_apps).await
    }

    async fn revoke_app(&self, which: String, now: i64) -> StoreResult<App> {
        self.write(move |c| keys::revoke_app(c, &which, now)).await
    }

    async fn record_signature(&self, signature: String, ts: i64) -> StoreResult<bool> {
        self.write(move |c| keys::record_signature(c, &signature, ts))
            .await
    }

    async fn recent_signatures(&self, since: i64) -> StoreResult<Vec<(String, i64)>> {
        self.read(move |c| keys::recent_signatures(c, since)).await
    }

    async fn record_credential_use(&self, kind: String, ident: String, at: i64) -> StoreResult<()> {
        self.write(move |c| keys::record_use(c, &kind, &ident, at))
            .await
    }

    async fn credential_uses(&self) -> StoreResult<Vec<(String, String, i64)>> {
        self.read(keys::last_uses).await
    }
}

#[async_trait]
impl UserStore for SqliteStore {
    async fn add_user(
        &self,
        name: String,
        password_hash: String,
        now: i64,
        team_id: i64,
        role: Role,
    ) -> StoreResult<i64> {
        self.write(move |c| users::insert(c, &name, &password_hash, now, team_id, role))
            .await
    }

    async fn set_user_membership(
        &self,
        name: String,
        team_id: i64,
        role: Role,
    ) -> StoreResult<User> {
        self.write(move |c| users::set_membership(c, &name, team_id, role))
            .await
    }

    async fn set_user_password(
        &self,
        name: String,
        password_hash: String,
        now: i64,
    ) -> StoreResult<()> {
        self.write(move |c| users::set_password(c, &name, &password_hash, now))
            .await
    }

    async fn list_users(&self) -> StoreResult<Vec<User>> {
        self.read(users::list).await
    }

    async fn delete_user(&self, name: String, now: i64) -> StoreResult<()> {
        self.write(move |c| users::delete(c, &name, now)).await
    }

    async fn user_by_name(&self, name: String) -> StoreResult<Option<User>> {
        self.read(move |c| users::by_name(c, &name)).await
    }
}

#[async_trait]
impl TeamStore for SqliteStore {
    async fn add_team(&self, name: String, now: i64) -> StoreResult<Team> {
        self.write(move |c| teams::insert(c, &name, now)).await
    }

    async fn list_teams(&self) -> StoreResult<Vec<Team>> {
        self.read(teams::list).await
    }

    async fn team_by_name(&self, name: String) -> StoreResult<Option<Team>> {
        self.read(move |c| teams::by_name(c, &name)).await
    }

    async fn delete_team(&self, id: i64) -> StoreResult<()> {
        self.write(move |c| teams::delete(c, id)).await
    }
}
