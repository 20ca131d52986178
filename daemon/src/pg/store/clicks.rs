//! [`ClickStore`] on PostgreSQL.
//!
//! Each batch is counted in a transaction of its own through
//! [`record_batch`]: its id is claimed in `click_batches` and, only when
//! the id was new, the link totals and per-hour rows move in that same
//! transaction. A batch sent twice, by a retry or by two nodes, counts
//! once. In the same transaction a link with `renew_ttl` clicked by the
//! batch has its expiry renewed exactly as the SQLite fold renews it
//! (`store/clicks/fold.rs`), and a link that reached `max_visits` or was
//! renewed gets a change-log row, so every node's edge refetches it.
//!
//! There is no pending aggregate here: a batch is in the tables when its
//! transaction commits, before `append_clicks` answers. So `fold_clicks`
//! has nothing to fold: it only answers the clicks counted since it was
//! last called (so the daemon's `shortlinkd_clicks` moves as on SQLite,
//! where the fold counts them), `click_backlog` is always `(0, 0)` and
//! `fold_wake` is never notified. Edges learn of exhausted and renewed
//! links from the change log, on every node. Stats read the tables alone
//! (`super::click_stats`).

use std::sync::atomic::Ordering;
use std::sync::OnceLock;

use async_trait::async_trait;
use deadpool_postgres::GenericClient;
use shortlink_core::ipc::ClickBatch;
use tokio::sync::Notify;

use super::click_stats;
use super::PgStore;
use crate::db::{ClickStore, WebhookEvent};
use crate::pg::clicks::{record_batch, ClickDelta, VariantDelta};
use crate::pg::{changes, PgError};
use crate::store::clicks::{Aggregate, FoldOutcome, RangeStats, SiteStats};
use crate::store::links::Link;
use crate::store::StoreResult;

/// The clicks of one batch grouped per link and `clicks` row, the referrer
/// normalised and the hour widened exactly as SQLite stores them (the same
/// [`Aggregate`]), the clicks sent to a variant grouped per link, hour and
/// variant, with the ids of the links clicked, ascending.
fn deltas(batch: &ClickBatch, now: i64) -> (Vec<ClickDelta>, Vec<VariantDelta>, Vec<u64>) {
    let mut agg = Aggregate::default();
    agg.add_batch(batch, now);
    let mut ids: Vec<u64> = batch.clicks.iter().map(|c| c.link_id).collect();
    ids.sort_unstable();
    ids.dedup();
    ids.retain(|id| agg.link(*id).is_some());
    let mut out = Vec::new();
    let mut variants = Vec::new();
    for &id in &ids {
        let Some(l) = agg.link(id) else { continue };
        out.extend(l.rows.iter().map(|(k, n)| ClickDelta {
            link_id: id,
            hour: k.hour,
            device: i16::from(k.device),
            bot: k.bot,
            referrer: k.referrer.clone(),
            country: k.country.as_str().to_string(),
            count: *n,
        }));
        variants.extend(
            l.variants
                .iter()
                .map(|&((hour, variant), count)| VariantDelta {
                    link_id: id,
                    hour,
                    variant: i16::from(variant),
                    count,
                }),
        );
    }
    (out, variants, ids)
}

/// Renews the expiry of the links `ids`, clicked by a batch acknowledged
/// at `at`, as the SQLite fold does: only a link with `renew_ttl` and an
/// expiry, enabled and live at `at`, and only when the move is worth an
/// edge refetch (a tenth of the ttl, at least a second). The links renewed,
/// with their aliases, in one statement (their rows are already locked by
/// the batch, in id order).
async fn renew(
    tx: &impl GenericClient,
    ids: &[u64],
    at: i64,
) -> Result<Vec<(u64, Option<String>)>, PgError> {
    let ids: Vec<i64> = ids
        .iter()
        .filter_map(|&id| i64::try_from(id).ok())
        .collect();
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let st = tx
        .prepare_cached(
            "UPDATE links SET expires_at = $2 + renew_ttl \
             WHERE id = ANY($1) AND renew_ttl IS NOT NULL AND expires_at IS NOT NULL \
             AND NOT disabled AND expires_at > $2 \
             AND $2 + renew_ttl >= expires_at + GREATEST(renew_ttl / 10, 1) \
             RETURNING id, alias",
        )
        .await
        .map_err(PgError::query("preparing an expiry renewal"))?;
    let rows = tx
        .query(&st, &[&ids, &at])
        .await
        .map_err(PgError::query("renewing links' expiry"))?;
    let mut renewed: Vec<(u64, Option<String>)> = rows
        .iter()
        .map(|r| (r.get::<_, i64>(0) as u64, r.get(1)))
        .collect();
    renewed.sort_unstable();
    Ok(renewed)
}

impl PgStore {
    /// Counts one batch in its own transaction; whether it was new, and
    /// whether a change was logged.
    async fn append_batch(&self, batch: &ClickBatch, now: i64) -> StoreResult<(bool, bool)> {
        let (deltas, variants, ids) = deltas(batch, now);
        let mut c = self.pg().get().await?;
        let tx = c
            .transaction()
            .await
            .map_err(PgError::query("starting a click batch"))?;
        let outcome = record_batch(&tx, &batch.batch_id.0, now, &deltas, &variants).await?;
        let exhausted: Vec<u64> = outcome.exhausted.iter().map(|(id, _)| *id).collect();
        super::webhooks::link_events(&tx, WebhookEvent::Exhausted, &exhausted, now).await?;
        let mut logged = !outcome.exhausted.is_empty();
        if outcome.counted_now {
            for (id, alias) in renew(&tx, &ids, now).await? {
                // One change per link, whether exhausted, renewed or both.
                if !outcome.exhausted.iter().any(|(e, _)| *e == id) {
                    changes::append(&tx, id, alias.as_deref(), alias.as_deref()).await?;
                }
                logged = true;
            }
        }
        tx.commit()
            .await
            .map_err(PgError::query("committing a click batch"))?;
        self.clicks_counted
            .fetch_add(outcome.counted, Ordering::Relaxed);
        if logged {
            self.pg.wake(&c).await;
        }
        Ok((outcome.counted_now, logged))
    }
}

#[async_trait]
impl ClickStore for PgStore {
    async fn append_clicks(&self, batches: Vec<ClickBatch>, now: i64) -> StoreResult<Vec<bool>> {
        let mut counted = Vec::with_capacity(batches.len());
        for batch in &batches {
            counted.push(self.append_batch(batch, now).await?.0);
        }
        Ok(counted)
    }

    async fn fold_clicks(&self) -> StoreResult<FoldOutcome> {
        // Every batch was applied when it was appended: nothing is pending,
        // and the edges hear of changed links through the change log.
        Ok(FoldOutcome {
            counted: self.clicks_counted.swap(0, Ordering::Relaxed),
            ..FoldOutcome::default()
        })
    }

    async fn fold_prompt_clicks(&self) -> StoreResult<FoldOutcome> {
        self.fold_clicks().await
    }

    fn click_backlog(&self) -> (u64, u64) {
        (0, 0)
    }

    fn fold_wake(&self) -> &Notify {
        // Never notified: there is never a fold to hurry.
        static NEVER: OnceLock<Notify> = OnceLock::new();
        NEVER.get_or_init(Notify::new)
    }

    async fn link_stats(
        &self,
        id: u64,
        from_hour: i64,
        to_hour: i64,
        daily: bool,
    ) -> StoreResult<RangeStats> {
        let mut c = self.pg().get().await?;
        click_stats::link_stats(&mut c, id, from_hour, to_hour, daily).await
    }

    async fn site_stats(
        &self,
        from_hour: i64,
        to_hour: i64,
        daily: bool,
        top: usize,
        team: Option<i64>,
    ) -> StoreResult<(SiteStats, Vec<(Link, i64)>)> {
        let mut c = self.pg().get().await?;
        click_stats::site_stats(&mut c, (from_hour, to_hour), daily, top, team).await
    }
}
