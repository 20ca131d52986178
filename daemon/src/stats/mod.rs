//! Click ingestion (from IPC and spool files), the fold of acknowledged
//! clicks into the tables, and stats queries.
//!
//! Ingesting a batch appends it to the store's click log (O(1) pages per
//! batch, committed with `synchronous=FULL` before the ack) and adds it to
//! the pending clicks in memory, which every read sees at once. [`fold_loop`]
//! writes the pending clicks of links with a visit limit or renew-on-access
//! to the `clicks` table and the link totals every [`FOLD_EVERY`] (that is
//! when those take effect and the edge is told), and everything else every
//! [`FOLD_ALL_EVERY`] or sooner when a lot is pending (a link's statements
//! and pages once per interval, however often it was clicked).
//! `query.rs` answers stats over a range, of one link, of all or of a
//! tag's; `range.rs` cuts the range into buckets (days in the `tz` of
//! `zone.rs`); `shares.rs` makes percentages that add up to 100.

use std::time::Duration;

use shortlink_core::ipc::ClickBatch;
use tokio_util::sync::CancellationToken;

use crate::app::{App, SharedApp};
use crate::edge::LinkChange;
use crate::store::{FoldOutcome, StoreResult};
use crate::timestamp::unix_now;

mod query;
mod range;
pub mod shares;
mod zone;

pub use query::{
    query, site_query, CountryCount, DeviceCounts, Granularity, LinkCount, Point, ReferrerCount,
    SiteQuery, SiteStatsView, StatsView, VariantCount, DIRECT, MAX_BUCKETS, MAX_TOP,
};
pub use zone::StatsZone;

/// Longest time acknowledged clicks of a link with a visit limit or
/// renew-on-access wait to be folded into the tables (and so the longest a
/// reached visit limit or a renewal waits to reach the edge).
pub const FOLD_EVERY: Duration = Duration::from_secs(2);
/// Longest time other acknowledged clicks wait to be folded (reads count
/// them meanwhile; a crash re-folds them from the log).
pub const FOLD_ALL_EVERY: Duration = Duration::from_secs(30);
/// Fold everything before [`FOLD_ALL_EVERY`] when this many batches are
/// pending...
pub const FOLD_BATCHES: u64 = 20_000;
/// ... or this many distinct `clicks` rows (memory bound).
pub const FOLD_ROWS: u64 = 2_000_000;

/// Counts click batches (each once, by batch id): durable and visible to
/// every read when this returns, so the caller may acknowledge. `true` per
/// batch counted, `false` per duplicate.
pub async fn ingest(app: &App, batches: Vec<ClickBatch>) -> StoreResult<Vec<bool>> {
    if batches.is_empty() {
        return Ok(Vec::new());
    }
    let n = batches.len() as u64;
    let counted = app.store.append_clicks(batches, unix_now()).await?;
    let m = &app.metrics;
    m.click_batches.inc_by(n);
    let duplicates = counted.iter().filter(|c| !**c).count() as u64;
    m.click_batches_duplicate.inc_by(duplicates);
    let (batches, rows) = app.store.click_backlog();
    if batches >= FOLD_BATCHES || rows >= FOLD_ROWS {
        app.store.fold_wake().notify_one();
    }
    Ok(counted)
}

/// Folds the pending clicks into the tables, then tells the edge about
/// links that reached their visit limit or were renewed.
pub async fn fold(app: &App) -> StoreResult<FoldOutcome> {
    let outcome = app.store.fold_clicks().await?;
    report(app, &outcome).await;
    Ok(outcome)
}

/// Like [`fold`] for the links with a visit limit or renew-on-access only.
pub async fn fold_prompt(app: &App) -> StoreResult<FoldOutcome> {
    let outcome = app.store.fold_prompt_clicks().await?;
    report(app, &outcome).await;
    Ok(outcome)
}

/// Counts a fold's clicks and tells the edge about its changed links.
async fn report(app: &App, outcome: &FoldOutcome) {
    app.metrics.clicks.inc_by(outcome.counted);
    app.edge()
        .links_changed(
            outcome
                .changed
                .iter()
                .map(|(id, alias)| LinkChange::in_place(*id, alias.as_deref())),
        )
        .await;
}

/// Folds the prompt links every [`FOLD_EVERY`], everything every
/// [`FOLD_ALL_EVERY`] or when [`ingest`] finds a lot pending, until `token`
/// fires. (The final fold at shutdown is the server's.)
pub async fn fold_loop(app: SharedApp, token: CancellationToken) {
    let mut tick = tokio::time::interval(FOLD_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await;
    let mut all_at = tokio::time::Instant::now() + FOLD_ALL_EVERY;
    loop {
        let all = tokio::select! {
            _ = token.cancelled() => break,
            _ = tick.tick() => tokio::time::Instant::now() >= all_at,
            _ = app.store.fold_wake().notified() => true,
        };
        let folded = if all {
            all_at = tokio::time::Instant::now() + FOLD_ALL_EVERY;
            fold(&app).await
        } else {
            fold_prompt(&app).await
        };
        if let Err(e) = folded {
            app.metrics.errors.inc();
            e.log("cannot fold clicks into the tables; retrying later");
        }
    }
}
