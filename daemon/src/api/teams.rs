//! `/api/v1/teams` and `/api/v1/users/{name}/membership`: teams (admin
//! scope to change them) and which team a user is in with which role,
//! JSON over [`crate::teams`] and [`crate::users`].

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::error::{ApiError, ErrorBody};
use super::extract::ApiJson;
use super::users::UserView;
use crate::access::Role;
use crate::app::SharedApp;
use crate::auth::Principal;
use crate::store::Team;
use crate::teams::{self, TeamError};
use crate::timestamp::Timestamp;
use crate::users;

/// Body of `POST /api/v1/teams`.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewTeam {
    /// 1 to 64 of `A-Z a-z 0-9 . _ -`.
    #[schema(pattern = r"^[A-Za-z0-9._-]{1,64}$")]
    pub name: String,
}

/// A team as shown.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TeamView {
    /// Numeric id (links, users and keys name it as `team_id`).
    pub id: i64,
    /// Unique name.
    pub name: String,
    /// When it was created.
    pub created_at: Timestamp,
}

impl From<Team> for TeamView {
    fn from(t: Team) -> Self {
        TeamView {
            id: t.id,
            name: t.name,
            created_at: t.created_at.into(),
        }
    }
}

/// The teams the caller sees.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TeamList {
    /// By id.
    pub teams: Vec<TeamView>,
}

/// Body of `PUT /api/v1/users/{name}/membership`.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Membership {
    /// The team's name.
    pub team: String,
    /// `admin`, `member` or `viewer`.
    pub role: Role,
}

impl From<TeamError> for ApiError {
    fn from(e: TeamError) -> Self {
        let message = e.to_string();
        match e {
            TeamError::InvalidName => {
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_name", message)
                    .field("name")
            }
            TeamError::Unknown(_) => {
                ApiError::new(StatusCode::NOT_FOUND, "unknown_team", message).field("team")
            }
            TeamError::Denied(e) => e.into(),
            TeamError::Store(e) => e.into(),
        }
    }
}

/// Adds a team.
#[utoipa::path(
    post, path = "/api/v1/teams", operation_id = "create_team", tag = "teams", request_body = NewTeam,
    responses(
        (status = 201, description = "Created", body = TeamView),
        (status = 401, description = "Missing or invalid credentials", body = ErrorBody),
        (status = 403, description = "Lacks `admin`", body = ErrorBody),
        (status = 409, description = "Name taken (`conflict`)", body = ErrorBody),
        (status = 400, description = "Malformed JSON (`invalid_json`)", body = ErrorBody),
        (status = 413, description = "Body too large (`body_too_large`)", body = ErrorBody),
        (status = 415, description = "Body is not `application/json` (`unsupported_media_type`)", body = ErrorBody),
        (status = 422, description = "`invalid_name`, `invalid_body`", body = ErrorBody),
    ),
    security(("api_key" = []), ("app_id" = [], "app_timestamp" = [], "app_signature" = []))
)]
pub async fn create(
    State(app): State<SharedApp>,
    Extension(p): Extension<Principal>,
    ApiJson(req): ApiJson<NewTeam>,
) -> Result<(StatusCode, Json<TeamView>), ApiError> {
    let team = teams::create(&app, &p, &req.name).await?;
    Ok((StatusCode::CREATED, Json(team.into())))
}

/// Lists teams: every team for an admin, else the caller's own.
#[utoipa::path(
    get, path = "/api/v1/teams", operation_id = "list_teams", tag = "teams",
    responses(
        (status = 200, description = "The teams the caller sees, by id", body = TeamList),
        (status = 401, description = "Missing or invalid credentials", body = ErrorBody),
        (status = 403, description = "Lacks `links:read`", body = ErrorBody),
    ),
    security(("api_key" = []), ("app_id" = [], "app_timestamp" = [], "app_signature" = []))
)]
pub async fn list(
    State(app): State<SharedApp>,
    Extension(p): Extension<Principal>,
) -> Result<Json<TeamList>, ApiError> {
    let teams = teams::list(&app, &p).await?;
    Ok(Json(TeamList {
        teams: teams.into_iter().map(TeamView::from).collect(),
    }))
}

/// Deletes a team; refused (`in_use`) while a link, user, key, app or webhook is
/// still in it.
#[utoipa::path(
    delete, path = "/api/v1/teams/{name}", operation_id = "delete_team", tag = "teams",
    params(("name" = String, Path, description = "Team name")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 401, description = "Missing or invalid credentials", body = ErrorBody),
        (status = 403, description = "Lacks `admin`", body = ErrorBody),
        (status = 409, description = "Still in use (`in_use`)", body = ErrorBody),
        (status = 404, description = "No such team (`unknown_team`)", body = ErrorBody),
    ),
    security(("api_key" = []), ("app_id" = [], "app_timestamp" = [], "app_signature" = []))
)]
pub async fn delete(
    State(app): State<SharedApp>,
    Extension(p): Extension<Principal>,
    Path(name): Path<String>,
) -> Result<StatusCode, ApiError> {
    teams::delete(&app, &p, &name).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Moves a user to a team with a role; their keys follow (on every node
/// within the auth cache's 30 seconds).
#[utoipa::path(
    put, path = "/api/v1/users/{name}/membership", operation_id = "set_user_membership", tag = "users",
    request_body = Membership,
    params(("name" = String, Path, description = "Sign-in name")),
    responses(
        (status = 200, description = "The user as it is now", body = UserView),
        (status = 401, description = "Missing or invalid credentials", body = ErrorBody),
        (status = 403, description = "Lacks `admin`", body = ErrorBody),
        (status = 404, description = "No such user (`not_found`) or team (`unknown_team`)", body = ErrorBody),
        (status = 400, description = "Malformed JSON (`invalid_json`)", body = ErrorBody),
        (status = 413, description = "Body too large (`body_too_large`)", body = ErrorBody),
        (status = 415, description = "Body is not `application/json` (`unsupported_media_type`)", body = ErrorBody),
        (status = 422, description = "`invalid_body`", body = ErrorBody),
    ),
    security(("api_key" = []), ("app_id" = [], "app_timestamp" = [], "app_signature" = []))
)]
pub async fn set_membership(
    State(app): State<SharedApp>,
    Extension(p): Extension<Principal>,
    Path(name): Path<String>,
    ApiJson(req): ApiJson<Membership>,
) -> Result<Json<UserView>, ApiError> {
    p.require(crate::access::Scope::Admin)?;
    let team = teams::find(&app, &req.team).await?;
    let user = users::set_membership(&app.store, &app.auth, &p, &name, team.id, req.role).await?;
    Ok(Json(UserView::new(user, team.name)))
}
