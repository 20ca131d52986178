//! API keys, apps, the signatures apps have used and when credentials were
//! last used.

use async_trait::async_trait;

use crate::access::Role;
use crate::store::{Owner, StoreResult};

/// A stored API key (the secret itself is never stored).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiKey {
    /// Row id, what the API and CLI revoke by.
    pub id: i64,
    /// What the key is for.
    pub name: String,
    /// Public part of the secret, used to find the row.
    pub prefix: String,
    /// SHA-256 of the whole secret.
    pub hash: Vec<u8>,
    /// Space-free comma-separated scopes.
    pub scopes: String,
    /// Unix seconds.
    pub created_at: i64,
    /// Unix seconds, once revoked; the row stays for the record.
    pub revoked_at: Option<i64>,
    /// Unix seconds after which the key is refused; `None`: never.
    pub expires_at: Option<i64>,
    /// The user the key acts for; `None` for a key made before teams.
    pub user_id: Option<i64>,
    /// The team the key acts in: its user's, read with the key.
    pub team_id: i64,
    /// The most the key may do: its user's role, read with the key (so a
    /// role change reaches the key when the cached row is re-read).
    pub role: Role,
}

/// An app allowed to sign requests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct App {
    /// Row id, accepted by revoke like the app id.
    pub id: i64,
    /// Public identifier sent in `X-App-Id`.
    pub app_id: String,
    /// What the app is.
    pub name: String,
    /// The shared HMAC secret, opened when the app is read by its app id
    /// (the database keeps it sealed; see
    /// [`crate::app_secret::AppSecret::from_stored`]); empty when apps
    /// are listed or revoked.
    pub secret: String,
    /// Space-free comma-separated scopes.
    pub scopes: String,
    /// Unix seconds.
    pub created_at: i64,
    /// Unix seconds, once revoked; the row stays for the record.
    pub revoked_at: Option<i64>,
    /// The team the app acts in.
    pub team_id: i64,
    /// The most the app may do.
    pub role: Role,
}

/// Where credentials are kept.
#[async_trait]
pub trait CredentialStore: Send + Sync {
    /// Stores a new API key (only its hash) for `owner`; returns its id.
    #[allow(clippy::too_many_arguments)]
    async fn create_key(
        &self,
        name: String,
        prefix: String,
        hash: Vec<u8>,
        scopes: String,
        now: i64,
        expires_at: Option<i64>,
        owner: Owner,
    ) -> StoreResult<i64>;

    /// The key whose secret starts with `prefix`, with its user's current
    /// team and role (revoked when its user is gone).
    async fn key_by_prefix(&self, prefix: String) -> StoreResult<Option<ApiKey>>;

    /// Every key, oldest first.
    async fn list_keys(&self) -> StoreResult<Vec<ApiKey>>;

    /// Marks key `id` revoked; returns it (`NotFound` when there is none).
    async fn revoke_key(&self, id: i64, now: i64) -> StoreResult<ApiKey>;

    /// Stores a new app of `owner` (its team and role); `secret` in clear,
    /// sealed on its way in. Returns its id.
    async fn create_app(
        &self,
        app_id: String,
        name: String,
        secret: String,
        scopes: String,
        now: i64,
        owner: Owner,
    ) -> StoreResult<i64>;

    /// The app with this public id, its secret opened.
    async fn app_by_app_id(&self, app_id: String) -> StoreResult<Option<App>>;

    /// Every app, oldest first (no secrets).
    async fn list_apps(&self) -> StoreResult<Vec<App>>;

    /// Marks the app `which` (public id or number) revoked; returns it.
    async fn revoke_app(&self, which: String, now: i64) -> StoreResult<App>;

    /// Records a request signature made at `ts`; `false` when it was seen
    /// before (a replay).
    async fn record_signature(&self, signature: String, ts: i64) -> StoreResult<bool>;

    /// Signatures recorded at or after `since`, with their times.
    async fn recent_signatures(&self, since: i64) -> StoreResult<Vec<(String, i64)>>;

    /// Records that a credential (`kind` `key` or `app`) was used at `at`.
    async fn record_credential_use(&self, kind: String, ident: String, at: i64) -> StoreResult<()>;

    /// `(kind, ident, at)` of the last use of every credential.
    async fn credential_uses(&self) -> StoreResult<Vec<(String, String, i64)>>;
}
