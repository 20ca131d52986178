//! Creates that claim no name: no alias, no alias targets, no dedupe (most
//! creates). Nothing in them can be refused or must be read first, so they
//! skip the statement-per-step transaction of `links::insert_new`:
//!
//! * one link is one statement, the link and its webhook deliveries
//!   (`webhooks::link_event`) in one `WITH`, committed on its own: one
//!   round trip instead of four (begin, insert, subscription read, commit);
//! * single creates that arrive together (`super::create_groups`) are one
//!   statement of the same shape with a row per link: one commit, and one
//!   WAL flush, for the group;
//! * a batch's many are one transaction of [`bulk::insert`] (the caller's).
//!
//! Either way each is committed before the call answers, as before.

use std::fmt::Write;

use deadpool_postgres::{GenericClient, Transaction};
use tokio_postgres::types::ToSql;

use super::bulk::{self, NewRow};
use super::new_link::{insert_columns, Values, COLUMNS};
use super::rows::failed;
use crate::store::{link_payload, Inserted, NewLink, StoreResult, WebhookEvent};

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
             $17, $18, $19, $20, $21, $22, $23, $24)) \
             INSERT INTO webhook_deliveries (webhook_id, event, link_id, payload, \
             next_attempt_at, created_at) \
             SELECT id, $25, $1, $26, $27, $27 FROM webhooks \
             WHERE team_id = $22 AND active AND (',' || events || ',') LIKE $28 ORDER BY id"
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

/// The statement writing `rows` plain creates: a `VALUES` row per link of
/// [`insert_columns!`] (typed by their columns), then the four arrays of
/// the webhook deliveries' part (link id, team, payload, time), the event
/// name and its pattern. Deliveries are made in the links' order, as one
/// [`insert_one`] after another would make them.
fn group_statement(rows: usize) -> String {
    let mut sql = String::from(concat!(
        "WITH made AS (INSERT INTO links (",
        insert_columns!(),
        ") VALUES "
    ));
    for row in 0..rows {
        sql.push_str(if row == 0 { "(" } else { ", (" });
        for column in 0..COLUMNS {
            let sep = if column == 0 { "" } else { ", " };
            let _ = write!(sql, "{sep}${}", row * COLUMNS + column + 1);
        }
        sql.push(')');
    }
    let p = rows * COLUMNS;
    let _ = write!(
        sql,
        ") INSERT INTO webhook_deliveries (webhook_id, event, link_id, payload, \
         next_attempt_at, created_at) \
         SELECT w.id, ${event}, n.id, n.payload, n.at, n.at \
         FROM unnest(${ids}::int8[], ${teams}::int8[], ${payloads}::text[], ${ats}::int8[]) \
         WITH ORDINALITY AS n (id, team_id, payload, at, place) \
         JOIN webhooks w ON w.team_id = n.team_id AND w.active \
         AND (',' || w.events || ',') LIKE ${pattern} ORDER BY n.place, w.id",
        ids = p + 1,
        teams = p + 2,
        payloads = p + 3,
        ats = p + 4,
        event = p + 5,
        pattern = p + 6,
    );
    sql
}

/// Most creates [`insert_group`] writes in one statement.
pub(super) const MAX_GROUP: usize = 64;

/// The text of [`group_statement`] for `rows` links, built once per size
/// for the daemon's life (the statement cache is keyed by the text, and a
/// group of 64 is about 8 KiB of it).
fn group_text(rows: usize) -> std::borrow::Cow<'static, str> {
    static TEXTS: [std::sync::OnceLock<String>; MAX_GROUP + 1] =
        [const { std::sync::OnceLock::new() }; MAX_GROUP + 1];
    match TEXTS.get(rows) {
        Some(text) => text.get_or_init(|| group_statement(rows)).as_str().into(),
        // Groups are cut at MAX_GROUP; a longer one is built each time.
        None => group_statement(rows).into(),
    }
}

/// Writes plain creates, each with the time it was asked at, in one
/// statement: all are stored or none. The driver's error is kept for the
/// caller to judge (a refusal by the server stored nothing, so each link
/// can be tried alone).
pub(super) async fn insert_group(
    c: &impl GenericClient,
    group: &[(NewLink, i64)],
) -> StoreResult<Result<(), tokio_postgres::Error>> {
    let st = c
        .prepare_cached(&group_text(group.len()))
        .await
        .map_err(failed("preparing a grouped link insert"))?;
    let values = group
        .iter()
        .map(|(n, _)| Values::new(&n.link, &n.dedupe_hash))
        .collect::<StoreResult<Vec<_>>>()?;
    let ids: Vec<i64> = values.iter().map(|v| v.id).collect();
    let teams: Vec<i64> = group.iter().map(|(n, _)| n.link.team_id).collect();
    let payloads: Vec<String> = group.iter().map(|(n, _)| link_payload(&n.link)).collect();
    let ats: Vec<i64> = group.iter().map(|(_, at)| *at).collect();
    let event = WebhookEvent::Created;
    let (name, pattern) = (event.as_str(), event.pattern());
    let mut params: Vec<&(dyn ToSql + Sync)> = Vec::with_capacity(group.len() * COLUMNS + 6);
    for v in &values {
        params.extend(v.params());
    }
    params.extend([
        &ids as &(dyn ToSql + Sync),
        &teams,
        &payloads,
        &ats,
        &name,
        &pattern,
    ]);
    Ok(c.execute(&st, &params).await.map(drop))
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
