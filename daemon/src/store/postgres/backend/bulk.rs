//! Many new links written in a few statements (an import chunk): one
//! binary `COPY` of every link, one append of their change-log entries,
//! and one read of the teams whose webhooks hear of created links. A
//! statement per link cost an import about five round trips a row; a
//! `COPY` also spares the `INSERT … SELECT FROM unnest(…)` it replaced the
//! arrays, their unnesting into a tuple store, and a WAL record per row
//! (PostgreSQL writes one per page of rows it copies).
//!
//! The caller decided row by row what to write, under its name locks, so
//! nothing here is refused: a conflict (an id or alias stored meanwhile by
//! a writer that took no lock) fails the whole write.

use deadpool_postgres::{GenericClient, Transaction};
use tokio_postgres::binary_copy::BinaryCopyInWriter;
use tokio_postgres::types::{ToSql, Type};

use super::new_link::{insert_columns, Values, COLUMNS, COLUMN_TYPES};
use super::rows::failed;
use super::webhooks;
use crate::store::postgres::changes;
use crate::store::{Link, StoreResult, WebhookEvent};

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

/// Inserts `rows` in the caller's transaction, in their order: the links,
/// then the change-log entries of those `logged`, then the webhook
/// deliveries of their creation.
pub(super) async fn insert(tx: &Transaction<'_>, rows: &[NewRow<'_>], now: i64) -> StoreResult<()> {
    if rows.is_empty() {
        return Ok(());
    }
    let sink = tx
        .copy_in(concat!(
            "COPY links (",
            insert_columns!(),
            ", clicks, bot_clicks) FROM STDIN (FORMAT binary)"
        ))
        .await
        .map_err(failed("starting a bulk link insert"))?;
    let types: Vec<Type> = COLUMN_TYPES
        .into_iter()
        .chain([Type::INT8, Type::INT8])
        .collect();
    let writer = BinaryCopyInWriter::new(sink, &types);
    tokio::pin!(writer);
    let mut ids = Vec::with_capacity(rows.len());
    for row in rows {
        let v = Values::new(row.link, row.hash)?;
        let (clicks, bot_clicks) = row.clicks;
        let link = v.params();
        let values: [&(dyn ToSql + Sync); COLUMNS + 2] = std::array::from_fn(|i| match i {
            i if i < COLUMNS => link[i],
            i if i == COLUMNS => &clicks,
            _ => &bot_clicks,
        });
        writer
            .as_mut()
            .write(&values)
            .await
            .map_err(failed("writing a link of a bulk write"))?;
        ids.push(v.id);
    }
    writer
        .as_mut()
        .finish()
        .await
        .map_err(failed("inserting a link of a bulk write"))?;
    let logged: Vec<(i64, Option<&str>)> = rows
        .iter()
        .zip(&ids)
        .filter(|(r, _)| r.logged)
        .map(|(r, &id)| (id, r.link.alias.as_deref()))
        .collect();
    changes::append_new(tx, &logged).await?;
    let event = WebhookEvent::Created;
    let teams = webhooks::subscribed_teams(tx, event).await?;
    if !teams.is_empty() {
        for row in rows.iter().filter(|r| teams.contains(&r.link.team_id)) {
            webhooks::link_event(tx, event, row.link, now).await?;
        }
    }
    Ok(())
}
