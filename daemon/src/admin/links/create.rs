//! The create page: `GET /admin/links/new` and its form's
//! `POST /admin/links`.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use maud::html;

use super::super::session::Flash;
use super::super::view::{self, FieldErrors, Nav, Page};
use super::super::{AdminError, AdminState, Authed, FormFields};
use super::form::{general_error, link_errors, link_fields, LinkForm};
use crate::codes;

fn new_page(a: &Authed, form: &LinkForm, errors: &FieldErrors) -> Page {
    view::layout(
        "New link",
        Some(a),
        Nav::New,
        None,
        html! {
            h1 { "New short link" }
            div.card {
                (general_error(errors))
                form method="post" action="/admin/links" id="create" novalidate {
                    (view::csrf_field(a))
                    (link_fields(form, errors))
                    button.primary type="submit" { "Create short link" }
                }
            }
        },
    )
}

/// GET `/admin/links/new`.
pub async fn new_form(a: Authed) -> Page {
    new_page(&a, &LinkForm::default(), &FieldErrors::new())
}

/// POST `/admin/links`: creates through [`crate::links::Links::create`], then shows the
/// new link (short URL, copy button, QR code).
pub async fn create(
    State(admin): State<AdminState>,
    a: Authed,
    fields: FormFields,
) -> Result<Response, AdminError> {
    a.may(crate::access::Scope::LinksWrite)?;
    let form = LinkForm::from_fields(&fields);
    let req = match form.to_create() {
        Ok(r) => r,
        Err(errors) => {
            return Ok((
                StatusCode::UNPROCESSABLE_ENTITY,
                new_page(&a, &form, &errors),
            )
                .into_response())
        }
    };
    let who = a.principal().who;
    admin.app.rules.served.remember(&a.base);
    match admin
        .app
        .links()
        .acting_as(&a.principal())
        .create(&req, Some(&who))
        .await
    {
        Ok(created) => {
            let code = codes::public(&admin.app.codec, created.link());
            admin.sessions.set_flash(
                &a.token,
                Flash {
                    title: format!("Short link {}/{code} created.", a.base),
                    secret: None,
                },
            );
            Ok(Redirect::to(&format!("/admin/links/{code}")).into_response())
        }
        Err(e) => {
            let errors = link_errors(e)?;
            Ok((
                StatusCode::UNPROCESSABLE_ENTITY,
                new_page(&a, &form, &errors),
            )
                .into_response())
        }
    }
}
