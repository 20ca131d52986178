//! `/api/v1/users`: admin UI accounts (admin scope), JSON over
//! [`crate::users`].

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
use crate::teams;
use crate::timestamp::Timestamp;
use crate::users::{self, Account, UserError};

/// Body of `POST /api/v1/users`.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewUser {
    /// Sign-in name: 1 to 64 of `A-Z a-z 0-9 . _ - @`.
    #[schema(pattern = r"^[A-Za-z0-9._@-]{1,64}$")]
    pub name: String,
    /// 8 to 1024 characters.
    #[schema(min_length = 8, max_length = 1024)]
    pub password: String,
    /// The team's name; absent: `default`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub team: Option<String>,
    /// `admin`, `member` or `viewer`; absent: `admin` (what every user
    /// was before teams).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<Role>,
}

/// Body of `PUT /api/v1/users/{name}/password`.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewPassword {
    /// 8 to 1024 characters.
    #[schema(min_length = 8, max_length = 1024)]
    pub password: String,
}

/// A user as shown (never the hash).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct UserView {
    /// Numeric id.
    pub id: i64,
    /// Sign-in name.
    pub name: String,
    /// When it was created.
    pub created_at: Timestamp,
    /// The user's team, by id.
    pub team_id: i64,
    /// The user's team, by name.
    pub team: String,
    /// What the user (and their keys) may do.
    pub role: Role,
}

impl UserView {
    /// The view of `a`, a member of the team named `team`.
    pub fn new(a: Account, team: String) -> Self {
        UserView {
            id: a.id,
            name: a.name,
            created_at: a.created_at.into(),
            team_id: a.team_id,
            team,
            role: a.role,
        }
    }
}

impl From<UserError> for ApiError {
    fn from(e: UserError) -> Self {
        let message = e.to_string();
        let invalid = |code, field| {
            ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, code, message).field(field)
        };
        match e {
            UserError::InvalidName => invalid("invalid_name", "name"),
            UserError::WeakPassword => invalid("weak_password", "password"),
            UserError::Hashing(m) => {
                ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", m)
            }
            UserError::Denied(e) => e.into(),
            UserError::Store(e) => e.into(),
        }
    }
}

/// Adds an admin UI user.
#[utoipa::path(
    post, path = "/api/v1/users", operation_id = "create_user", tag = "users", request_body = NewUser,
    responses(
        (status = 201, description = "Created", body = UserView),
        (status = 401, description = "Missing or invalid credentials", body = ErrorBody),
        (status = 403, description = "Lacks `admin`", body = ErrorBody),
        (status = 409, description = "Name taken (`conflict`)", body = ErrorBody),
        (status = 400, description = "Malformed JSON (`invalid_json`)", body = ErrorBody),
        (status = 413, description = "Body too large (`body_too_large`)", body = ErrorBody),
        (status = 415, description = "Body is not `application/json` (`unsupported_media_type`)", body = ErrorBody),
        (status = 404, description = "No such team (`unknown_team`)", body = ErrorBody),
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
    let team = teams::find(&app, req.team.as_deref().unwrap_or("default")).await?;
    let role = req.role.unwrap_or(Role::Admin);
    let user = users::create(&app.store, &p, &req.name, req.password, team.id, role).await?;
    Ok((StatusCode::CREATED, Json(UserView::new(user, team.name))))
}

/// Sets a user's password.
#[utoipa::path(
    put, path = "/api/v1/users/{name}/password", operation_id = "set_user_password", tag = "users", request_body = NewPassword,
    params(("name" = String, Path, description = "User name")),
    responses(
        (status = 204, description = "Changed"),
        (status = 401, description = "Missing or invalid credentials", body = ErrorBody),
        (status = 403, description = "Lacks `admin`", body = ErrorBody),
        (status = 404, description = "No such user", body = ErrorBody),
        (status = 400, description = "Malformed JSON (`invalid_json`)", body = ErrorBody),
        (status = 413, description = "Body too large (`body_too_large`)", body = ErrorBody),
        (status = 415, description = "Body is not `application/json` (`unsupported_media_type`)", body = ErrorBody),
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
    users::set_password(&app.store, &p, &name, req.password).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Every admin UI user.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct UserList {
    /// By name.
    pub users: Vec<UserView>,
}

/// Lists the admin UI users.
#[utoipa::path(
    get, path = "/api/v1/users", operation_id = "list_users", tag = "users",
    responses(
        (status = 200, description = "Every user, by name", body = UserList),
        (status = 401, description = "Missing or invalid credentials", body = ErrorBody),
        (status = 403, description = "Lacks `admin`", body = ErrorBody),
    ),
    security(("api_key" = []), ("app_id" = [], "app_timestamp" = [], "app_signature" = []))
)]
pub async fn list(
    State(app): State<SharedApp>,
    Extension(p): Extension<Principal>,
) -> Result<Json<UserList>, ApiError> {
    let users = users::list(&app.store, &p).await?;
    let teams = app.store.list_teams().await?;
    let name_of = |id: i64| {
        teams
            .iter()
            .find(|t| t.id == id)
            .map(|t| t.name.clone())
            .unwrap_or_default()
    };
    Ok(Json(UserList {
        users: users
            .into_iter()
            .map(|a| {
                let team = name_of(a.team_id);
                UserView::new(a, team)
            })
            .collect(),
    }))
}

/// Deletes an admin UI user; their sessions end.
#[utoipa::path(
    delete, path = "/api/v1/users/{name}", operation_id = "delete_user", tag = "users",
    params(("name" = String, Path, description = "Sign-in name")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 401, description = "Missing or invalid credentials", body = ErrorBody),
        (status = 403, description = "Lacks `admin`", body = ErrorBody),
        (status = 404, description = "No such user", body = ErrorBody),
    ),
    security(("api_key" = []), ("app_id" = [], "app_timestamp" = [], "app_signature" = []))
)]
pub async fn delete(
    State(app): State<SharedApp>,
    Extension(p): Extension<Principal>,
    Path(name): Path<String>,
) -> Result<StatusCode, ApiError> {
    users::delete(&app.store, &app.auth, &p, &name).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::Scope;
    use crate::auth::AuthError;
    use crate::store::StoreError;

    #[test]
    fn user_errors_keep_their_statuses_codes_and_fields() {
        let cases = [
            (UserError::InvalidName, 422, "invalid_name", Some("name")),
            (
                UserError::WeakPassword,
                422,
                "weak_password",
                Some("password"),
            ),
            (UserError::Hashing("boom".into()), 500, "internal", None),
            (
                UserError::Denied(AuthError::InsufficientScope(Scope::Admin)),
                403,
                "insufficient_scope",
                None,
            ),
            (
                UserError::Store(StoreError::Conflict("user name \"a\"".into())),
                409,
                "conflict",
                None,
            ),
            (
                UserError::Store(StoreError::NotFound("user \"a\"".into())),
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
        let weak = ApiError::from(UserError::WeakPassword);
        assert_eq!(weak.message, "passwords must be 8 to 1024 characters");
    }
}
