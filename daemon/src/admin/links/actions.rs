//! What the detail page's forms post: the edit, disable and enable, and
//! delete handlers. Each calls the link operations ([`crate::links::Links`])
//! and answers once the nginx workers were told.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};

use super::super::session::Flash;
use super::super::{AdminError, AdminState, Authed, FormFields};
use super::detail::{detail_page, Charts};
use super::form::{link_errors, LinkForm};
use crate::codes;
use crate::links::UpdateLink;

/// POST `/admin/links/{code}`: the edit form, through [`crate::links::Links::update`].
pub async fn edit(
    State(admin): State<AdminState>,
    a: Authed,
    Path(code): Path<String>,
    fields: FormFields,
) -> Result<Response, AdminError> {
    a.may(crate::access::Scope::LinksWrite)?;
    let link = admin
        .app
        .links()
        .acting_as(&a.principal())
        .get(&code)
        .await?;
    let form = LinkForm::from_fields(&fields);
    admin.app.rules.served.remember(&a.base);
    let result = match form.to_update(&link) {
        Ok(patch) => admin
            .app
            .links()
            .acting_as(&a.principal())
            .update(&code, patch)
            .await
            .map_err(link_errors),
        Err(errors) => Err(Ok(errors)),
    };
    match result {
        Ok(updated) => {
            let new_code = codes::public(&admin.app.codec, &updated);
            tracing::info!(code = %new_code, user = %a.user, "link edited in the admin UI");
            admin.sessions.set_flash(
                &a.token,
                Flash {
                    title: "Saved. nginx was told to drop its cached copy.".into(),
                    secret: None,
                },
            );
            Ok(Redirect::to(&format!("/admin/links/{new_code}")).into_response())
        }
        Err(Err(e)) => Err(e),
        Err(Ok(errors)) => {
            let charts = Charts::load(&admin, &a, &code, &link).await?;
            let page = detail_page(&admin, &a, &link, &charts, &form, &errors, None);
            Ok((StatusCode::UNPROCESSABLE_ENTITY, page).into_response())
        }
    }
}

/// Switches a link off or on, then back to its page.
async fn set_disabled(
    admin: &AdminState,
    a: &Authed,
    code: &str,
    disabled: bool,
) -> Result<Redirect, AdminError> {
    a.may(crate::access::Scope::LinksWrite)?;
    let patch = UpdateLink {
        disabled: Some(disabled),
        ..UpdateLink::default()
    };
    let link = admin
        .app
        .links()
        .acting_as(&a.principal())
        .update(code, patch)
        .await?;
    let code = codes::public(&admin.app.codec, &link);
    tracing::info!(code = %code, disabled, user = %a.user, "link switched in the admin UI");
    let title = if disabled {
        format!("{code} is disabled; nginx no longer redirects it.")
    } else {
        format!("{code} is enabled again.")
    };
    admin.sessions.set_flash(
        &a.token,
        Flash {
            title,
            secret: None,
        },
    );
    Ok(Redirect::to(&format!("/admin/links/{code}")))
}

/// POST `/admin/links/{code}/disable`.
pub async fn disable(
    State(admin): State<AdminState>,
    a: Authed,
    Path(code): Path<String>,
) -> Result<Redirect, AdminError> {
    set_disabled(&admin, &a, &code, true).await
}

/// POST `/admin/links/{code}/enable`.
pub async fn enable(
    State(admin): State<AdminState>,
    a: Authed,
    Path(code): Path<String>,
) -> Result<Redirect, AdminError> {
    set_disabled(&admin, &a, &code, false).await
}

/// POST `/admin/links/{code}/delete`.
pub async fn delete(
    State(admin): State<AdminState>,
    a: Authed,
    Path(code): Path<String>,
) -> Result<Redirect, AdminError> {
    a.may(crate::access::Scope::LinksWrite)?;
    let link = admin
        .app
        .links()
        .acting_as(&a.principal())
        .delete(&code)
        .await?;
    let code = codes::public(&admin.app.codec, &link);
    tracing::info!(code = %code, user = %a.user, "link deleted in the admin UI");
    admin.sessions.set_flash(
        &a.token,
        Flash {
            title: format!("{code} was deleted."),
            secret: None,
        },
    );
    Ok(Redirect::to("/admin/links"))
}
