//! `/admin/teams` and a user's team and role: for admins only (every
//! action goes through [`crate::teams`] and [`crate::users`], which check
//! the admin scope, so other sessions get 403). Teams are listed with how
//! many users each has; one is deleted only when nothing is left in it.

use axum::extract::{Path, State};
use axum::response::Redirect;
use maud::{html, Markup};

use super::session::Flash;
use super::view::{self, Nav, Page};
use super::{AdminError, AdminState, Authed, FormFields};
use crate::access::Role;
use crate::store::Team;
use crate::teams::{self, TeamError};
use crate::users;

impl From<TeamError> for AdminError {
    fn from(e: TeamError) -> Self {
        match e {
            TeamError::Store(e) => e.into(),
            TeamError::Denied(e) => {
                AdminError::Status(axum::http::StatusCode::FORBIDDEN, e.to_string())
            }
            e => AdminError::Status(axum::http::StatusCode::UNPROCESSABLE_ENTITY, e.to_string()),
        }
    }
}

/// A `<select name="team">` of `teams`, `chosen` selected.
pub fn team_select(teams: &[Team], chosen: i64, label: &str) -> Markup {
    html! {
        select name="team" aria-label=(label) {
            @for t in teams {
                option value=(t.name) selected[t.id == chosen] { (t.name) }
            }
        }
    }
}

/// A `<select name="role">`, `chosen` selected.
pub fn role_select(chosen: Role, label: &str) -> Markup {
    html! {
        select name="role" aria-label=(label) {
            @for r in Role::ALL {
                option value=(r.as_str()) selected[r == chosen] { (r.as_str()) }
            }
        }
    }
}

fn flash(admin: &AdminState, a: &Authed, title: String) {
    admin.sessions.set_flash(
        &a.token,
        Flash {
            title,
            secret: None,
        },
    );
}

/// GET `/admin/teams`.
pub async fn page(State(admin): State<AdminState>, a: Authed) -> Result<Page, AdminError> {
    let p = a.principal();
    p.require(crate::access::Scope::Admin)
        .map_err(|e| AdminError::Status(axum::http::StatusCode::FORBIDDEN, e.to_string()))?;
    let flash = admin.sessions.take_flash(&a.token);
    let all = teams::list(&admin.app, &p).await?;
    let accounts = users::list(&admin.app.store, &p).await?;
    Ok(view::layout(
        "Teams",
        Some(&a),
        Nav::Teams,
        flash.as_ref(),
        html! {
            h1 { "Teams" }
            p.hint { "Users belong to one team; the links they and their keys create belong to it. Members and viewers see only their team's links; admins see every team." }
            div.card {
                h2 { "New team" }
                form method="post" action="/admin/teams" id="add-team" {
                    (view::csrf_field(&a))
                    label { "Name " input type="text" name="name" required; }
                    button.primary type="submit" { "Add team" }
                }
            }
            table.teams id="teams" {
                thead { tr { th { "Name" } th { "Users" } th { "Added" } th { "" } } }
                tbody {
                    @for t in &all {
                        tr data-team=(t.name) {
                            td.name { a href={ "/admin/links?team=" (t.name) } { (t.name) } }
                            td.users { (accounts.iter().filter(|u| u.team_id == t.id).count()) }
                            td.time { (view::time(t.created_at)) }
                            td {
                                form method="post" action={ "/admin/teams/" (t.name) "/delete" }
                                    data-confirm={ "Delete the team \"" (t.name) "\"?" } {
                                    (view::csrf_field(&a))
                                    button.danger.small type="submit" { "Delete" }
                                }
                            }
                        }
                    }
                }
            }
        },
    ))
}

/// POST `/admin/teams`.
pub async fn create(
    State(admin): State<AdminState>,
    a: Authed,
    fields: FormFields,
) -> Result<Redirect, AdminError> {
    let team = teams::create(&admin.app, &a.principal(), &fields.get("name")).await?;
    flash(&admin, &a, format!("Team \"{}\" added.", team.name));
    Ok(Redirect::to("/admin/teams"))
}

/// POST `/admin/teams/{name}/delete`.
pub async fn delete(
    State(admin): State<AdminState>,
    a: Authed,
    Path(name): Path<String>,
) -> Result<Redirect, AdminError> {
    teams::delete(&admin.app, &a.principal(), &name).await?;
    flash(&admin, &a, format!("Team \"{name}\" deleted."));
    Ok(Redirect::to("/admin/teams"))
}

/// POST `/admin/users/{name}/membership`: a user's team and role.
pub async fn set_membership(
    State(admin): State<AdminState>,
    a: Authed,
    Path(name): Path<String>,
    fields: FormFields,
) -> Result<Redirect, AdminError> {
    let p = a.principal();
    p.require(crate::access::Scope::Admin)
        .map_err(|e| AdminError::Status(axum::http::StatusCode::FORBIDDEN, e.to_string()))?;
    let team = teams::find(&admin.app, &fields.get("team")).await?;
    let role = Role::parse(&fields.get("role")).map_err(|e| {
        AdminError::Status(axum::http::StatusCode::UNPROCESSABLE_ENTITY, e.to_string())
    })?;
    users::set_membership(&admin.app.store, &admin.app.auth, &p, &name, team.id, role).await?;
    flash(
        &admin,
        &a,
        format!("\"{name}\" is now {role} of team \"{}\".", team.name),
    );
    Ok(Redirect::to("/admin/users"))
}
