//! The recycling sweep (opt-in, `[recycling]`): every `sweep_interval`,
//! finds the leased id ranges whose lease and every link are past the
//! grace period (expired or deleted that long ago, or never used), purges
//! them, tells the edge, and only then makes them available to
//! `IdSegments`, which takes them before fresh ids.
//!
//! The order is the guarantee that a recycled code never answers with a
//! new target while a cache may still hold the old one: the purge and its
//! change-log rows commit together; the changes are pushed to this node's
//! workers (and the daemon's cache drops the links) before the release;
//! on several nodes the release waits [`FOLLOWER_SETTLE`] more, so every
//! other node's follower has read the log by then. Stats of the old links
//! go with them: pending clicks are folded first, then their click rows
//! are deleted with the links.

use std::ops::Range;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::app::SharedApp;
use crate::edge::{EdgeKeys, LinkChange};
use crate::store::{Purged, StoreResult};
use crate::timestamp::unix_now;

/// Ranges purged per transaction.
const BATCH: u32 = 64;

/// How long a release waits after the purge on a shared PostgreSQL: many
/// times the followers' poll (`change_feed::POLL`), so every node has pushed
/// the purge to its workers first.
pub const FOLLOWER_SETTLE: Duration = Duration::from_secs(5);

/// What one sweep did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Swept {
    /// Ranges purged by this sweep.
    pub purged: Vec<Range<u64>>,
    /// Ranges made available (this sweep's, and any left purged before).
    pub released: Vec<Range<u64>>,
    /// Old links deleted.
    pub links: u64,
}

/// Sweeps every `sweep_interval` while recycling is on.
pub async fn run(app: SharedApp, stop: CancellationToken) {
    let config = app.config.recycling.clone();
    if !config.enabled {
        return;
    }
    tracing::info!(
        grace_days = config.grace_days,
        sweep_interval = config.sweep_interval,
        "id recycling is on"
    );
    let mut tick = tokio::time::interval(Duration::from_secs(config.sweep_interval));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut sweeping = crate::outage_log::OutageLog::new("sweep for recyclable ids");
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tick.tick() => {}
        }
        let swept = tokio::select! {
            _ = stop.cancelled() => return,
            swept = sweep(&app) => swept,
        };
        match sweeping.record(swept) {
            Some(s) if !s.released.is_empty() || !s.purged.is_empty() => tracing::info!(
                purged = ?s.purged,
                released = ?s.released,
                old_links = s.links,
                "recycled id ranges"
            ),
            _ => {}
        }
    }
}

/// One sweep: purge what is recyclable now, push, settle, release.
pub async fn sweep(app: &SharedApp) -> StoreResult<Swept> {
    // Clicks acknowledged but not folded yet (SQLite) reach their links
    // first, so none of an old link's is folded into a new one.
    crate::stats::fold(app).await?;
    let cutoff = unix_now() - app.config.recycling.grace_secs();
    let mut swept = Swept::default();
    loop {
        let purged = app.store.purge_recyclable_ids(cutoff, BATCH).await?;
        if purged.is_empty() {
            break;
        }
        tell_the_edge(app, &purged).await;
        for p in &purged {
            swept.links += p.links;
            swept.purged.push(p.range.clone());
        }
        if purged.len() < BATCH as usize {
            break;
        }
    }
    let settle = if app.shared.is_some() {
        FOLLOWER_SETTLE
    } else {
        Duration::ZERO
    };
    if !swept.purged.is_empty() {
        tokio::time::sleep(settle).await;
    }
    let purged_before = unix_now() - settle.as_secs() as i64;
    swept.released = app.store.release_purged_ids(purged_before).await?;
    let ids: u64 = swept.released.iter().map(|r| r.end - r.start).sum();
    app.ids.recycled.fetch_add(ids, Ordering::Relaxed);
    Ok(swept)
}

/// Drops the purged ids from the daemon's cache and pushes their logged
/// changes to the workers; returns once they are written.
async fn tell_the_edge(app: &SharedApp, purged: &[Purged]) {
    let changes = purged.iter().flat_map(|p| {
        p.range.clone().map(move |id| {
            let alias = p
                .aliases
                .iter()
                .find(|(a, _)| *a == id)
                .map(|(_, alias)| alias.as_str());
            LinkChange {
                old: Some(EdgeKeys { id, alias }),
                new: None,
            }
        })
    });
    app.edge().links_changed(changes).await;
}
