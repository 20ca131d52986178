//! Creates that claim no name: no alias, no alias targets, no dedupe (most
//! creates). Nothing in them can be refused or must be read first, so they
//! skip the statement-per-step transaction of `links::insert_new`:
//!
//! * one link is one statement, the link and its webhook deliveries
//!   (`webhooks::link_event`) in one `WITH`, committed on its own: one
//!   round trip instead of four (begin, insert, subscription read, commit);
//! * many are one transaction of [`bulk::insert`] (the caller's).
//!
//! Either way each is committed before the call answers, as before.

use deadpool_postgres::GenericClient;
use shortlink_core::check_mode::CheckMode;

use super::bulk::{self, NewRow};
use super::rows::{bigint, failed};
use crate::db::{link_payload, Inserted, NewLink, WebhookEvent};
use crate::store::links::{country_targets_to_stored, variants_to_stored};
use crate::store::StoreResult;

/// Whether `links` (one or more) are all plain creates.
pub(super) fn all_plain(links: &[NewLink]) -> bool {
    !links.is_empty()
        && links
            .iter()
            .all(|n| !n.dedupe && n.link.alias.is_none() && n.alias_targets.is_empty())
}

/// Writes one plain create in one statement.
pub(super) async fn insert_one(
    c: &impl GenericClient,
    new: NewLink,
    now: i64,
) -> StoreResult<Inserted> {
    let st = c
        .prepare_cached(
            "WITH made AS ( \
                 INSERT INTO links (id, alias, url, created_at, updated_at, expires_at, \
                 renew_ttl, max_visits, redirect, target_desktop, target_mobile, target_ios, \
                 target_android, disabled, tags, created_by, dedupe_hash, forward_query, \
                 country_targets, password_hash, variants, team_id, check_mode) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, \
                 $17, $18, $19, $20, $21, $22, $23)) \
             INSERT INTO webhook_deliveries (webhook_id, event, link_id, payload, \
             next_attempt_at, created_at) \
             SELECT id, $24, $1, $25, $26, $26 FROM webhooks \
             WHERE team_id = $22 AND active AND (',' || events || ',') LIKE $27 ORDER BY id",
        )
        .await
        .map_err(failed("preparing a plain link insert"))?;
    let link = new.link;
    let redirect = link.redirect.map(i32::from);
    let tags = serde_json::to_string(&link.tags).unwrap_or_else(|_| "[]".into());
    let event = WebhookEvent::Created;
    c.execute(
        &st,
        &[
            &bigint(link.id)?,
            &link.alias,
            &link.url,
            &link.created_at,
            &link.updated_at,
            &link.expires_at,
            &link.renew_ttl,
            &link.max_visits,
            &redirect,
            &link.targets.desktop,
            &link.targets.mobile,
            &link.targets.ios,
            &link.targets.android,
            &link.disabled,
            &tags,
            &link.created_by,
            &new.dedupe_hash.as_slice(),
            &link.forward_query,
            &country_targets_to_stored(&link.country_targets),
            &link.password_hash,
            &variants_to_stored(&link.variants),
            &link.team_id,
            &link.check.map(CheckMode::as_str),
            &event.as_str(),
            &link_payload(&link),
            &now,
            &event.pattern(),
        ],
    )
    .await
    .map_err(failed("inserting a link"))?;
    Ok(Inserted::New(link))
}

/// Writes many plain creates in the caller's transaction.
pub(super) async fn insert_many(
    tx: &impl GenericClient,
    links: &[NewLink],
    now: i64,
) -> StoreResult<()> {
    let rows: Vec<NewRow> = links
        .iter()
        .map(|n| NewRow {
            link: &n.link,
            hash: &n.dedupe_hash,
            clicks: (0, 0),
            logged: false,
        })
        .collect();
    bulk::insert(tx, &rows, now).await
}
