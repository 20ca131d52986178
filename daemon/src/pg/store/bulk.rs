//! Many new links written in a few statements (an import chunk): one
//! `INSERT … SELECT FROM unnest(…)` of every link, one append of their
//! change-log entries, and one read of the teams whose webhooks hear of
//! created links. A statement per link cost an import about five round
//! trips a row.
//!
//! The caller decided row by row what to write, under its name locks, so
//! nothing here is refused: a conflict (an id or alias stored meanwhile by
//! a writer that took no lock) fails the whole write.

use deadpool_postgres::GenericClient;

use super::new_link::{insert_columns, Values};
use super::rows::failed;
use super::webhooks;
use crate::db::WebhookEvent;
use crate::pg::changes;
use crate::store::links::Link;
use crate::store::StoreResult;

/// Makes the rest of the caller's transaction run each prepared statement
/// on a generic plan that reads the links table by its indexes.
///
/// A bulk write binds arrays of thousands of values. On its first five
/// runs on a connection (and the pool has many) PostgreSQL makes a custom
/// plan with every value as a constant: tens of milliseconds to plan, and
/// a dedupe read of 20,000 hashes sized from the array, for which the
/// default costs pick a parallel scan of the whole table over one index
/// probe per hash. A generic plan made without `enable_seqscan` can be
/// worse: made while the table is small, it scans it, and keeps scanning
/// it as it grows. These statements only ever look rows up by key, so a
/// scan of the table is never the right plan for them. `LOCAL`: both
/// settings end with the transaction.
pub(super) async fn generic_plans(tx: &impl GenericClient) -> StoreResult<()> {
    tx.batch_execute(
        "SET LOCAL plan_cache_mode = force_generic_plan; SET LOCAL enable_seqscan = off",
    )
    .await
    .map_err(failed("choosing the plans of a bulk write"))
}

/// A link to write.
pub(super) struct NewRow<'a> {
    pub link: &'a Link,
    /// Its dedupe hash (stored for every link, as a single insert does).
    pub hash: &'a [u8; 32],
    /// The click totals it starts with: `(clicks, bot_clicks)`.
    pub clicks: (i64, i64),
    /// Appended to the change log: it has an alias, or keeps a code an
    /// edge may hold as missing.
    pub logged: bool,
}

/// The columns of the links table, one array per column.
#[derive(Default)]
struct Columns<'a> {
    id: Vec<i64>,
    alias: Vec<Option<&'a str>>,
    url: Vec<&'a str>,
    created_at: Vec<i64>,
    updated_at: Vec<i64>,
    expires_at: Vec<Option<i64>>,
    renew_ttl: Vec<Option<i64>>,
    max_visits: Vec<Option<i64>>,
    redirect: Vec<Option<i32>>,
    desktop: Vec<Option<&'a str>>,
    mobile: Vec<Option<&'a str>>,
    ios: Vec<Option<&'a str>>,
    android: Vec<Option<&'a str>>,
    disabled: Vec<bool>,
    tags: Vec<String>,
    created_by: Vec<Option<&'a str>>,
    hash: Vec<&'a [u8]>,
    forward_query: Vec<Option<bool>>,
    country_targets: Vec<Option<String>>,
    password_hash: Vec<Option<&'a str>>,
    variants: Vec<Option<String>>,
    team_id: Vec<i64>,
    check_mode: Vec<Option<&'static str>>,
    clicks: Vec<i64>,
    bot_clicks: Vec<i64>,
}

impl<'a> Columns<'a> {
    fn push(&mut self, row: &NewRow<'a>) -> StoreResult<()> {
        let l = row.link;
        let v = Values::new(l, row.hash)?;
        self.id.push(v.id);
        self.alias.push(l.alias.as_deref());
        self.url.push(&l.url);
        self.created_at.push(l.created_at);
        self.updated_at.push(l.updated_at);
        self.expires_at.push(l.expires_at);
        self.renew_ttl.push(l.renew_ttl);
        self.max_visits.push(l.max_visits);
        self.redirect.push(v.redirect);
        self.desktop.push(l.targets.desktop.as_deref());
        self.mobile.push(l.targets.mobile.as_deref());
        self.ios.push(l.targets.ios.as_deref());
        self.android.push(l.targets.android.as_deref());
        self.disabled.push(l.disabled);
        self.tags.push(v.tags);
        self.created_by.push(l.created_by.as_deref());
        self.hash.push(row.hash);
        self.forward_query.push(l.forward_query);
        self.country_targets.push(v.country_targets);
        self.password_hash.push(l.password_hash.as_deref());
        self.variants.push(v.variants);
        self.team_id.push(l.team_id);
        self.check_mode.push(v.check);
        self.clicks.push(row.clicks.0);
        self.bot_clicks.push(row.clicks.1);
        Ok(())
    }
}

/// Inserts `rows` in the caller's transaction, in their order: the links,
/// then the change-log entries of those `logged`, then the webhook
/// deliveries of their creation.
pub(super) async fn insert(
    c: &impl GenericClient,
    rows: &[NewRow<'_>],
    now: i64,
) -> StoreResult<()> {
    if rows.is_empty() {
        return Ok(());
    }
    let mut cols = Columns::default();
    for row in rows {
        cols.push(row)?;
    }
    let st = c
        .prepare_cached(concat!(
            "INSERT INTO links (",
            insert_columns!(),
            ", clicks, bot_clicks) \
             SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[], \
             $5::bigint[], $6::bigint[], $7::bigint[], $8::bigint[], $9::int4[], $10::text[], \
             $11::text[], $12::text[], $13::text[], $14::bool[], $15::text[], $16::text[], \
             $17::bytea[], $18::bool[], $19::text[], $20::text[], $21::text[], $22::bigint[], \
             $23::text[], $24::bigint[], $25::bigint[])"
        ))
        .await
        .map_err(failed("preparing a bulk link insert"))?;
    c.execute(
        &st,
        &[
            &cols.id,
            &cols.alias,
            &cols.url,
            &cols.created_at,
            &cols.updated_at,
            &cols.expires_at,
            &cols.renew_ttl,
            &cols.max_visits,
            &cols.redirect,
            &cols.desktop,
            &cols.mobile,
            &cols.ios,
            &cols.android,
            &cols.disabled,
            &cols.tags,
            &cols.created_by,
            &cols.hash,
            &cols.forward_query,
            &cols.country_targets,
            &cols.password_hash,
            &cols.variants,
            &cols.team_id,
            &cols.check_mode,
            &cols.clicks,
            &cols.bot_clicks,
        ],
    )
    .await
    .map_err(failed("inserting a link of a bulk write"))?;
    let logged: Vec<(i64, Option<&str>)> = rows
        .iter()
        .zip(&cols.id)
        .filter(|(r, _)| r.logged)
        .map(|(r, &id)| (id, r.link.alias.as_deref()))
        .collect();
    changes::append_new(c, &logged).await?;
    let event = WebhookEvent::Created;
    let teams = webhooks::subscribed_teams(c, event).await?;
    if !teams.is_empty() {
        for row in rows.iter().filter(|r| teams.contains(&r.link.team_id)) {
            webhooks::link_event(c, event, row.link, now).await?;
        }
    }
    Ok(())
}
