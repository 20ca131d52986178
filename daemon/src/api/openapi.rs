//! The OpenAPI document, generated from the handlers and types.

use axum::Json;
use utoipa::openapi::security::{
    ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme,
};
use utoipa::openapi::RefOr;
use utoipa::{Modify, OpenApi};

use super::error::PROBLEM_JSON;
use super::{
    checks, error, health, ids, keys, links, qr, stats, takedowns, teams, users, webhooks,
};

/// The whole API.
#[derive(OpenApi)]
#[openapi(
    servers((url = "/", description = "The daemon, as nginx proxies it (or its API socket)")),
    info(
        title = "shortlinkd",
        description = "HTTP API of the shortlink daemon. Every endpoint but health needs an API key (`X-Api-Key` or `Authorization: Bearer`) or a signed request (`X-App-Id`, `X-Timestamp`, `X-Signature` = hex HMAC-SHA256 with the app secret of `\"{timestamp}\\n{METHOD}\\n{path?query}\\n{hex sha256(body)}\"`, timestamp within 60 s, each signature usable once). Errors are `{\"error\": {\"code\", \"message\", \"field\"}}`."
    ),
    paths(
        links::create, links::batch::create_batch, links::list, links::get, links::update, links::delete,
        stats::get, stats::site, qr::get, checks::get, checks::failing,
        keys::create_key, keys::list_keys, keys::revoke_key,
        keys::create_app, keys::list_apps, keys::revoke_app,
        users::create, users::set_password, users::list, users::delete,
        takedowns::create, takedowns::list, takedowns::get, takedowns::undo, takedowns::links,
        teams::set_membership, teams::create, teams::list, teams::delete,
        webhooks::create, webhooks::list, webhooks::get, webhooks::delete,
        webhooks::deliveries, webhooks::redeliver,
        health::get, ids::get,
        super::metrics::get_authenticated,
        openapi_json,
    ),
    components(schemas(
        error::ErrorBody, error::ErrorDetail,
        crate::links::CreateLink, crate::links::UpdateLink, crate::links::LinkView,
        crate::links::TimeInput, crate::links::RenewInput, crate::links::TargetsInput,
        crate::links::VariantInput,
        links::BatchRequest, links::BatchResponse, links::BatchItem, links::batch::BatchResults, links::LinkPage,
        crate::stats::StatsView, crate::stats::Point, crate::stats::DeviceCounts,
        crate::stats::ReferrerCount, crate::stats::CountryCount, crate::stats::VariantCount, crate::stats::Granularity,
        crate::stats::SiteStatsView, crate::stats::LinkCount, qr::QrFormat,
        keys::NewCredential, keys::KeyView, keys::CreatedKey, keys::KeyList,
        keys::AppView, keys::CreatedApp, keys::AppList,
        users::NewUser, users::NewPassword, users::UserView, users::UserList,
        takedowns::NewTakedownBody, takedowns::TakedownView, takedowns::TakedownList,
        takedowns::TakedownLinkView, takedowns::TakedownLinks,
        checks::CheckView, checks::CheckList,
        teams::NewTeam, teams::TeamView, teams::TeamList, teams::Membership, crate::access::Role,
        webhooks::NewWebhookBody, webhooks::WebhookView, webhooks::CreatedWebhook,
        webhooks::WebhookList, webhooks::DeliveryView, webhooks::DeliveryList,
        health::Health,
        ids::IdsView, ids::IdRangeView, ids::RecyclingView, crate::store::RangeState,
    )),
    modifiers(&SecuritySchemes),
    tags(
        (name = "links", description = "Create, read, list, edit and delete short links"),
        (name = "stats", description = "Click statistics"),
        (name = "keys", description = "API keys and signing apps (admin)"),
        (name = "users", description = "Users, their team and role (admin)"),
        (name = "teams", description = "Teams: who links, users and keys belong to (admin)"),
        (name = "takedowns", description = "Switch off every link to a host or by one creator, and undo it (admin)"),
        (name = "webhooks", description = "Signed POSTs of link events to a team's receivers, their delivery log and redelivery"),
        (name = "health", description = "Readiness, metrics, id ranges and this document"),
    )
)]
pub struct ApiDoc;

struct SecuritySchemes;

impl Modify for SecuritySchemes {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        let header = |name: &str, what: &str| {
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(name, what)))
        };
        components.add_security_scheme("api_key", header("X-Api-Key", "API key (`slk_...`)"));
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some("The same API key as `Authorization: Bearer slk_...`"))
                    .build(),
            ),
        );
        components.add_security_scheme("app_id", header("X-App-Id", "Signing app id"));
        components.add_security_scheme(
            "app_timestamp",
            header(
                "X-Timestamp",
                "Unix seconds, within 60 s of the daemon clock",
            ),
        );
        components.add_security_scheme(
            "app_signature",
            header("X-Signature", "Hex HMAC-SHA256 of the signing string"),
        );
        // Wherever an API key is accepted, so is the bearer form.
        for item in openapi.paths.paths.values_mut() {
            for op in [
                &mut item.get,
                &mut item.post,
                &mut item.put,
                &mut item.patch,
                &mut item.delete,
            ]
            .into_iter()
            .flatten()
            {
                if let Some(security) = op.security.as_mut().filter(|s| !s.is_empty()) {
                    security.push(SecurityRequirement::new("bearer", Vec::<String>::new()));
                }
                problem_content(&mut op.responses);
            }
        }
    }
}

/// Error replies are problem documents: their `ErrorBody` content is
/// `application/problem+json`, as `error.rs` sends it.
fn problem_content(responses: &mut utoipa::openapi::Responses) {
    for (status, response) in responses.responses.iter_mut() {
        let (false, RefOr::T(response)) = (status.starts_with(['1', '2', '3']), response) else {
            continue;
        };
        let is_problem = response.content.get("application/json").is_some_and(
            |c| matches!(&c.schema, Some(RefOr::Ref(r)) if r.ref_location.ends_with("/ErrorBody")),
        );
        if is_problem {
            if let Some(content) = response.content.shift_remove("application/json") {
                response.content.insert(PROBLEM_JSON.to_string(), content);
            }
        }
    }
}

/// This document: public, as the contract a client is written against
/// holds no data of anyone's.
#[utoipa::path(
    get, path = "/api/v1/openapi.json", operation_id = "get_openapi", tag = "health",
    responses(
        (status = 200, description = "OpenAPI 3.1 document", body = Object),
    ),
    security(())
)]
pub async fn openapi_json() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}
