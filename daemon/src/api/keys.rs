//! `/api/v1/keys` and `/api/v1/apps`: credentials management (admin scope).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::auth::{self, parse_scopes, scopes_to_string, Principal, Scope};
use super::error::{ApiError, ApiJson, ErrorBody};
use crate::app::SharedApp;
use crate::store::keys;
use crate::store::unix_now;

/// Body of `POST /api/v1/keys` and `POST /api/v1/apps`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewCredential {
    /// What the credential is for (shown in lists and logs).
    pub name: String,
    /// Any of `links:write`, `links:read`, `stats:read`, `admin`.
    pub scopes: Vec<String>,
}

/// A key as listed (never with its secret).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct KeyView {
    pub id: i64,
    pub name: String,
    /// First characters after `slk_`, to recognise a key.
    pub prefix: String,
    pub scopes: Vec<String>,
    pub created_at: i64,
    pub revoked_at: Option<i64>,
}

/// A new key: the secret is shown this once.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct CreatedKey {
    #[serde(flatten)]
    pub key: KeyView,
    /// Send as `X-Api-Key`. Not stored; cannot be shown again.
    pub secret: String,
}

/// A list of keys.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct KeyList {
    pub keys: Vec<KeyView>,
}

/// An app as listed (never with its secret).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct AppView {
    pub id: i64,
    /// Sent as `X-App-Id`.
    pub app_id: String,
    pub name: String,
    pub scopes: Vec<String>,
    pub created_at: i64,
    pub revoked_at: Option<i64>,
}

/// A new app: the secret is shown this once.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct CreatedApp {
    #[serde(flatten)]
    pub app: AppView,
    /// HMAC key for `X-Signature`.
    pub secret: String,
}

/// A list of apps.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct AppList {
    pub apps: Vec<AppView>,
}

fn split(scopes: &str) -> Vec<String> {
    scopes.split(',').map(str::to_string).collect()
}

fn key_view(k: &keys::ApiKey) -> KeyView {
    KeyView {
        id: k.id,
        name: k.name.clone(),
        prefix: k.prefix.clone(),
        scopes: split(&k.scopes),
        created_at: k.created_at,
        revoked_at: k.revoked_at,
    }
}

fn app_view(a: &keys::App) -> AppView {
    AppView {
        id: a.id,
        app_id: a.app_id.clone(),
        name: a.name.clone(),
        scopes: split(&a.scopes),
        created_at: a.created_at,
        revoked_at: a.revoked_at,
    }
}

fn check_new(req: &NewCredential) -> Result<String, ApiError> {
    let name = req.name.trim();
    if name.is_empty() || name.len() > 100 || name.chars().any(char::is_control) {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_name",
            "name must be 1 to 100 characters without control characters",
        )
        .field("name"));
    }
    let scopes = parse_scopes(&req.scopes).map_err(|m| {
        ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_scopes", m).field("scopes")
    })?;
    Ok(scopes_to_string(&scopes))
}

/// Creates an API key.
#[utoipa::path(
    post, path = "/api/v1/keys", tag = "keys", request_body = NewCredential,
    responses(
        (status = 201, description = "Created; the secret is in this reply only", body = CreatedKey),
        (status = 401, description = "Missing or invalid credentials", body = ErrorBody),
        (status = 403, description = "Lacks `admin`", body = ErrorBody),
        (status = 422, description = "`invalid_name`, `invalid_scopes`, `invalid_body`", body = ErrorBody),
    ),
    security(("api_key" = []), ("app_id" = [], "app_timestamp" = [], "app_signature" = []))
)]
pub async fn create_key(
    State(app): State<SharedApp>,
    Extension(p): Extension<Principal>,
    ApiJson(req): ApiJson<NewCredential>,
) -> Result<(StatusCode, Json<CreatedKey>), ApiError> {
    p.require(Scope::Admin)?;
    let scopes = check_new(&req)?;
    let (secret, prefix, hash) = auth::new_api_key();
    let name = req.name.trim().to_string();
    let now = unix_now();
    let (n, pf, h, s) = (name.clone(), prefix.clone(), hash.clone(), scopes.clone());
    let id = app
        .store
        .write(move |c| keys::insert_key(c, &n, &pf, &h, &s, now))
        .await?;
    tracing::info!(key = id, name = %name, by = %p.who, "API key created");
    Ok((
        StatusCode::CREATED,
        Json(CreatedKey {
            key: KeyView {
                id,
                name,
                prefix,
                scopes: split(&scopes),
                created_at: now,
                revoked_at: None,
            },
            secret,
        }),
    ))
}

/// Lists API keys.
#[utoipa::path(
    get, path = "/api/v1/keys", tag = "keys",
    responses(
        (status = 200, description = "All keys, revoked ones included", body = KeyList),
        (status = 401, description = "Missing or invalid credentials", body = ErrorBody),
        (status = 403, description = "Lacks `admin`", body = ErrorBody),
    ),
    security(("api_key" = []), ("app_id" = [], "app_timestamp" = [], "app_signature" = []))
)]
pub async fn list_keys(
    State(app): State<SharedApp>,
    Extension(p): Extension<Principal>,
) -> Result<Json<KeyList>, ApiError> {
    p.require(Scope::Admin)?;
    let keys = app.store.read(keys::list_keys).await?;
    Ok(Json(KeyList {
        keys: keys.iter().map(key_view).collect(),
    }))
}

/// Revokes an API key; it stops working at once.
#[utoipa::path(
    delete, path = "/api/v1/keys/{id}", tag = "keys",
    params(("id" = i64, Path, description = "Key id")),
    responses(
        (status = 204, description = "Revoked"),
        (status = 401, description = "Missing or invalid credentials", body = ErrorBody),
        (status = 403, description = "Lacks `admin`", body = ErrorBody),
        (status = 404, description = "No such key", body = ErrorBody),
    ),
    security(("api_key" = []), ("app_id" = [], "app_timestamp" = [], "app_signature" = []))
)]
pub async fn revoke_key(
    State(app): State<SharedApp>,
    Extension(p): Extension<Principal>,
    Path(id): Path<i64>,
) -> Result<StatusCode, ApiError> {
    p.require(Scope::Admin)?;
    let now = unix_now();
    let key = app
        .store
        .write(move |c| keys::revoke_key(c, id, now))
        .await?;
    app.auth.forget_key(&key.prefix);
    tracing::info!(key = id, by = %p.who, "API key revoked");
    Ok(StatusCode::NO_CONTENT)
}

/// Creates an app for signed requests.
#[utoipa::path(
    post, path = "/api/v1/apps", tag = "keys", request_body = NewCredential,
    responses(
        (status = 201, description = "Created; the secret is in this reply only", body = CreatedApp),
        (status = 401, description = "Missing or invalid credentials", body = ErrorBody),
        (status = 403, description = "Lacks `admin`", body = ErrorBody),
        (status = 422, description = "`invalid_name`, `invalid_scopes`, `invalid_body`", body = ErrorBody),
    ),
    security(("api_key" = []), ("app_id" = [], "app_timestamp" = [], "app_signature" = []))
)]
pub async fn create_app(
    State(app): State<SharedApp>,
    Extension(p): Extension<Principal>,
    ApiJson(req): ApiJson<NewCredential>,
) -> Result<(StatusCode, Json<CreatedApp>), ApiError> {
    p.require(Scope::Admin)?;
    let scopes = check_new(&req)?;
    let (app_id, secret) = auth::new_app_credentials();
    let name = req.name.trim().to_string();
    let now = unix_now();
    let (a, n, s, sc) = (app_id.clone(), name.clone(), secret.clone(), scopes.clone());
    let id = app
        .store
        .write(move |c| keys::insert_app(c, &a, &n, &s, &sc, now))
        .await?;
    tracing::info!(app = %app_id, name = %name, by = %p.who, "app created");
    Ok((
        StatusCode::CREATED,
        Json(CreatedApp {
            app: AppView {
                id,
                app_id,
                name,
                scopes: split(&scopes),
                created_at: now,
                revoked_at: None,
            },
            secret,
        }),
    ))
}

/// Lists apps.
#[utoipa::path(
    get, path = "/api/v1/apps", tag = "keys",
    responses(
        (status = 200, description = "All apps, revoked ones included", body = AppList),
        (status = 401, description = "Missing or invalid credentials", body = ErrorBody),
        (status = 403, description = "Lacks `admin`", body = ErrorBody),
    ),
    security(("api_key" = []), ("app_id" = [], "app_timestamp" = [], "app_signature" = []))
)]
pub async fn list_apps(
    State(app): State<SharedApp>,
    Extension(p): Extension<Principal>,
) -> Result<Json<AppList>, ApiError> {
    p.require(Scope::Admin)?;
    let apps = app.store.read(keys::list_apps).await?;
    Ok(Json(AppList {
        apps: apps.iter().map(app_view).collect(),
    }))
}

/// Revokes an app (by app id or numeric id).
#[utoipa::path(
    delete, path = "/api/v1/apps/{app_id}", tag = "keys",
    params(("app_id" = String, Path, description = "App id (`app_...`) or numeric id")),
    responses(
        (status = 204, description = "Revoked"),
        (status = 401, description = "Missing or invalid credentials", body = ErrorBody),
        (status = 403, description = "Lacks `admin`", body = ErrorBody),
        (status = 404, description = "No such app", body = ErrorBody),
    ),
    security(("api_key" = []), ("app_id" = [], "app_timestamp" = [], "app_signature" = []))
)]
pub async fn revoke_app(
    State(app): State<SharedApp>,
    Extension(p): Extension<Principal>,
    Path(which): Path<String>,
) -> Result<StatusCode, ApiError> {
    p.require(Scope::Admin)?;
    let now = unix_now();
    let revoked = app
        .store
        .write(move |c| keys::revoke_app(c, &which, now))
        .await?;
    app.auth.forget_app(&revoked.app_id);
    tracing::info!(app = %revoked.app_id, by = %p.who, "app revoked");
    Ok(StatusCode::NO_CONTENT)
}
