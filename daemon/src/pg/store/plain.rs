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

use deadpool_postgres::{GenericClient, Transaction};
use tokio_postgres::types::ToSql;

use super::bulk::{self, NewRow};
use super::new_link::{insert_columns, Values};
use super::rows::failed;
use crate::db::{link_payload, Inserted, NewLink, WebhookEvent};
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
        .prepare_cached(concat!(
            "WITH made AS (INSERT INTO links (",
            insert_columns!(),
            ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, \
             $17, $18, $19, $20, $21, $22, $23)) \
             INSERT INTO webhook_deliveries (webhook_id, event, link_id, payload, \
             next_attempt_at, created_at) \
             SELECT id, $24, $1, $25, $26, $26 FROM webhooks \
             WHERE team_id = $22 AND active AND (',' || events || ',') LIKE $27 ORDER BY id"
        ))
        .await
        .map_err(failed("preparing a plain link insert"))?;
    let link = new.link;
    let event = WebhookEvent::Created;
    let (name, payload, pattern) = (event.as_str(), link_payload(&link), event.pattern());
    let values = Values::new(&link, &new.dedupe_hash)?;
    let mut params: Vec<&(dyn ToSql + Sync)> = values.params().to_vec();
    params.extend([&name as &(dyn ToSql + Sync), &payload, &now, &pattern]);
    c.execute(&st, &params)
        .await
        .map_err(failed("inserting a link"))?;
    Ok(Inserted::New(link))
}

/// Writes many plain creates in the caller's transaction.
pub(super) async fn insert_many(
    tx: &Transaction<'_>,
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
    bulk::generic_plans(tx).await?;
    bulk::insert(tx, &rows, now).await
}
