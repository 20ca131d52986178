//! [`ClickStore`] on PostgreSQL.
//!
//! Each batch is taken in a transaction of its own: its id is claimed in
//! `click_batches` and, only when the id was new, its clicks are counted in
//! that same transaction. Clicks of links with a visit limit or
//! renew-on-access move the link totals and per-hour rows there and then
//! (through [`add_deltas`]); a link with `renew_ttl` has its expiry renewed
//! exactly as the SQLite fold renews it (`store/sqlite/clicks/fold.rs`), and a link
//! that reached `max_visits` or was renewed gets a change-log row, so every
//! node's edge refetches it. The other clicks are appended to `click_log`
//! as one row ([`click_log`]): a batch costs O(1) rows whatever the number
//! of links in it.
//!
//! The log is folded into the tables by [`PgStore::fold_log`]: every
//! `stats::FOLD_ALL_EVERY` (or sooner when a node logged a lot), and before
//! every read that shows clicks, so stats, lists and links count every
//! acknowledged click, whichever node took it. A row is deleted in the
//! transaction that adds it to the tables: folded once, by one node.
//! `fold_clicks` answers the clicks counted since it was last called (for
//! the daemon's `shortlinkd_clicks`), whoever took them.

use std::sync::atomic::Ordering;

use async_trait::async_trait;
use deadpool_postgres::GenericClient;
use shortlink_core::ipc::ClickBatch;
use tokio::sync::Notify;

use super::click_stats;
use super::PgStore;
use crate::store::clicks::Aggregate;
use crate::store::postgres::click_log;
use crate::store::postgres::clicks::{
    add_deltas, claim_batch, BatchOutcome, ClickDelta, VariantDelta,
};
use crate::store::postgres::{changes, PgError};
use crate::store::{
    ClickStore, FoldOutcome, Link, RangeStats, SiteFilter, SiteStats, StoreResult, WebhookEvent,
};
use crate::timestamp::unix_now;

/// The clicks of one batch grouped per link and `clicks` row, the referrer
/// normalised and the hour widened exactly as SQLite stores them (the same
/// [`Aggregate`]), the clicks sent to a variant grouped per link, hour and
/// variant, in link id order.
fn deltas(batch: &ClickBatch, now: i64) -> (Vec<ClickDelta>, Vec<VariantDelta>) {
    let mut agg = Aggregate::default();
    agg.add_batch(batch, now);
    deltas_of(&agg)
}

/// [`deltas`] of an aggregate of any number of batches.
fn deltas_of(agg: &Aggregate) -> (Vec<ClickDelta>, Vec<VariantDelta>) {
    let mut ids: Vec<u64> = agg.link_ids().collect();
    ids.sort_unstable();
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
    (out, variants)
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

/// Log rows a fold reads per statement.
const FOLD_CHUNK: i64 = 100;

/// A fold's transaction reads log rows until their sum holds this many
/// distinct `clicks` rows (at most one read of [`FOLD_CHUNK`] rows past
/// it) or the log ends, then adds them to the tables once and commits,
/// and the fold goes on in another: each link's totals and rows are
/// written once per transaction, however many batches name it, while the
/// memory and the statements stay bounded. The bound is also how long the
/// transaction runs: the log rows stay locked until it commits, so a read
/// on another node that folds first waits for all of it (as it waited for
/// one of 100 rows before), and its xid holds back the change log's
/// horizon meanwhile (`postgres::changes`: edge changes made after it start
/// reach the edges once it ends), as every fold transaction's did. One
/// read past the bound is at most [`FOLD_CHUNK`] batches of at most
/// `ipc::MAX_FRAME` bytes each, the most a fold held at once before.
/// (One transaction per [`FOLD_CHUNK`] rows wrote a link clicked uniformly once per 100
/// batches: five to seven times per fold at 40,000 clicks/s.)
const FOLD_TX_ROWS: u64 = 200_000;

impl PgStore {
    /// Counts one batch in its own transaction; whether it was new, and
    /// whether a change was logged. The clicks of links with a visit limit
    /// or renew-on-access are added to the tables there; the others are
    /// appended to `click_log` for the next fold.
    async fn append_batch(&self, batch: &ClickBatch, now: i64) -> StoreResult<(bool, bool)> {
        let mut c = self.pg().get().await?;
        let tx = c
            .transaction()
            .await
            .map_err(PgError::query("starting a click batch"))?;
        if !claim_batch(&tx, &batch.batch_id.0, now).await? {
            return Ok((false, false));
        }
        let mut ids: Vec<i64> = batch
            .clicks
            .iter()
            .filter_map(|c| i64::try_from(c.link_id).ok())
            .collect();
        ids.sort_unstable();
        ids.dedup();
        let prompt = click_log::prompt_links(&tx, &ids).await?;
        let (now_clicks, later): (Vec<_>, Vec<_>) = batch
            .clicks
            .iter()
            .cloned()
            .partition(|c| prompt.contains(&c.link_id));
        let mut outcome = BatchOutcome::default();
        let mut logged = false;
        if !now_clicks.is_empty() {
            let part = ClickBatch {
                batch_id: batch.batch_id,
                clicks: now_clicks,
            };
            let (deltas, variants) = deltas(&part, now);
            outcome = add_deltas(&tx, &deltas, &variants).await?;
            let exhausted: Vec<u64> = outcome.exhausted.iter().map(|(id, _)| *id).collect();
            super::webhooks::link_events(&tx, WebhookEvent::Exhausted, &exhausted, now).await?;
            logged = !outcome.exhausted.is_empty();
            for (id, alias) in renew(&tx, &outcome.links, now).await? {
                // One change per link, whether exhausted, renewed or both.
                if !outcome.exhausted.iter().any(|(e, _)| *e == id) {
                    changes::append(&tx, id, alias.as_deref(), alias.as_deref()).await?;
                }
                logged = true;
            }
        }
        let to_log = !later.is_empty();
        if to_log {
            let part = ClickBatch {
                batch_id: batch.batch_id,
                clicks: later,
            };
            click_log::append(&tx, now, &part).await?;
        }
        tx.commit()
            .await
            .map_err(PgError::query("committing a click batch"))?;
        self.clicks_counted
            .fetch_add(outcome.counted, Ordering::Relaxed);
        if to_log {
            self.clicks_logged.fetch_add(1, Ordering::Relaxed);
        }
        if logged {
            self.pg.wake(&c).await;
        }
        Ok((true, logged))
    }

    /// Folds `click_log` (every node's rows) as it stands when called into
    /// the tables, [`FOLD_TX_ROWS`] distinct rows per transaction; returns
    /// the batches folded. Reads that show clicks call it first, so they
    /// count every click acknowledged before them, whichever node took it;
    /// rows appended meanwhile are the next fold's, so a read under a
    /// steady click load still returns.
    pub(super) async fn fold_log(&self) -> StoreResult<u64> {
        self.fold_log_by(FOLD_TX_ROWS).await
    }

    /// [`Self::fold_log`], a transaction committed once its sum holds
    /// `tx_rows` distinct rows.
    pub(super) async fn fold_log_by(&self, tx_rows: u64) -> StoreResult<u64> {
        self.clicks_logged.store(0, Ordering::Relaxed);
        let through = click_log::head(&self.pg().get().await?).await?;
        let mut folded = 0;
        loop {
            let mut c = self.pg().get().await?;
            let tx = c
                .transaction()
                .await
                .map_err(PgError::query("starting a click fold"))?;
            let mut agg = Aggregate::default();
            // Whether the log may hold more rows up to `through` (a short
            // read, a row that does not decode included, ends the fold).
            let mut more = true;
            while more && agg.rows() < tx_rows {
                let rows = click_log::take(&tx, FOLD_CHUNK, through).await?;
                more = rows.len() as i64 == FOLD_CHUNK;
                for (at, batch) in &rows {
                    agg.add_batch(batch, *at);
                }
            }
            if agg.batches() == 0 {
                return Ok(folded);
            }
            let (deltas, variants) = deltas_of(&agg);
            let outcome = add_deltas(&tx, &deltas, &variants).await?;
            let exhausted: Vec<u64> = outcome.exhausted.iter().map(|(id, _)| *id).collect();
            super::webhooks::link_events(&tx, WebhookEvent::Exhausted, &exhausted, unix_now())
                .await?;
            tx.commit()
                .await
                .map_err(PgError::query("committing a click fold"))?;
            self.clicks_counted
                .fetch_add(outcome.counted, Ordering::Relaxed);
            if !exhausted.is_empty() {
                self.pg.wake(&c).await;
            }
            folded += agg.batches();
            if !more {
                return Ok(folded);
            }
        }
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
        // The edges hear of changed links through the change log.
        let batches = self.fold_log().await?;
        Ok(FoldOutcome {
            batches,
            counted: self.clicks_counted.swap(0, Ordering::Relaxed),
            ..FoldOutcome::default()
        })
    }

    async fn fold_prompt_clicks(&self) -> StoreResult<FoldOutcome> {
        // Prompt links were counted when their batch was appended: only the
        // clicks counted since the last ask.
        Ok(FoldOutcome {
            counted: self.clicks_counted.swap(0, Ordering::Relaxed),
            ..FoldOutcome::default()
        })
    }

    fn click_backlog(&self) -> (u64, u64) {
        (self.clicks_logged.load(Ordering::Relaxed), 0)
    }

    fn fold_wake(&self) -> &Notify {
        &self.fold_wake
    }

    async fn link_stats(
        &self,
        id: u64,
        from_hour: i64,
        to_hour: i64,
        daily: bool,
    ) -> StoreResult<RangeStats> {
        self.fold_log().await?;
        let mut c = self.pg().get().await?;
        click_stats::link_stats(&mut c, id, from_hour, to_hour, daily).await
    }

    async fn site_stats(
        &self,
        from_hour: i64,
        to_hour: i64,
        daily: bool,
        top: usize,
        filter: SiteFilter,
    ) -> StoreResult<(SiteStats, Vec<(Link, i64)>)> {
        self.fold_log().await?;
        let mut c = self.pg().get().await?;
        click_stats::site_stats(&mut c, (from_hour, to_hour), daily, top, &filter).await
    }
}
