//! API keys and signing apps: create (the secret is shown once), list with
//! last use, revoke. Each action calls [`crate::credentials`], like the
//! API, so names, scopes and caches follow one set of rules.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use maud::{html, Markup};

use super::session::Flash;
use super::usage::Credential;
use super::view::{self, FieldErrors, Nav, Page};
use super::{AdminError, AdminState, Authed, FormFields};
use crate::access::Scope;
use crate::credentials::{self, CredentialError};
use crate::links::parse_time;
use crate::store::StoreError;
use crate::timestamp::unix_now;

/// What a create form held, kept on errors.
#[derive(Debug, Default, Clone)]
struct CredentialForm {
    name: String,
    scopes: Vec<String>,
    /// Keys only: the `datetime-local` expiry (UTC), empty for never.
    expires_at: String,
    /// Keys only: the user the key acts for (empty: a key of its own).
    user: String,
}

/// Errors of the two create forms.
#[derive(Debug, Default)]
struct FormState {
    key: CredentialForm,
    key_errors: FieldErrors,
    app: CredentialForm,
    app_errors: FieldErrors,
}

impl From<CredentialError> for AdminError {
    fn from(e: CredentialError) -> Self {
        match e {
            CredentialError::Store(StoreError::NotFound(what)) => {
                AdminError::NotFound(format!("{what} not found"))
            }
            CredentialError::Store(StoreError::Closed) => {
                AdminError::Internal("the daemon is shutting down".into())
            }
            CredentialError::Store(e) => AdminError::Internal(e.to_string()),
            CredentialError::Denied(e) => AdminError::Status(StatusCode::FORBIDDEN, e.to_string()),
            e => AdminError::Status(StatusCode::UNPROCESSABLE_ENTITY, e.to_string()),
        }
    }
}

/// The form fields a refused credential names; other errors stay errors.
fn field_errors(e: CredentialError) -> Result<FieldErrors, AdminError> {
    let field = match e {
        CredentialError::InvalidName => "name",
        CredentialError::InvalidScopes(_) => "scopes",
        CredentialError::InvalidExpiry(_) => "expires_at",
        CredentialError::UnknownUser(_) => "user",
        e => return Err(e.into()),
    };
    let mut errors = FieldErrors::new();
    errors.insert(field.into(), e.to_string());
    Ok(errors)
}

fn scope_names(scopes: &[Scope]) -> String {
    scopes
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(", ")
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
            expires_at: String::new(),
            user: String::new(),
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
    let keys = credentials::list_keys(&admin.app, &p).await?;
    let apps = credentials::list_apps(&admin.app, &p).await?;
    let uses = admin.uses.all(&admin.app).await?;
    let key_form = with_default_scopes(&forms.key);
    let now = unix_now();
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
                    (view::text_input("Expires (UTC, optional)", "expires_at", &key_form.expires_at,
                        "datetime-local", Some("Empty: never. After this the key is refused."), &forms.key_errors))
                    (view::text_input("For user (optional)", "user", &key_form.user, "text",
                        Some("The key follows this user's team and role and never does more than the role allows."), &forms.key_errors))
                    button.primary type="submit" { "Create key" }
                }
            }
            table.keys id="keys" {
                thead { tr { th { "Id" } th { "Name" } th { "Key starts" } th { "Scopes" } th { "Created" } th { "Expires" } th { "Last used" } th { "" } } }
                tbody {
                    @for k in &keys {
                        tr data-key-id=(k.id) data-key-name=(k.name) .revoked[k.revoked_at.is_some()] {
                            td { (k.id) }
                            td { (k.name) }
                            td { code { "slk_" (k.prefix) "…" } }
                            td { (scope_names(&k.scopes)) }
                            td.time { (view::time(k.created_at)) }
                            td.time.expires {
                                @match k.expires_at {
                                    Some(t) => { (view::time(t)) @if t <= now { " " span.badge.state-expired { "expired" } } },
                                    None => "never",
                                }
                            }
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
                    @for ap in &apps {
                        tr data-app-id=(ap.app_id) .revoked[ap.revoked_at.is_some()] {
                            td { code { (ap.app_id) } }
                            td { (ap.name) }
                            td { (scope_names(&ap.scopes)) }
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
        expires_at: f.get("expires_at"),
        user: f.get("user"),
    }
}

/// The expiry of the key form in Unix seconds (`None`: never), or the
/// field's error.
fn key_expiry(form: &CredentialForm) -> Result<Option<i64>, FieldErrors> {
    if form.expires_at.is_empty() {
        return Ok(None);
    }
    parse_time(&view::local_to_rfc3339(&form.expires_at))
        .map(Some)
        .map_err(|m| FieldErrors::from([("expires_at".to_string(), format!("expires_at: {m}"))]))
}

/// POST `/admin/keys`.
pub async fn create_key(
    State(admin): State<AdminState>,
    a: Authed,
    fields: FormFields,
) -> Result<Response, AdminError> {
    let form = credential_form(&fields);
    let created = match key_expiry(&form) {
        Ok(expires_at) => credentials::create_key(
            &admin.app,
            &a.principal(),
            &form.name,
            &form.scopes,
            expires_at,
            Some(form.user.as_str()),
        )
        .await
        .map_err(field_errors),
        Err(errors) => Err(Ok(errors)),
    };
    match created {
        Ok(created) => {
            admin.sessions.set_flash(
                &a.token,
                Flash {
                    title: format!("API key \"{}\" created.", created.key.name),
                    secret: Some(created.secret),
                },
            );
            Ok(Redirect::to("/admin/keys").into_response())
        }
        Err(Err(e)) => Err(e),
        Err(Ok(key_errors)) => {
            let forms = FormState {
                key: form,
                key_errors,
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
    credentials::revoke_key(&admin.app, &a.principal(), id).await?;
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
    match credentials::create_app(&admin.app, &a.principal(), &form.name, &form.scopes).await {
        Ok(created) => {
            admin.sessions.set_flash(
                &a.token,
                Flash {
                    title: format!(
                        "App \"{}\" created. App id: {}. Its secret:",
                        created.app.name, created.app.app_id
                    ),
                    secret: Some(created.secret.reveal().to_string()),
                },
            );
            Ok(Redirect::to("/admin/keys#apps").into_response())
        }
        Err(e) => {
            let forms = FormState {
                app: form,
                app_errors: field_errors(e)?,
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
    credentials::revoke_app(&admin.app, &a.principal(), &app_id).await?;
    admin.sessions.set_flash(
        &a.token,
        Flash {
            title: format!("App {app_id} revoked."),
            secret: None,
        },
    );
    Ok(Redirect::to("/admin/keys#apps"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::ScopeError;
    use crate::auth::AuthError;

    #[test]
    fn key_expiry_is_read_as_utc() {
        let form = |t: &str| CredentialForm {
            expires_at: t.into(),
            ..CredentialForm::default()
        };
        assert_eq!(key_expiry(&form("")), Ok(None));
        assert_eq!(
            key_expiry(&form("2030-03-17T17:46")),
            Ok(Some(1_899_999_960))
        );
        let e = key_expiry(&form("next week")).unwrap_err();
        assert!(e["expires_at"].contains("next week"), "{e:?}");
    }

    #[test]
    fn refused_credentials_name_their_form_field() {
        let name = field_errors(CredentialError::InvalidName).unwrap();
        assert_eq!(
            name.get("name").map(String::as_str),
            Some("name must be 1 to 100 characters without control characters")
        );
        let scopes = field_errors(CredentialError::InvalidScopes(ScopeError::Empty)).unwrap();
        assert_eq!(
            scopes.get("scopes").map(String::as_str),
            Some("at least one scope is needed")
        );
        let missing = CredentialError::Store(StoreError::NotFound("API key 9".into()));
        assert!(matches!(
            field_errors(missing),
            Err(AdminError::NotFound(m)) if m == "API key 9 not found"
        ));
        let past = field_errors(CredentialError::InvalidExpiry(5)).unwrap();
        assert_eq!(
            past.get("expires_at").map(String::as_str),
            Some("expires_at (5) must be in the future")
        );
        let denied = CredentialError::Denied(AuthError::InsufficientScope(Scope::Admin));
        assert!(matches!(
            AdminError::from(denied),
            AdminError::Status(StatusCode::FORBIDDEN, _)
        ));
    }
}
