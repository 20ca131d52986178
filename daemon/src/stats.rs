//! Click ingestion (from IPC and spool files), the fold of acknowledged
//! clicks into the tables, and stats queries.
//!
//! Ingesting a batch appends it to the store's click log (O(1) pages per
//! batch, committed with `synchronous=FULL` before the ack) and adds it to
//! the pending clicks in memory, which every read sees at once. [`fold_loop`]
//! writes the pending clicks to the `clicks` table and the link totals every
//! [`FOLD_EVERY`] (or sooner when a lot is pending), and that is when
//! visit limits and renew-on-access take effect and the edge is told.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use shortlink_core::device::DeviceClass;
use shortlink_core::ipc::ClickBatch;
use tokio_util::sync::CancellationToken;
use utoipa::ToSchema;

use crate::app::{App, SharedApp};
use crate::edge::LinkChange;
use crate::links::LinkError;
use crate::store::clicks::{self, FoldOutcome};
use crate::store::{unix_now, StoreResult};

/// Most buckets one stats query returns.
pub const MAX_BUCKETS: i64 = 24 * 400;

/// Longest time acknowledged clicks wait to be folded into the tables (and
/// so the longest a reached visit limit or a renewal waits to reach the
/// edge).
pub const FOLD_EVERY: Duration = Duration::from_secs(2);
/// Fold before [`FOLD_EVERY`] when this many batches are pending...
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
    let (batches, rows) = app.store.pending_clicks().backlog();
    if batches >= FOLD_BATCHES || rows >= FOLD_ROWS {
        app.store.fold_wake().notify_one();
    }
    Ok(counted)
}

/// Folds the pending clicks into the tables, then tells the edge about
/// links that reached their visit limit or were renewed.
pub async fn fold(app: &App) -> StoreResult<FoldOutcome> {
    let outcome = app.store.fold_clicks().await?;
    app.metrics.clicks.inc_by(outcome.counted);
    app.edge()
        .links_changed(
            outcome
                .changed
                .iter()
                .map(|(id, alias)| LinkChange::in_place(*id, alias.as_deref())),
        )
        .await;
    Ok(outcome)
}

/// Folds every [`FOLD_EVERY`], or when [`ingest`] finds a lot pending,
/// until `token` fires. (The final fold at shutdown is the server's.)
pub async fn fold_loop(app: SharedApp, token: CancellationToken) {
    let mut tick = tokio::time::interval(FOLD_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await;
    loop {
        tokio::select! {
            _ = token.cancelled() => break,
            _ = tick.tick() => {}
            _ = app.store.fold_wake().notified() => {}
        }
        if let Err(e) = fold(&app).await {
            app.metrics.errors.inc();
            tracing::error!(error = %e, "cannot fold clicks into the tables; retrying later");
        }
    }
}

/// Bucket size of a series.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Granularity {
    /// One bucket per hour.
    #[default]
    Hour,
    /// One bucket per day (UTC).
    Day,
}

/// One point of a series.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Point {
    /// Bucket start, Unix seconds.
    pub t: i64,
    /// Clicks in the bucket, bots included.
    pub clicks: i64,
}

/// Clicks from one referrer host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ReferrerCount {
    /// Host of the `Referer`; empty when none was sent.
    pub host: String,
    /// Clicks from it in the range.
    pub clicks: i64,
}

/// Clicks per device class.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct DeviceCounts {
    /// Desktop browsers.
    pub desktop: i64,
    /// Phones and tablets other than iOS and Android.
    pub mobile: i64,
    /// iPhones and iPads.
    pub ios: i64,
    /// Android devices.
    pub android: i64,
    /// No `User-Agent`, or one that cannot be placed.
    pub other: i64,
}

/// Reply of `GET /api/v1/links/{code}/stats`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct StatsView {
    /// The link's public code (alias or generated).
    pub code: String,
    /// Range start (inclusive), Unix seconds, aligned to the bucket.
    pub from: i64,
    /// Range end (exclusive), Unix seconds.
    pub to: i64,
    /// Bucket size of `series`.
    pub granularity: Granularity,
    /// Clicks in the range, bots included.
    pub total: i64,
    /// Bot clicks in the range (also part of `total`).
    pub bots: i64,
    /// Every bucket of the range, zeros included.
    pub series: Vec<Point>,
    /// Clicks in the range by device class.
    pub devices: DeviceCounts,
    /// Top referrer hosts in the range.
    pub referrers: Vec<ReferrerCount>,
    /// Clicks since the link was created, bots included.
    pub total_all_time: i64,
    /// Bot clicks since the link was created.
    pub bots_all_time: i64,
}

/// Stats of a link over `[from, to)` (Unix seconds; defaults: the last 7 days).
pub async fn query(
    app: &App,
    code: &str,
    from: Option<i64>,
    to: Option<i64>,
    granularity: Granularity,
) -> Result<StatsView, LinkError> {
    let link = app.links().get(code).await?;
    let bucket = match granularity {
        Granularity::Hour => 3600,
        Granularity::Day => 86_400,
    };
    let now = unix_now();
    let to = to.unwrap_or(now + 1);
    let from = from.unwrap_or(to - 7 * 86_400);
    if from >= to {
        return Err(LinkError::Invalid {
            field: "from",
            code: "invalid_range",
            message: format!("from ({from}) must be before to ({to})"),
        });
    }
    let from_aligned = from.div_euclid(bucket) * bucket;
    let to_aligned = (to + bucket - 1).div_euclid(bucket) * bucket;
    let buckets = (to_aligned - from_aligned) / bucket;
    if buckets > MAX_BUCKETS {
        return Err(LinkError::Invalid {
            field: "from",
            code: "invalid_range",
            message: format!(
                "the range spans {buckets} buckets; at most {MAX_BUCKETS} (use granularity=day or a shorter range)"
            ),
        });
    }
    let (from_hour, to_hour) = (from_aligned / 3600, to_aligned / 3600 - 1);
    let id = link.id;
    let daily = granularity == Granularity::Day;
    let r = app
        .store
        .read_counted(move |c, o| clicks::range_stats(c, o, id, from_hour, to_hour, daily))
        .await?;
    let mut series: Vec<Point> = (0..buckets)
        .map(|i| Point {
            t: from_aligned + i * bucket,
            clicks: 0,
        })
        .collect();
    for (t, n) in r.series {
        let i = (t - from_aligned) / bucket;
        if let Some(p) = usize::try_from(i).ok().and_then(|i| series.get_mut(i)) {
            p.clicks += n;
        }
    }
    let mut devices = DeviceCounts::default();
    for (d, n) in r.devices {
        match DeviceClass::from_u8(d) {
            DeviceClass::Desktop => devices.desktop += n,
            DeviceClass::Mobile => devices.mobile += n,
            DeviceClass::Ios => devices.ios += n,
            DeviceClass::Android => devices.android += n,
            DeviceClass::Other => devices.other += n,
        }
    }
    Ok(StatsView {
        code: crate::codes::public(&app.codec, &link),
        from: from_aligned,
        to: to_aligned,
        granularity,
        total: r.total,
        bots: r.bots,
        series,
        devices,
        referrers: r
            .referrers
            .into_iter()
            .map(|(host, clicks)| ReferrerCount { host, clicks })
            .collect(),
        total_all_time: link.clicks,
        bots_all_time: link.bot_clicks,
    })
}
