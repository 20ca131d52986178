//! API keys and signing apps: create (the secret is shown once), list with
//! last use, revoke. Each action calls the API's own handler, so names,
//! scopes and caches follow the API's rules.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::{Extension, Json};
use maud::{html, Markup};

use super::session::Flash;
use super::usage::Credential;
use super::view::{self, FieldErrors, Nav, Page};
use super::{AdminError, AdminState, Authed, FormFields};
use crate::api::auth::Scope;
use crate::api::error::{ApiError, ApiJson};
use crate::api::keys::{self as api, NewCredential};

/// What a create form held, kept on errors.
#[derive(Debug, Default, Clone)]
struct CredentialForm {
    name: String,
    scopes: Vec<String>,
}

/// Errors of the two create forms.
#[derive(Debug, Default)]
struct FormState {
    key: CredentialForm,
    key_errors: FieldErrors,
    app: CredentialForm,
    app_errors: FieldErrors,
}

fn api_errors(e: ApiError) -> Result<FieldErrors, AdminError> {
    if e.status != StatusCode::UNPROCESSABLE_ENTITY {
        return Err(e.into());
    }
    let mut errors = FieldErrors::new();
    errors.insert(e.field.unwrap_or_else(|| "name".into()), e.message);
    Ok(errors)
}

fn last_use(uses: &std::collections::HashMap<Credential, i64>, c: Credential) -> String {
    uses.get(&c)
        .map(|t| view::time(*t))
        .unwrap_or_else(|| "never".into())
}

fn scope_boxes(prefix: &str, chosen: &[String], errors: &FieldErrors) -> Markup {
    html! {
        fieldset.scopes.invalid[errors.contains_key("scopes")] {
            legend { "Scopes" }
            @for s in Scope::ALL {
                @let id = format!("{prefix}-scope-{}", s.as_str().replace(':', "-"));
                label.check for=(id) {
                    input type="checkbox" id=(id) name="scopes" value=(s.as_str())
                        checked[chosen.iter().any(|c| c == s.as_str())];
                    " " (s.as_str())
                }
            }
            (view::field_error(errors, "scopes"))
        }
    }
}

/// A fresh form suggests the scopes most integrations need.
fn with_default_scopes(f: &CredentialForm) -> CredentialForm {
    if f.name.is_empty() && f.scopes.is_empty() {
        CredentialForm {
            name: String::new(),
            scopes: vec!["links:write".into(), "links:read".into()],
        }
    } else {
        f.clone()
    }
}

async fn render(
    admin: &AdminState,
    a: &Authed,
    forms: &FormState,
    flash: Option<&Flash>,
) -> Result<Page, AdminError> {
    let p = a.principal();
    let Json(keys) = api::list_keys(State(admin.app.clone()), Extension(p.clone())).await?;
    let Json(apps) = api::list_apps(State(admin.app.clone()), Extension(p)).await?;
    let uses = admin.uses.all(&admin.app).await?;
    let key_form = with_default_scopes(&forms.key);
    let app_form = with_default_scopes(&forms.app);
    Ok(view::layout(
        "API keys",
        Some(a),
        Nav::Keys,
        flash,
        html! {
            h1 { "API keys" }
            p.hint { "Send a key as " code { "X-Api-Key" } ". Only a hash is stored: the secret is shown once, when the key is made." }
            div.card {
                h2 { "New API key" }
                form method="post" action="/admin/keys" id="create-key" novalidate {
                    (view::csrf_field(a))
                    (view::text_input("Name", "name", &key_form.name, "text", Some("What the key is for, e.g. \"newsletter\"."), &forms.key_errors))
                    (scope_boxes("key", &key_form.scopes, &forms.key_errors))
                    button.primary type="submit" { "Create key" }
                }
            }
            table.keys id="keys" {
                thead { tr { th { "Id" } th { "Name" } th { "Key starts" } th { "Scopes" } th { "Created" } th { "Last used" } th { "" } } }
                tbody {
                    @for k in &keys.keys {
                        tr data-key-id=(k.id) data-key-name=(k.name) .revoked[k.revoked_at.is_some()] {
                            td { (k.id) }
                            td { (k.name) }
                            td { code { "slk_" (k.prefix) "…" } }
                            td { (k.scopes.join(", ")) }
                            td.time { (view::time(k.created_at)) }
                            td.time.last-used { (last_use(&uses, Credential::Key(k.prefix.clone()))) }
                            td {
                                @match k.revoked_at {
                                    Some(t) => span.badge.state-disabled title={ "revoked " (view::time(t)) } { "revoked" },
                                    None => form method="post" action={ "/admin/keys/" (k.id) "/revoke" }
                                        data-confirm={ "Revoke the key \"" (k.name) "\"? Callers using it are refused at once." } {
                                        (view::csrf_field(a))
                                        button.danger.small type="submit" { "Revoke" }
                                    },
                                }
                            }
                        }
                    }
                }
            }
            h1 id="apps" { "Signing apps" }
            p.hint { "Apps sign requests with " code { "X-App-Id" } ", " code { "X-Timestamp" } " and " code { "X-Signature" } " (HMAC-SHA256 with the app secret)." }
            div.card {
                h2 { "New app" }
                form method="post" action="/admin/apps" id="create-app" novalidate {
                    (view::csrf_field(a))
                    (view::text_input("Name", "name", &app_form.name, "text", None, &forms.app_errors))
                    (scope_boxes("app", &app_form.scopes, &forms.app_errors))
                    button.primary type="submit" { "Create app" }
                }
            }
            table.keys id="apps-table" {
                thead { tr { th { "App id" } th { "Name" } th { "Scopes" } th { "Created" } th { "Last used" } th { "" } } }
                tbody {
                    @for ap in &apps.apps {
                        tr data-app-id=(ap.app_id) .revoked[ap.revoked_at.is_some()] {
                            td { code { (ap.app_id) } }
                            td { (ap.name) }
                            td { (ap.scopes.join(", ")) }
                            td.time { (view::time(ap.created_at)) }
                            td.time.last-used { (last_use(&uses, Credential::App(ap.app_id.clone()))) }
                            td {
                                @match ap.revoked_at {
                                    Some(_) => span.badge.state-disabled { "revoked" },
                                    None => form method="post" action={ "/admin/apps/" (ap.app_id) "/revoke" }
                                        data-confirm={ "Revoke the app \"" (ap.name) "\"?" } {
                                        (view::csrf_field(a))
                                        button.danger.small type="submit" { "Revoke" }
                                    },
                                }
                            }
                        }
                    }
                }
            }
        },
    ))
}

/// GET `/admin/keys`.
pub async fn page(State(admin): State<AdminState>, a: Authed) -> Result<Page, AdminError> {
    let flash = admin.sessions.take_flash(&a.token);
    render(&admin, &a, &FormState::default(), flash.as_ref()).await
}

fn credential_form(f: &FormFields) -> CredentialForm {
    CredentialForm {
        name: f.get("name"),
        scopes: f.all("scopes"),
    }
}

/// POST `/admin/keys`.
pub async fn create_key(
    State(admin): State<AdminState>,
    a: Authed,
    fields: FormFields,
) -> Result<Response, AdminError> {
    let form = credential_form(&fields);
    let req = NewCredential {
        name: form.name.clone(),
        scopes: form.scopes.clone(),
    };
    match api::create_key(
        State(admin.app.clone()),
        Extension(a.principal()),
        ApiJson(req),
    )
    .await
    {
        Ok((_, Json(created))) => {
            admin.sessions.set_flash(
                &a.token,
                Flash {
                    title: format!("API key \"{}\" created.", created.key.name),
                    secret: Some(created.secret),
                },
            );
            Ok(Redirect::to("/admin/keys").into_response())
        }
        Err(e) => {
            let forms = FormState {
                key: form,
                key_errors: api_errors(e)?,
                ..FormState::default()
            };
            let page = render(&admin, &a, &forms, None).await?;
            Ok((StatusCode::UNPROCESSABLE_ENTITY, page).into_response())
        }
    }
}

/// POST `/admin/keys/{id}/revoke`.
pub async fn revoke_key(
    State(admin): State<AdminState>,
    a: Authed,
    Path(id): Path<i64>,
) -> Result<Redirect, AdminError> {
    api::revoke_key(State(admin.app.clone()), Extension(a.principal()), Path(id)).await?;
    admin.sessions.set_flash(
        &a.token,
        Flash {
            title: format!("API key {id} revoked; requests with it are refused."),
            secret: None,
        },
    );
    Ok(Redirect::to("/admin/keys"))
}

/// POST `/admin/apps`.
pub async fn create_app(
    State(admin): State<AdminState>,
    a: Authed,
    fields: FormFields,
) -> Result<Response, AdminError> {
    let form = credential_form(&fields);
    let req = NewCredential {
        name: form.name.clone(),
        scopes: form.scopes.clone(),
    };
    match api::create_app(
        State(admin.app.clone()),
        Extension(a.principal()),
        ApiJson(req),
    )
    .await
    {
        Ok((_, Json(created))) => {
            admin.sessions.set_flash(
                &a.token,
                Flash {
                    title: format!(
                        "App \"{}\" created. App id: {}. Its secret:",
                        created.app.name, created.app.app_id
                    ),
                    secret: Some(created.secret),
                },
            );
            Ok(Redirect::to("/admin/keys#apps").into_response())
        }
        Err(e) => {
            let forms = FormState {
                app: form,
                app_errors: api_errors(e)?,
                ..FormState::default()
            };
            let page = render(&admin, &a, &forms, None).await?;
            Ok((StatusCode::UNPROCESSABLE_ENTITY, page).into_response())
        }
    }
}

/// POST `/admin/apps/{app_id}/revoke`.
pub async fn revoke_app(
    State(admin): State<AdminState>,
    a: Authed,
    Path(app_id): Path<String>,
) -> Result<Redirect, AdminError> {
    api::revoke_app(
        State(admin.app.clone()),
        Extension(a.principal()),
        Path(app_id.clone()),
    )
    .await?;
    admin.sessions.set_flash(
        &a.token,
        Flash {
            title: format!("App {app_id} revoked."),
            secret: None,
        },
    );
    Ok(Redirect::to("/admin/keys#apps"))
}
