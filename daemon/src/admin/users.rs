//! `/admin/users`: admin UI accounts for admins: list, add (the password
//! typed twice, as the CLI asks it), reset a password, delete. Each action
//! calls [`crate::users`], like the API and the CLI, so names, password
//! rules and the admin scope are checked in one place; a session without
//! that scope gets 403 from every page here.
//!
//! Nobody deletes the account they are signed in with here: it would end
//! their own session, and when it is the last account nobody could sign in
//! again (the CLI's `user add` on the server still can).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use maud::html;

use super::session::Flash;
use super::teams::{role_select, team_select};
use super::view::{self, FieldErrors, Nav, Page};
use super::{AdminError, AdminState, Authed, FormFields};
use crate::access::Role;
use crate::store::teams::DEFAULT_TEAM;
use crate::store::StoreError;
use crate::teams;
use crate::users::{self, UserError};

/// The message when the two password fields differ (the CLI's words).
const PASSWORDS_DIFFER: &str = "the two passwords differ; nothing was changed";

/// Which form on the page was refused, with what it held.
#[derive(Debug, Default)]
struct FormState {
    /// The add form's name field.
    name: String,
    /// Errors of the add form.
    add_errors: FieldErrors,
    /// The user whose reset form was refused, and its errors.
    reset: Option<(String, FieldErrors)>,
}

/// The form field a refused user operation names; other errors stay errors.
fn field_errors(e: UserError) -> Result<FieldErrors, AdminError> {
    let (field, message) = match e {
        UserError::InvalidName => ("name", e.to_string()),
        UserError::WeakPassword => ("password", e.to_string()),
        UserError::Store(StoreError::Conflict(what)) => {
            ("name", format!("{what} is taken: choose another name"))
        }
        e => return Err(e.into()),
    };
    let mut errors = FieldErrors::new();
    errors.insert(field.into(), message);
    Ok(errors)
}

/// The new password of a form, when both fields say the same.
fn password_twice(f: &FormFields) -> Result<String, FieldErrors> {
    let (first, again) = (f.raw("password"), f.raw("password2"));
    if first != again {
        let mut errors = FieldErrors::new();
        errors.insert("password2".into(), PASSWORDS_DIFFER.into());
        return Err(errors);
    }
    Ok(first)
}

async fn render(
    admin: &AdminState,
    a: &Authed,
    forms: &FormState,
    flash: Option<&Flash>,
) -> Result<Page, AdminError> {
    let accounts = users::list(&admin.app.store, &a.principal()).await?;
    let all_teams = admin.app.store.list_teams().await?;
    let none = FieldErrors::new();
    Ok(view::layout(
        "Users",
        Some(a),
        Nav::Users,
        flash,
        html! {
            h1 { "Users" }
            p.hint { "Everyone here can sign in to this admin UI. Passwords are stored as argon2id hashes; a new password ends the sessions opened with the old one." }
            div.card {
                h2 { "New user" }
                form method="post" action="/admin/users" id="add-user" novalidate {
                    (view::csrf_field(a))
                    (view::text_input("User name", "name", &forms.name, "text",
                        Some("1 to 64 of A-Z a-z 0-9 . _ - @"), &forms.add_errors))
                    div.row {
                        (view::text_input("Password", "password", "", "password",
                            Some("At least 8 characters."), &forms.add_errors))
                        (view::text_input("Password again", "password2", "", "password", None, &forms.add_errors))
                    }
                    div.row {
                        label { "Team " (team_select(&all_teams, DEFAULT_TEAM, "Team")) }
                        label { "Role " (role_select(Role::Member, "Role")) }
                    }
                    button.primary type="submit" { "Add user" }
                }
            }
            table.users id="users" {
                thead { tr { th { "Name" } th { "Team and role" } th { "Added" } th { "Reset password" } th { "" } } }
                tbody {
                    @for u in &accounts {
                        @let errors = match &forms.reset {
                            Some((name, e)) if *name == u.name => e,
                            _ => &none,
                        };
                        tr data-user=(u.name) {
                            td.name { (u.name) @if u.name == a.user { " " span.badge.state-active { "you" } } }
                            td.membership {
                                form.membership.inline method="post" action={ "/admin/users/" (u.name) "/membership" } {
                                    (view::csrf_field(a))
                                    (team_select(&all_teams, u.team_id, &format!("Team of {}", u.name)))
                                    (role_select(u.role, &format!("Role of {}", u.name)))
                                    button.small type="submit" { "Set" }
                                }
                            }
                            td.time { (view::time(u.created_at)) }
                            td {
                                form.reset.inline method="post" action={ "/admin/users/" (u.name) "/password" } novalidate {
                                    (view::csrf_field(a))
                                    input type="password" name="password" placeholder="New password"
                                        aria-label={ "New password for " (u.name) } autocomplete="new-password";
                                    input type="password" name="password2" placeholder="Again"
                                        aria-label={ "New password for " (u.name) ", again" } autocomplete="new-password";
                                    button.small type="submit" { "Set" }
                                    (view::field_error(errors, "password"))
                                    (view::field_error(errors, "password2"))
                                }
                            }
                            td {
                                @if u.name != a.user {
                                    form method="post" action={ "/admin/users/" (u.name) "/delete" }
                                        data-confirm={ "Delete the user \"" (u.name) "\"? They are signed out at once." } {
                                        (view::csrf_field(a))
                                        button.danger.small type="submit" { "Delete" }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        },
    ))
}

/// GET `/admin/users`.
pub async fn page(State(admin): State<AdminState>, a: Authed) -> Result<Page, AdminError> {
    let flash = admin.sessions.take_flash(&a.token);
    render(&admin, &a, &FormState::default(), flash.as_ref()).await
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

/// The page again with a refused form, as 422.
async fn refused(admin: &AdminState, a: &Authed, forms: FormState) -> Result<Response, AdminError> {
    let page = render(admin, a, &forms, None).await?;
    Ok((StatusCode::UNPROCESSABLE_ENTITY, page).into_response())
}

/// POST `/admin/users`: adds a user through [`users::create`].
pub async fn add(
    State(admin): State<AdminState>,
    a: Authed,
    fields: FormFields,
) -> Result<Response, AdminError> {
    let name = fields.get("name");
    // A form without the fields (a script's) adds as before teams: an
    // admin of the default team.
    let team = match fields.get("team") {
        t if t.is_empty() => "default".to_string(),
        t => t,
    };
    let team = teams::find(&admin.app, &team).await?;
    let role = match fields.get("role") {
        r if r.is_empty() => Role::Admin,
        r => Role::parse(&r)
            .map_err(|e| AdminError::Status(StatusCode::UNPROCESSABLE_ENTITY, e.to_string()))?,
    };
    let result = match password_twice(&fields) {
        Ok(password) => users::create(
            &admin.app.store,
            &a.principal(),
            &name,
            password,
            team.id,
            role,
        )
        .await
        .map_err(field_errors),
        Err(errors) => Err(Ok(errors)),
    };
    match result {
        Ok(account) => {
            flash(&admin, &a, format!("User \"{}\" added.", account.name));
            Ok(Redirect::to("/admin/users").into_response())
        }
        Err(Err(e)) => Err(e),
        Err(Ok(add_errors)) => {
            let forms = FormState {
                name,
                add_errors,
                reset: None,
            };
            refused(&admin, &a, forms).await
        }
    }
}

/// POST `/admin/users/{name}/password`: sets a new password through
/// [`users::set_password`]; that user's sessions end.
pub async fn reset_password(
    State(admin): State<AdminState>,
    a: Authed,
    Path(name): Path<String>,
    fields: FormFields,
) -> Result<Response, AdminError> {
    let result = match password_twice(&fields) {
        Ok(password) => users::set_password(&admin.app.store, &a.principal(), &name, password)
            .await
            .map_err(field_errors),
        Err(errors) => Err(Ok(errors)),
    };
    match result {
        Ok(()) => {
            let title = if name == a.user {
                "Your password was changed: sign in with the new one.".to_string()
            } else {
                format!("The password of \"{name}\" was changed; their sessions ended.")
            };
            flash(&admin, &a, title);
            Ok(Redirect::to("/admin/users").into_response())
        }
        Err(Err(e)) => Err(e),
        Err(Ok(errors)) => {
            let forms = FormState {
                reset: Some((name, errors)),
                ..FormState::default()
            };
            refused(&admin, &a, forms).await
        }
    }
}

/// POST `/admin/users/{name}/delete`: deletes through [`users::delete`],
/// never the account the request is signed in with.
pub async fn delete(
    State(admin): State<AdminState>,
    a: Authed,
    Path(name): Path<String>,
) -> Result<Redirect, AdminError> {
    if name == a.user {
        return Err(AdminError::Status(
            StatusCode::CONFLICT,
            format!(
                "You are signed in as \"{name}\": an account cannot delete itself here. \
                 Sign in as another user to delete it."
            ),
        ));
    }
    users::delete(&admin.app.store, &admin.app.auth, &a.principal(), &name).await?;
    flash(
        &admin,
        &a,
        format!("User \"{name}\" deleted and signed out."),
    );
    Ok(Redirect::to("/admin/users"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::Scope;
    use crate::auth::AuthError;

    #[test]
    fn refused_users_name_their_field() {
        let e = field_errors(UserError::WeakPassword).unwrap();
        assert_eq!(
            e.get("password").map(String::as_str),
            Some("passwords must be 8 to 1024 characters")
        );
        let e = field_errors(UserError::InvalidName).unwrap();
        assert!(e["name"].contains("1 to 64"), "{e:?}");
        let taken = UserError::Store(StoreError::Conflict("user name \"bob\"".into()));
        let e = field_errors(taken).unwrap();
        assert_eq!(e["name"], "user name \"bob\" is taken: choose another name");
        let missing = UserError::Store(StoreError::NotFound("user \"x\"".into()));
        assert!(matches!(
            field_errors(missing),
            Err(AdminError::NotFound(_))
        ));
    }

    #[test]
    fn sessions_without_the_admin_scope_get_403() {
        let denied = UserError::Denied(AuthError::InsufficientScope(Scope::Admin));
        assert!(matches!(
            AdminError::from(denied),
            AdminError::Status(StatusCode::FORBIDDEN, m) if m.contains("admin")
        ));
    }

    #[test]
    fn passwords_must_be_typed_twice_alike() {
        let form = |a: &str, b: &str| {
            FormFields(vec![
                ("password".into(), a.into()),
                ("password2".into(), b.into()),
            ])
        };
        assert_eq!(
            password_twice(&form(" spaced pw ", " spaced pw ")).unwrap(),
            " spaced pw ",
            "kept as typed, not trimmed"
        );
        let e = password_twice(&form("one password", "another one")).unwrap_err();
        assert_eq!(e["password2"], PASSWORDS_DIFFER);
    }
}
