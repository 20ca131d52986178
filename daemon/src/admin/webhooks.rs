//! `/admin/webhooks`: a team's webhooks and each one's delivery log.
//! Everyone signed in reads those of the teams they see; admins add and
//! delete webhooks and send a delivery again (every action goes through
//! [`crate::webhooks`], which checks the scope).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Redirect;
use maud::html;

use super::session::Flash;
use super::teams::team_select;
use super::view::{self, Nav, Page};
use super::{AdminError, AdminState, Authed, FormFields};
use crate::access::Scope;
use crate::store::{DeliveryStatus, WebhookEvent};
use crate::teams;
use crate::webhooks::{self, AddWebhook, WebhookError};

impl From<WebhookError> for AdminError {
    fn from(e: WebhookError) -> Self {
        match e {
            WebhookError::Store(e) => e.into(),
            WebhookError::Denied(e) => AdminError::Status(StatusCode::FORBIDDEN, e.to_string()),
            e @ (WebhookError::NotFound(_) | WebhookError::NoDelivery(..)) => {
                AdminError::Status(StatusCode::NOT_FOUND, e.to_string())
            }
            e => AdminError::Status(StatusCode::UNPROCESSABLE_ENTITY, e.to_string()),
        }
    }
}

fn flash(admin: &AdminState, a: &Authed, title: String, secret: Option<String>) {
    admin.sessions.set_flash(&a.token, Flash { title, secret });
}

/// GET `/admin/webhooks`.
pub async fn page(State(admin): State<AdminState>, a: Authed) -> Result<Page, AdminError> {
    let p = a.principal();
    let flash = admin.sessions.take_flash(&a.token);
    let hooks = webhooks::list(&admin.app, &p).await?;
    let manages = p.has(Scope::Admin);
    let all_teams = if manages {
        teams::list(&admin.app, &p).await?
    } else {
        Vec::new()
    };
    Ok(view::layout(
        "Webhooks",
        Some(&a),
        Nav::Webhooks,
        flash.as_ref(),
        html! {
            h1 { "Webhooks" }
            p.hint { "Each link event of a team is POSTed as JSON to its webhooks, signed with the webhook's secret (header Shortlink-Signature: t=<unix>,v1=<hex HMAC-SHA256 of \"<t>.<body>\">) and retried with growing waits for a day. Click summaries come once per link and interval." }
            @if manages {
                div.card {
                    h2 { "New webhook" }
                    form method="post" action="/admin/webhooks" id="add-webhook" {
                        (view::csrf_field(&a))
                        label { "URL " input type="url" name="url" required placeholder="https://hooks.example.com/shortlink"; }
                        (team_select(&all_teams, p.team_id, "Team"))
                        fieldset {
                            legend { "Events" }
                            @for e in WebhookEvent::ALL {
                                label { input type="checkbox" name="events" value=(e.as_str()) checked; " " (e.as_str()) }
                            }
                        }
                        button.primary type="submit" { "Add webhook" }
                    }
                }
            }
            table.webhooks id="webhooks" {
                thead { tr { th { "Id" } th { "URL" } th { "Team" } th { "Events" } th { "Added" } th { "" } } }
                tbody {
                    @for h in &hooks {
                        tr data-webhook=(h.id) {
                            td { a href={ "/admin/webhooks/" (h.id) } { (h.id) } }
                            td.url { (h.url) }
                            td { (h.team_id) }
                            td { (h.events.iter().map(|e| e.as_str()).collect::<Vec<_>>().join(", ")) }
                            td.time { (view::time(h.created_at)) }
                            td {
                                @if manages {
                                    form method="post" action={ "/admin/webhooks/" (h.id) "/delete" }
                                        data-confirm={ "Delete webhook " (h.id) " and its delivery log?" } {
                                        (view::csrf_field(&a))
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

/// GET `/admin/webhooks/{id}`: the delivery log.
pub async fn deliveries(
    State(admin): State<AdminState>,
    a: Authed,
    Path(id): Path<i64>,
) -> Result<Page, AdminError> {
    let p = a.principal();
    let flash = admin.sessions.take_flash(&a.token);
    let hook = webhooks::get(&admin.app, &p, id).await?;
    let log = webhooks::deliveries(&admin.app, &p, id, None, 200).await?;
    let manages = p.has(Scope::Admin);
    Ok(view::layout(
        "Webhook deliveries",
        Some(&a),
        Nav::Webhooks,
        flash.as_ref(),
        html! {
            h1 { "Webhook " (hook.id) }
            p { (hook.url) }
            table.deliveries id="deliveries" {
                thead { tr {
                    th { "Id" } th { "Event" } th { "Link" } th { "Status" } th { "Attempts" }
                    th { "Last answer" } th { "Last error" } th { "Event time" } th { "Delivered" } th { "" }
                } }
                tbody {
                    @for d in &log {
                        tr data-delivery=(d.id) data-status=(d.status.as_str()) {
                            td { (d.id) }
                            td { (d.event) }
                            td { @if let Some(l) = d.link_id { (admin.app.codec.encode(l).to_string()) } }
                            td.status { (d.status.as_str())
                                @if d.status == DeliveryStatus::Pending { " (next " (view::time(d.next_attempt_at)) ")" } }
                            td.attempts { (d.attempts) }
                            td { @if let Some(s) = d.last_status { (s) } }
                            td.error { @if let Some(e) = &d.last_error { (e) } }
                            td.time { (view::time(d.created_at)) }
                            td.time { @if let Some(t) = d.delivered_at { (view::time(t)) } }
                            td {
                                @if manages {
                                    form method="post" action={ "/admin/webhooks/" (hook.id) "/deliveries/" (d.id) "/redeliver" } {
                                        (view::csrf_field(&a))
                                        button.small type="submit" { "Redeliver" }
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

/// POST `/admin/webhooks`.
pub async fn create(
    State(admin): State<AdminState>,
    a: Authed,
    fields: FormFields,
) -> Result<Redirect, AdminError> {
    let req = AddWebhook {
        url: fields.get("url"),
        events: fields.all("events"),
        team: Some(fields.get("team")),
    };
    let (hook, secret) = webhooks::add(&admin.app, &a.principal(), &req).await?;
    flash(
        &admin,
        &a,
        format!("Webhook {} added. Its signing secret:", hook.id),
        Some(secret),
    );
    Ok(Redirect::to("/admin/webhooks"))
}

/// POST `/admin/webhooks/{id}/delete`.
pub async fn delete(
    State(admin): State<AdminState>,
    a: Authed,
    Path(id): Path<i64>,
) -> Result<Redirect, AdminError> {
    webhooks::delete(&admin.app, &a.principal(), id).await?;
    flash(&admin, &a, format!("Webhook {id} deleted."), None);
    Ok(Redirect::to("/admin/webhooks"))
}

/// POST `/admin/webhooks/{id}/deliveries/{delivery}/redeliver`.
pub async fn redeliver(
    State(admin): State<AdminState>,
    a: Authed,
    Path((id, delivery)): Path<(i64, i64)>,
) -> Result<Redirect, AdminError> {
    let again = webhooks::redeliver(&admin.app, &a.principal(), id, delivery).await?;
    flash(
        &admin,
        &a,
        format!("Delivery {delivery} queued again as delivery {}.", again.id),
        None,
    );
    Ok(Redirect::to(&format!("/admin/webhooks/{id}")))
}
