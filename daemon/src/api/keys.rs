//! `/api/v1/keys` and `/api/v1/apps`: credentials management (admin scope),
//! JSON over [`crate::credentials`].

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::error::{ApiError, ErrorBody};
use super::extract::ApiJson;
use crate::access::{Role, Scope};
use crate::app::SharedApp;
use crate::auth::Principal;
use crate::credentials::{self, AppInfo, CredentialError, KeyInfo};
use crate::timestamp::Timestamp;

/// Body of `POST /api/v1/keys` and `POST /api/v1/apps`.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewCredential {
    /// What the credential is for (shown in lists and logs): 1 to 100
    /// characters, no control characters, no surrounding space.
    #[schema(
        min_length = 1,
        max_length = 100,
        pattern = r"^[^\s\x00-\x1f\x7f-\x9f]([^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f])?$"
    )]
    pub name: String,
    /// Any of `links:write`, `links:read`, `stats:read`, `admin`.
    #[schema(schema_with = scopes_schema)]
    pub scopes: Vec<String>,
    /// Keys only: when the key stops working (Unix seconds or RFC 3339, in
    /// the future); absent: never.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = crate::timestamp::input_or_null_schema)]
    pub expires_at: Option<crate::links::TimeInput>,
    /// Keys only: the user the key acts for (by name); the key follows
    /// that user's team and role and never does more than the role allows.
    /// Absent: a key of its own in the creator's team, with the role its
    /// scopes give.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
}

/// Body of `POST /api/v1/apps`: a credential without an expiry.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewApp {
    /// What the app is (shown in lists and logs): 1 to 100 characters, no
    /// control characters, no surrounding space.
    #[schema(
        min_length = 1,
        max_length = 100,
        pattern = r"^[^\s\x00-\x1f\x7f-\x9f]([^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f])?$"
    )]
    pub name: String,
    /// Any of `links:write`, `links:read`, `stats:read`, `admin`.
    #[schema(schema_with = scopes_schema)]
    pub scopes: Vec<String>,
    /// Refused with a message of its own: apps are revoked, never expire.
    #[serde(default, skip_serializing)]
    #[schema(ignore)]
    pub expires_at: Option<serde_json::Value>,
}

/// Scope names (`access::parse_scopes`), at least one.
fn scopes_schema() -> utoipa::openapi::schema::Schema {
    use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Type};
    let names: Vec<serde_json::Value> = Scope::ALL.iter().map(|s| s.as_str().into()).collect();
    ArrayBuilder::new()
        .items(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .enum_values(Some(names)),
        )
        .min_items(Some(1))
        .description(Some(
            "Any of `links:write`, `links:read`, `stats:read`, `admin`",
        ))
        .into()
}

impl NewCredential {
    /// The expiry in Unix seconds, or the API error naming the field.
    fn expiry(&self) -> Result<Option<i64>, ApiError> {
        self.expires_at
            .as_ref()
            .map(|t| {
                t.to_unix().map_err(|m| {
                    ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_expiry", m)
                        .field("expires_at")
                })
            })
            .transpose()
    }
}

/// A key as listed (never with its secret).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct KeyView {
    /// Numeric id, to revoke the key.
    pub id: i64,
    /// What the key is for.
    pub name: String,
    /// First characters after `slk_`, to recognise a key.
    pub prefix: String,
    /// What the key may do.
    pub scopes: Vec<String>,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it was revoked, once revoked.
    pub revoked_at: Option<Timestamp>,
    /// When the key starts being refused; absent: never.
    pub expires_at: Option<Timestamp>,
    /// The user the key acts for, by id; absent: a key of its own.
    pub user_id: Option<i64>,
    /// The team the key acts in.
    pub team_id: i64,
    /// The most the key may do, whatever its scopes say.
    pub role: Role,
}

/// A new key: the secret is shown this once.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct CreatedKey {
    /// The key as it will be listed.
    #[serde(flatten)]
    pub key: KeyView,
    /// Send as `X-Api-Key`. Not stored; cannot be shown again.
    pub secret: String,
}

/// A list of keys.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct KeyList {
    /// Oldest first.
    pub keys: Vec<KeyView>,
}

/// An app as listed (never with its secret).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct AppView {
    /// Numeric id.
    pub id: i64,
    /// Sent as `X-App-Id`.
    pub app_id: String,
    /// What the app is.
    pub name: String,
    /// What the app may do.
    pub scopes: Vec<String>,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it was revoked, once revoked.
    pub revoked_at: Option<Timestamp>,
}

/// A new app: the secret is shown this once.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct CreatedApp {
    /// The app as it will be listed.
    #[serde(flatten)]
    pub app: AppView,
    /// HMAC key for `X-Signature`.
    pub secret: String,
}

/// A list of apps.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct AppList {
    /// Oldest first.
    pub apps: Vec<AppView>,
}

fn names(scopes: &[Scope]) -> Vec<String> {
    scopes.iter().map(|s| s.as_str().to_string()).collect()
}

impl From<KeyInfo> for KeyView {
    fn from(k: KeyInfo) -> Self {
        KeyView {
            id: k.id,
            name: k.name,
            prefix: k.prefix,
            scopes: names(&k.scopes),
            created_at: k.created_at.into(),
            revoked_at: k.revoked_at.map(Timestamp),
            expires_at: k.expires_at.map(Timestamp),
            user_id: k.user_id,
            team_id: k.team_id,
            role: k.role,
        }
    }
}

impl From<AppInfo> for AppView {
    fn from(a: AppInfo) -> Self {
        AppView {
            id: a.id,
            app_id: a.app_id,
            name: a.name,
            scopes: names(&a.scopes),
            created_at: a.created_at.into(),
            revoked_at: a.revoked_at.map(Timestamp),
        }
    }
}

impl From<CredentialError> for ApiError {
    fn from(e: CredentialError) -> Self {
        let message = e.to_string();
        let invalid = |code, field| {
            ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, code, message).field(field)
        };
        match e {
            CredentialError::InvalidName => invalid("invalid_name", "name"),
            CredentialError::InvalidScopes(_) => invalid("invalid_scopes", "scopes"),
            CredentialError::InvalidExpiry(_) => invalid("invalid_expiry", "expires_at"),
            CredentialError::UnknownUser(_) => {
                ApiError::new(StatusCode::NOT_FOUND, "unknown_user", e.to_string()).field("user")
            }
            CredentialError::Denied(e) => e.into(),
            CredentialError::Store(e) => e.into(),
        }
    }
}

/// Creates an API key.
#[utoipa::path(
    post, path = "/api/v1/keys", tag = "keys", request_body = NewCredential,
    responses(
        (status = 201, description = "Created; the secret is in this reply only", body = CreatedKey),
        (status = 401, description = "Missing or invalid credentials", body = ErrorBody),
        (status = 403, description = "Lacks `admin`", body = ErrorBody),
        (status = 400, description = "Malformed JSON (`invalid_json`)", body = ErrorBody),
        (status = 413, description = "Body too large (`body_too_large`)", body = ErrorBody),
        (status = 415, description = "Body is not `application/json` (`unsupported_media_type`)", body = ErrorBody),
        (status = 404, description = "No such user to make the key for (`unknown_user`)", body = ErrorBody),
        (status = 422, description = "`invalid_name`, `invalid_scopes`, `invalid_expiry`, `invalid_body`", body = ErrorBody),
    ),
    security(("api_key" = []), ("app_id" = [], "app_timestamp" = [], "app_signature" = []))
)]
pub async fn create_key(
    State(app): State<SharedApp>,
    Extension(p): Extension<Principal>,
    ApiJson(req): ApiJson<NewCredential>,
) -> Result<(StatusCode, Json<CreatedKey>), ApiError> {
    let expires_at = req.expiry()?;
    let created = credentials::create_key(
        &app,
        &p,
        &req.name,
        &req.scopes,
        expires_at,
        req.user.as_deref(),
    )
    .await?;
    Ok((
        StatusCode::CREATED,
        Json(CreatedKey {
            key: created.key.into(),
            secret: created.secret,
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
    let keys = credentials::list_keys(&app, &p).await?;
    Ok(Json(KeyList {
        keys: keys.into_iter().map(KeyView::from).collect(),
    }))
}

/// Revokes an API key; it stops working at once.
#[utoipa::path(
    delete, path = "/api/v1/keys/{id}", tag = "keys",
    params(("id" = i64, Path, description = "Key id")),
    responses(
        (status = 400, description = "An id in the path is not an integer (`bad_request`)", body = ErrorBody),
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
    credentials::revoke_key(&app, &p, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Creates an app for signed requests.
#[utoipa::path(
    post, path = "/api/v1/apps", tag = "keys", request_body = NewApp,
    responses(
        (status = 201, description = "Created; the secret is in this reply only", body = CreatedApp),
        (status = 401, description = "Missing or invalid credentials", body = ErrorBody),
        (status = 403, description = "Lacks `admin`", body = ErrorBody),
        (status = 400, description = "Malformed JSON (`invalid_json`)", body = ErrorBody),
        (status = 413, description = "Body too large (`body_too_large`)", body = ErrorBody),
        (status = 415, description = "Body is not `application/json` (`unsupported_media_type`)", body = ErrorBody),
        (status = 422, description = "`invalid_name`, `invalid_scopes`, `invalid_body`", body = ErrorBody),
    ),
    security(("api_key" = []), ("app_id" = [], "app_timestamp" = [], "app_signature" = []))
)]
pub async fn create_app(
    State(app): State<SharedApp>,
    Extension(p): Extension<Principal>,
    ApiJson(req): ApiJson<NewApp>,
) -> Result<(StatusCode, Json<CreatedApp>), ApiError> {
    if req.expires_at.is_some() {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_expiry",
            "apps do not expire: revoke them instead",
        )
        .field("expires_at"));
    }
    let created = credentials::create_app(&app, &p, &req.name, &req.scopes).await?;
    Ok((
        StatusCode::CREATED,
        Json(CreatedApp {
            app: created.app.into(),
            secret: created.secret.reveal().to_string(),
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
    let apps = credentials::list_apps(&app, &p).await?;
    Ok(Json(AppList {
        apps: apps.into_iter().map(AppView::from).collect(),
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
    credentials::revoke_app(&app, &p, &which).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::ScopeError;
    use crate::auth::AuthError;
    use crate::store::StoreError;

    #[test]
    fn credential_errors_keep_their_statuses_codes_and_fields() {
        let cases = [
            (
                CredentialError::InvalidName,
                422,
                "invalid_name",
                Some("name"),
            ),
            (
                CredentialError::InvalidScopes(ScopeError::Empty),
                422,
                "invalid_scopes",
                Some("scopes"),
            ),
            (
                CredentialError::Denied(AuthError::InsufficientScope(Scope::Admin)),
                403,
                "insufficient_scope",
                None,
            ),
            (
                CredentialError::Store(StoreError::NotFound("API key 9".into())),
                404,
                "not_found",
                None,
            ),
        ];
        for (e, status, code, field) in cases {
            let api = ApiError::from(e);
            assert_eq!(
                (api.status.as_u16(), api.code, api.field.as_deref()),
                (status, code, field)
            );
        }
        let e = ApiError::from(CredentialError::InvalidScopes(ScopeError::Unknown(
            "x".into(),
        )));
        assert_eq!(
            e.message,
            "unknown scope \"x\" (known: links:write, links:read, stats:read, admin)"
        );
    }
}
