//! `/api/v1/users`: admin UI accounts (admin scope). Passwords are hashed
//! with Argon2id off the async threads.

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::auth::{Principal, Scope};
use super::error::{ApiError, ApiJson, ErrorBody};
use crate::app::SharedApp;
use crate::store::{unix_now, users};

/// Shortest accepted password.
pub const MIN_PASSWORD: usize = 8;

/// Body of `POST /api/v1/users`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewUser {
    pub name: String,
    /// At least 8 characters.
    pub password: String,
}

/// Body of `PUT /api/v1/users/{name}/password`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewPassword {
    pub password: String,
}

/// A user as shown (never the hash).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct UserView {
    pub id: i64,
    pub name: String,
    pub created_at: i64,
}

/// Argon2id PHC string of `password`.
pub fn hash_password(password: &str) -> Result<String, String> {
    let mut bytes = [0u8; 16];
    getrandom::getrandom(&mut bytes).map_err(|e| e.to_string())?;
    let salt = SaltString::encode_b64(&bytes).map_err(|e| e.to_string())?;
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| e.to_string())
}

/// True when `password` matches the stored hash (for the admin UI sign-in).
pub fn verify_password(password: &str, hash: &str) -> bool {
    PasswordHash::new(hash)
        .map(|h| {
            Argon2::default()
                .verify_password(password.as_bytes(), &h)
                .is_ok()
        })
        .unwrap_or(false)
}

fn check_password(p: &str) -> Result<(), ApiError> {
    if p.chars().count() < MIN_PASSWORD || p.len() > 1024 {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "weak_password",
            format!("passwords must be {MIN_PASSWORD} to 1024 characters"),
        )
        .field("password"));
    }
    Ok(())
}

async fn hashed(password: String) -> Result<String, ApiError> {
    tokio::task::spawn_blocking(move || hash_password(&password))
        .await
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()))?
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", e))
}

/// Adds an admin UI user.
#[utoipa::path(
    post, path = "/api/v1/users", tag = "users", request_body = NewUser,
    responses(
        (status = 201, description = "Created", body = UserView),
        (status = 401, description = "Missing or invalid credentials", body = ErrorBody),
        (status = 403, description = "Lacks `admin`", body = ErrorBody),
        (status = 409, description = "Name taken (`conflict`)", body = ErrorBody),
        (status = 422, description = "`invalid_name`, `weak_password`, `invalid_body`", body = ErrorBody),
    ),
    security(("api_key" = []), ("app_id" = [], "app_timestamp" = [], "app_signature" = []))
)]
pub async fn create(
    State(app): State<SharedApp>,
    Extension(p): Extension<Principal>,
    ApiJson(req): ApiJson<NewUser>,
) -> Result<(StatusCode, Json<UserView>), ApiError> {
    p.require(Scope::Admin)?;
    let name = req.name.trim().to_string();
    if name.is_empty()
        || name.len() > 64
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-@".contains(c))
    {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_name",
            "user names are 1 to 64 of A-Z a-z 0-9 . _ - @",
        )
        .field("name"));
    }
    check_password(&req.password)?;
    let hash = hashed(req.password).await?;
    let now = unix_now();
    let n = name.clone();
    let id = app
        .store
        .write(move |c| users::insert(c, &n, &hash, now))
        .await?;
    tracing::info!(user = %name, by = %p.who, "user added");
    Ok((
        StatusCode::CREATED,
        Json(UserView {
            id,
            name,
            created_at: now,
        }),
    ))
}

/// Sets a user's password.
#[utoipa::path(
    put, path = "/api/v1/users/{name}/password", tag = "users", request_body = NewPassword,
    params(("name" = String, Path, description = "User name")),
    responses(
        (status = 204, description = "Changed"),
        (status = 401, description = "Missing or invalid credentials", body = ErrorBody),
        (status = 403, description = "Lacks `admin`", body = ErrorBody),
        (status = 404, description = "No such user", body = ErrorBody),
        (status = 422, description = "`weak_password`, `invalid_body`", body = ErrorBody),
    ),
    security(("api_key" = []), ("app_id" = [], "app_timestamp" = [], "app_signature" = []))
)]
pub async fn set_password(
    State(app): State<SharedApp>,
    Extension(p): Extension<Principal>,
    Path(name): Path<String>,
    ApiJson(req): ApiJson<NewPassword>,
) -> Result<StatusCode, ApiError> {
    p.require(Scope::Admin)?;
    check_password(&req.password)?;
    let hash = hashed(req.password).await?;
    let now = unix_now();
    let n = name.clone();
    app.store
        .write(move |c| users::set_password(c, &n, &hash, now))
        .await?;
    tracing::info!(user = %name, by = %p.who, "password changed");
    Ok(StatusCode::NO_CONTENT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_verify() {
        let h = hash_password("correct horse").unwrap();
        assert!(h.starts_with("$argon2id$"));
        assert!(verify_password("correct horse", &h));
        assert!(!verify_password("wrong horse", &h));
    }
}
