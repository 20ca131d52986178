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

use shortlink_core::clicks::counts_for;

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

/// Clicks of one link in one hour sent to one A/B variant (only clicks
/// that went to a variant have one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VariantDelta {
    /// The link clicked; deltas for unknown or deleted links are dropped.
    pub link_id: u64,
    /// Hours since the Unix epoch.
    pub hour: i64,
    /// The variant's index in the link's list.
    pub variant: i16,
    /// Clicks.
    pub count: i64,
}

/// What recording a batch did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BatchOutcome {
    /// The batch id was new, so its clicks were counted (false: a re-send).
    pub counted_now: bool,
    /// Clicks added (deltas for unknown links, and clicks from before their
    /// link was created, are not).
    pub counted: u64,
    /// The links whose clicks were counted, ascending.
    pub links: Vec<u64>,
    /// Links that reached their visit limit with this batch (id and alias):
    /// a change was logged for each, for the edges to refetch.
    pub exhausted: Vec<(u64, Option<String>)>,
}

/// Records batch `batch_id`, seen at Unix second `at`, in the caller's
/// transaction: counts it if its id is new, does nothing if not. The
/// `variants` split some of the `deltas`' clicks by A/B variant.
pub async fn record_batch(
    tx: &impl GenericClient,
    batch_id: &[u8],
    at: i64,
    deltas: &[ClickDelta],
    variants: &[VariantDelta],
) -> Result<BatchOutcome, PgError> {
    if !claim_batch(tx, batch_id, at).await? {
        return Ok(BatchOutcome::default());
    }
    let mut outcome = add_deltas(tx, deltas, variants).await?;
    outcome.counted_now = true;
    Ok(outcome)
}

/// Claims batch id `batch_id`, seen at Unix second `at`, in the caller's
/// transaction: false when it was claimed before (a re-send).
pub async fn claim_batch(
    tx: &impl GenericClient,
    batch_id: &[u8],
    at: i64,
) -> Result<bool, PgError> {
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
    Ok(new == 1)
}

/// Adds clicks (of a claimed batch, or folded from `click_log`) to the
/// link totals, `clicks` and `variant_clicks`, in the caller's transaction;
/// links that reach their visit limit get a change-log row. A click from
/// before its link was created (a late batch for a recycled id) is not
/// counted.
pub async fn add_deltas(
    tx: &impl GenericClient,
    deltas: &[ClickDelta],
    variants: &[VariantDelta],
) -> Result<BatchOutcome, PgError> {
    let mut outcome = BatchOutcome::default();
    let mut clicked: Vec<i64> = deltas
        .iter()
        .filter(|d| d.count > 0)
        .filter_map(|d| i64::try_from(d.link_id).ok())
        .collect();
    clicked.sort_unstable();
    clicked.dedup();
    if clicked.is_empty() {
        return Ok(outcome);
    }
    // The rows are locked in id order first, by every node alike, so two
    // batches never deadlock; then each statement covers the whole batch
    // (a round trip per statement, not per link or per row). The lock
    // reads when each link was created: a click from before that was an
    // old link's (a late batch for a recycled id) and is not counted.
    let lock = tx
        .prepare_cached(
            "SELECT id, created_at FROM links WHERE id = ANY($1) ORDER BY id FOR UPDATE",
        )
        .await
        .map_err(PgError::query("preparing the click rows' locks"))?;
    let created: BTreeMap<i64, i64> = tx
        .query(&lock, &[&clicked])
        .await
        .map_err(PgError::query("locking the links clicked"))?
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let countable = |link_id: u64, hour: i64, count: i64| {
        count > 0
            && i64::try_from(link_id)
                .ok()
                .and_then(|id| created.get(&id))
                .is_some_and(|&at| counts_for(hour, at))
    };
    let deltas: Vec<&ClickDelta> = deltas
        .iter()
        .filter(|d| countable(d.link_id, d.hour, d.count))
        .collect();
    let variants: Vec<&VariantDelta> = variants
        .iter()
        .filter(|d| countable(d.link_id, d.hour, d.count))
        .collect();
    // Per link: its total and bot deltas, in id order.
    let mut by_link: BTreeMap<i64, (i64, i64)> = BTreeMap::new();
    for d in &deltas {
        let t = by_link.entry(d.link_id as i64).or_default();
        t.0 += d.count;
        if d.bot {
            t.1 += d.count;
        }
    }
    if by_link.is_empty() {
        return Ok(outcome);
    }
    let ids: Vec<i64> = by_link.keys().copied().collect();
    let clicks: Vec<i64> = by_link.values().map(|t| t.0).collect();
    let bots: Vec<i64> = by_link.values().map(|t| t.1).collect();
    let totals = tx
        .prepare_cached(
            "UPDATE links l SET clicks = l.clicks + d.c, bot_clicks = l.bot_clicks + d.b \
             FROM unnest($1::int8[], $2::int8[], $3::int8[]) AS d(id, c, b) WHERE l.id = d.id \
             RETURNING l.id, l.max_visits, l.clicks - l.bot_clicks, l.alias",
        )
        .await
        .map_err(PgError::query("preparing click totals"))?;
    let updated = tx
        .query(&totals, &[&ids, &clicks, &bots])
        .await
        .map_err(PgError::query("adding click totals"))?;
    // Links deleted meanwhile (or never known) are not in `updated`.
    let mut known = std::collections::BTreeSet::new();
    for row in &updated {
        let (id, max_visits, humans_after, alias): (i64, Option<i64>, i64, Option<String>) =
            (row.get(0), row.get(1), row.get(2), row.get(3));
        known.insert(id);
        let (c, b) = by_link[&id];
        outcome.counted += c as u64;
        let humans_before = humans_after - (c - b);
        if max_visits.is_some_and(|max| humans_before < max && humans_after >= max) {
            outcome.exhausted.push((id as u64, alias));
        }
    }
    outcome.exhausted.sort_unstable();
    outcome.links = known.iter().map(|&id| id as u64).collect();
    for (id, alias) in &outcome.exhausted {
        changes::append(tx, *id, alias.as_deref(), alias.as_deref()).await?;
    }
    // The per-hour rows, one per key (the statement may touch a row only
    // once) and in key order (one order for every node).
    type Key<'a> = (i64, i64, i16, bool, &'a str, &'a str);
    let mut keyed: BTreeMap<Key<'_>, i64> = BTreeMap::new();
    for d in &deltas {
        let id = d.link_id as i64;
        if known.contains(&id) {
            *keyed
                .entry((
                    id,
                    d.hour,
                    d.device,
                    d.bot,
                    d.referrer.as_str(),
                    d.country.as_str(),
                ))
                .or_default() += d.count;
        }
    }
    if !keyed.is_empty() {
        let upsert = tx
            .prepare_cached(
                "INSERT INTO clicks (link_id, hour, device, bot, referrer, country, count) \
                 SELECT * FROM unnest($1::int8[], $2::int8[], $3::int2[], $4::bool[], \
                 $5::text[], $6::text[], $7::int8[]) \
                 ON CONFLICT (link_id, hour, device, bot, referrer, country) \
                 DO UPDATE SET count = clicks.count + excluded.count",
            )
            .await
            .map_err(PgError::query("preparing click rows"))?;
        let link_ids: Vec<i64> = keyed.keys().map(|k| k.0).collect();
        let hours: Vec<i64> = keyed.keys().map(|k| k.1).collect();
        let devices: Vec<i16> = keyed.keys().map(|k| k.2).collect();
        let bots: Vec<bool> = keyed.keys().map(|k| k.3).collect();
        let referrers: Vec<&str> = keyed.keys().map(|k| k.4).collect();
        let countries: Vec<&str> = keyed.keys().map(|k| k.5).collect();
        let counts: Vec<i64> = keyed.values().copied().collect();
        tx.execute(
            &upsert,
            &[
                &link_ids, &hours, &devices, &bots, &referrers, &countries, &counts,
            ],
        )
        .await
        .map_err(PgError::query("adding click rows"))?;
    }
    record_variants(tx, &known, &variants).await?;
    Ok(outcome)
}

/// Adds the per-variant rows of the links in `known` (those the batch
/// counted), one row per key, in key order, in one statement; `variants`
/// holds only countable rows.
async fn record_variants(
    tx: &impl GenericClient,
    known: &std::collections::BTreeSet<i64>,
    variants: &[&VariantDelta],
) -> Result<(), PgError> {
    let mut keyed: BTreeMap<(i64, i64, i16), i64> = BTreeMap::new();
    for d in variants {
        let id = d.link_id as i64;
        if known.contains(&id) {
            *keyed.entry((id, d.hour, d.variant)).or_default() += d.count;
        }
    }
    if keyed.is_empty() {
        return Ok(());
    }
    let upsert = tx
        .prepare_cached(
            "INSERT INTO variant_clicks (link_id, hour, variant, count) \
             SELECT * FROM unnest($1::int8[], $2::int8[], $3::int2[], $4::int8[]) \
             ON CONFLICT (link_id, hour, variant) \
             DO UPDATE SET count = variant_clicks.count + excluded.count",
        )
        .await
        .map_err(PgError::query("preparing variant click rows"))?;
    let link_ids: Vec<i64> = keyed.keys().map(|k| k.0).collect();
    let hours: Vec<i64> = keyed.keys().map(|k| k.1).collect();
    let indexes: Vec<i16> = keyed.keys().map(|k| k.2).collect();
    let counts: Vec<i64> = keyed.values().copied().collect();
    tx.execute(&upsert, &[&link_ids, &hours, &indexes, &counts])
        .await
        .map_err(PgError::query("adding variant click rows"))?;
    Ok(())
}

/// Forgets batch ids seen before Unix second `before` (a batch re-sent
/// later than that would count again: keep it past every retry horizon).
pub async fn prune_batches(client: &impl GenericClient, before: i64) -> Result<u64, PgError> {
    client
        .execute("DELETE FROM click_batches WHERE seen_at < $1", &[&before])
        .await
        .map_err(PgError::query("pruning click batch ids"))
}
