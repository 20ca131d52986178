//! Click batches on PostgreSQL, counted exactly once by batch id.
//!
//! Each daemon aggregates the clicks it received and writes them as one
//! batch: in one transaction, the batch id is inserted into
//! `click_batches` (`ON CONFLICT DO NOTHING`), and only when that inserted
//! a row are the per-link totals and the per-hour rows moved by the
//! batch's deltas. A batch re-sent after a timeout, a daemon restart or a
//! PostgreSQL restart finds its id and changes nothing; a batch whose
//! transaction did not commit left no id and is counted when re-sent.
//! There is no per-click write and no shared counter row: a link's row is
//! touched once per batch.

use std::collections::BTreeMap;

use deadpool_postgres::GenericClient;

use super::{changes, PgError};

/// One row of a batch's deltas: clicks of one link in one hour, from one
/// kind of visitor. The caller groups and normalises (referrer key, hour)
/// exactly as for the SQLite store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClickDelta {
    /// The link clicked; deltas for unknown or deleted links are dropped.
    pub link_id: u64,
    /// Hours since the Unix epoch.
    pub hour: i64,
    /// `DeviceClass` as stored.
    pub device: i16,
    /// Counted apart from humans.
    pub bot: bool,
    /// Referrer host key ('' for none).
    pub referrer: String,
    /// The visitor's country code ('--' for unknown).
    pub country: String,
    /// Clicks.
    pub count: i64,
}

/// What recording a batch did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BatchOutcome {
    /// The batch id was new, so its clicks were counted (false: a re-send).
    pub counted_now: bool,
    /// Clicks added (deltas for unknown links are not).
    pub counted: u64,
    /// Links that reached their visit limit with this batch (id and alias):
    /// a change was logged for each, for the edges to refetch.
    pub exhausted: Vec<(u64, Option<String>)>,
}

/// Records batch `batch_id`, seen at Unix second `at`, in the caller's
/// transaction: counts it if its id is new, does nothing if not.
pub async fn record_batch(
    tx: &impl GenericClient,
    batch_id: &[u8],
    at: i64,
    deltas: &[ClickDelta],
) -> Result<BatchOutcome, PgError> {
    let claim = tx
        .prepare_cached(
            "INSERT INTO click_batches (batch_id, seen_at) VALUES ($1, $2) \
             ON CONFLICT (batch_id) DO NOTHING",
        )
        .await
        .map_err(PgError::query("preparing a click batch"))?;
    let new = tx
        .execute(&claim, &[&batch_id, &at])
        .await
        .map_err(PgError::query("recording a click batch id"))?;
    if new == 0 {
        return Ok(BatchOutcome::default());
    }
    let totals = tx
        .prepare_cached(
            "UPDATE links SET clicks = clicks + $2, bot_clicks = bot_clicks + $3 WHERE id = $1 \
             RETURNING max_visits, clicks - bot_clicks, alias",
        )
        .await
        .map_err(PgError::query("preparing click totals"))?;
    let upsert = tx
        .prepare_cached(
            "INSERT INTO clicks (link_id, hour, device, bot, referrer, country, count) \
             VALUES ($1, $2, $3, $4, $5, $6, $7) \
             ON CONFLICT (link_id, hour, device, bot, referrer, country) \
             DO UPDATE SET count = clicks.count + excluded.count",
        )
        .await
        .map_err(PgError::query("preparing click rows"))?;
    let mut outcome = BatchOutcome {
        counted_now: true,
        ..BatchOutcome::default()
    };
    // Per link in id order: rows are locked in one order by every node, so
    // two batches never deadlock.
    let mut by_link: BTreeMap<u64, Vec<&ClickDelta>> = BTreeMap::new();
    for d in deltas.iter().filter(|d| d.count > 0) {
        by_link.entry(d.link_id).or_default().push(d);
    }
    for (link_id, mut rows) in by_link {
        let Ok(id) = i64::try_from(link_id) else {
            continue;
        };
        let clicks: i64 = rows.iter().map(|d| d.count).sum();
        let bots: i64 = rows.iter().filter(|d| d.bot).map(|d| d.count).sum();
        let Some(row) = tx
            .query_opt(&totals, &[&id, &clicks, &bots])
            .await
            .map_err(PgError::query("adding click totals"))?
        else {
            continue; // unknown or deleted link
        };
        rows.sort_by(|a, b| {
            (a.hour, a.device, a.bot, &a.referrer, &a.country).cmp(&(
                b.hour,
                b.device,
                b.bot,
                &b.referrer,
                &b.country,
            ))
        });
        for d in rows {
            tx.execute(
                &upsert,
                &[
                    &id,
                    &d.hour,
                    &d.device,
                    &d.bot,
                    &d.referrer,
                    &d.country,
                    &d.count,
                ],
            )
            .await
            .map_err(PgError::query("adding click rows"))?;
        }
        outcome.counted += clicks as u64;
        let (max_visits, humans_after, alias): (Option<i64>, i64, Option<String>) =
            (row.get(0), row.get(1), row.get(2));
        let humans_before = humans_after - (clicks - bots);
        if max_visits.is_some_and(|max| humans_before < max && humans_after >= max) {
            changes::append(tx, link_id, alias.as_deref(), alias.as_deref()).await?;
            outcome.exhausted.push((link_id, alias));
        }
    }
    Ok(outcome)
}

/// Forgets batch ids seen before Unix second `before` (a batch re-sent
/// later than that would count again: keep it past every retry horizon).
pub async fn prune_batches(client: &impl GenericClient, before: i64) -> Result<u64, PgError> {
    client
        .execute("DELETE FROM click_batches WHERE seen_at < $1", &[&before])
        .await
        .map_err(PgError::query("pruning click batch ids"))
}
