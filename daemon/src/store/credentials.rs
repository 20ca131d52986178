//! API keys, apps, the signatures apps have used and when credentials were
//! last used.

use async_trait::async_trait;

use crate::store::sqlite::keys::{ApiKey, App, Owner};
use crate::store::sqlite::StoreResult;

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
