//! `/admin/takedowns`: switch off every link to a host or by one creator
//! (the form), the records newest first (who, when, why, how many), and
//! the undo of each. Every action calls [`crate::takedown`], like the API
//! and the CLI; a session without the admin scope gets 403.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use maud::html;

use super::session::Flash;
use super::view::{self, FieldErrors, Nav, Page};
use super::{AdminError, AdminState, Authed, FormFields};
use crate::takedown::{self, TakedownError, Target};

/// Records the page lists.
const SHOWN: u32 = 200;

impl From<TakedownError> for AdminError {
    fn from(e: TakedownError) -> Self {
        match e {
            TakedownError::Store(e) => e.into(),
            TakedownError::NotFound(_) => AdminError::NotFound(e.to_string()),
            TakedownError::Denied(e) => AdminError::Status(StatusCode::FORBIDDEN, e.to_string()),
            TakedownError::AlreadyUndone(_) => {
                AdminError::Status(StatusCode::CONFLICT, e.to_string())
            }
            e => AdminError::Status(StatusCode::UNPROCESSABLE_ENTITY, e.to_string()),
        }
    }
}

/// The form as sent: which kind, its value, the reason.
#[derive(Debug, Default)]
struct Form {
    kind: String,
    value: String,
    reason: String,
}

/// The form field a refused takedown names; other errors stay errors.
fn field_errors(e: TakedownError) -> Result<FieldErrors, AdminError> {
    let field = match e {
        TakedownError::BadHost(_) | TakedownError::BadCreator(_) => "value",
        TakedownError::BadReason => "reason",
        e => return Err(e.into()),
    };
    let mut errors = FieldErrors::new();
    errors.insert(field.into(), e.to_string());
    Ok(errors)
}

async fn render(
    admin: &AdminState,
    a: &Authed,
    form: &Form,
    errors: &FieldErrors,
    flash: Option<&Flash>,
) -> Result<Page, AdminError> {
    let records = takedown::list(&admin.app, &a.principal(), SHOWN).await?;
    let creator = form.kind == "creator";
    Ok(view::layout(
        "Takedowns",
        Some(a),
        Nav::Takedowns,
        flash,
        html! {
            h1 { "Takedowns" }
            p.hint { "Switch off every link to a host (and its subdomains), or every link one key, app or user made, on every node's edge at once. Each takedown is recorded with who, when and why, and can be undone: an undo switches back on the links it switched off, unless another takedown in force still covers them." }
            div.card {
                h2 { "New takedown" }
                form method="post" action="/admin/takedowns" id="takedown" novalidate {
                    (view::csrf_field(a))
                    div.row {
                        label {
                            "Take down every link "
                            select name="kind" {
                                option value="host" selected[!creator] { "to the host" }
                                option value="creator" selected[creator] { "made by" }
                            }
                        }
                        (view::text_input("Host, or key:ID / app:ID / user:NAME / cli", "value", &form.value, "text",
                            Some("A host covers its subdomains."), errors))
                    }
                    (view::text_input("Reason", "reason", &form.reason, "text",
                        Some("Kept in the record."), errors))
                    button.danger type="submit" { "Take down" }
                }
            }
            table.takedowns id="takedowns" {
                thead { tr {
                    th { "#" } th { "Kind" } th { "Selector" } th { "By" } th { "When" }
                    th { "Reason" } th { "Switched off" } th { "Undone" } th { "" }
                } }
                tbody {
                    @for t in &records {
                        tr data-takedown=(t.id) {
                            td { (t.id) }
                            td { (t.kind) }
                            td.selector { (t.selector) }
                            td { (t.created_by) }
                            td.time { (view::time(t.created_at)) }
                            td.reason { (t.reason) }
                            td { (t.disabled) " of " (t.matched) }
                            td {
                                @if let Some(at) = t.undone_at {
                                    (view::time(at)) " by " (t.undone_by.as_deref().unwrap_or("?"))
                                    ", " (t.restored.unwrap_or(0)) " back on"
                                }
                            }
                            td {
                                @if t.undone_at.is_none() {
                                    form method="post" action={ "/admin/takedowns/" (t.id) "/undo" }
                                        data-confirm={ "Undo takedown " (t.id) "? Its links come back at every edge." } {
                                        (view::csrf_field(a))
                                        button.small type="submit" { "Undo" }
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

/// GET `/admin/takedowns`.
pub async fn page(State(admin): State<AdminState>, a: Authed) -> Result<Page, AdminError> {
    let flash = admin.sessions.take_flash(&a.token);
    render(
        &admin,
        &a,
        &Form::default(),
        &FieldErrors::new(),
        flash.as_ref(),
    )
    .await
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

/// POST `/admin/takedowns`: a takedown through [`takedown::take_down`].
pub async fn create(
    State(admin): State<AdminState>,
    a: Authed,
    fields: FormFields,
) -> Result<Response, AdminError> {
    let form = Form {
        kind: fields.get("kind"),
        value: fields.get("value"),
        reason: fields.get("reason"),
    };
    let target = match form.kind.as_str() {
        "creator" => Target::Creator(form.value.clone()),
        _ => Target::Host(form.value.clone()),
    };
    match takedown::take_down(&admin.app, &a.principal(), &target, &form.reason).await {
        Ok(t) => {
            let title = format!(
                "Takedown {} ({} {}): {} links switched off, {} matched.",
                t.id, t.kind, t.selector, t.disabled, t.matched
            );
            flash(&admin, &a, title);
            Ok(Redirect::to("/admin/takedowns").into_response())
        }
        Err(e) => {
            let errors = field_errors(e)?;
            let page = render(&admin, &a, &form, &errors, None).await?;
            Ok((StatusCode::UNPROCESSABLE_ENTITY, page).into_response())
        }
    }
}

/// POST `/admin/takedowns/{id}/undo`.
pub async fn undo(
    State(admin): State<AdminState>,
    a: Authed,
    Path(id): Path<i64>,
) -> Result<Redirect, AdminError> {
    let t = takedown::undo(&admin.app, &a.principal(), id).await?;
    let title = format!(
        "Takedown {} undone: {} links switched back on.",
        t.id,
        t.restored.unwrap_or(0)
    );
    flash(&admin, &a, title);
    Ok(Redirect::to("/admin/takedowns"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::Scope;
    use crate::auth::AuthError;

    #[test]
    fn refused_takedowns_name_their_field() {
        let e = field_errors(TakedownError::BadReason).unwrap();
        assert!(e["reason"].contains("reason"), "{e:?}");
        let e = field_errors(TakedownError::BadHost("it is empty".into())).unwrap();
        assert!(e["value"].contains("it is empty"), "{e:?}");
        assert!(matches!(
            field_errors(TakedownError::NotFound(3)),
            Err(AdminError::NotFound(_))
        ));
        let denied = TakedownError::Denied(AuthError::InsufficientScope(Scope::Admin));
        assert!(matches!(
            AdminError::from(denied),
            AdminError::Status(StatusCode::FORBIDDEN, _)
        ));
    }
}
