//! `ClickBook`: a worker's click counts, per (link, hour, device class, bot
//! flag, referrer host), grouped into batches that are kept until the daemon
//! acknowledges them. Undeliverable batches go to spool files that the
//! daemon imports; batch ids make every re-send count once.

use std::io::Write;
use std::path::PathBuf;

use rustc_hash::FxHashMap;
use shortlink_core::device::DeviceClass;
use shortlink_core::ipc::{write_frame, BatchId, ClickBatch, ClickCount};

/// Rows (distinct keys plus unacknowledged rows) held in memory before they
/// are written to the spool.
const MAX_PENDING_ROWS: usize = 100_000;

#[derive(Hash, PartialEq, Eq)]
struct ClickKey {
    link_id: u64,
    hour: u32,
    device: DeviceClass,
    bot: bool,
    referrer: Option<Box<str>>,
}

/// Click counts of one worker.
pub struct ClickBook {
    counts: FxHashMap<ClickKey, u32>,
    /// Sent or waiting to be sent, not yet acknowledged, oldest first.
    unacked: Vec<ClickBatch>,
    pid: u32,
    started_ms: u64,
    seq: u64,
    spool: Option<PathBuf>,
}

impl ClickBook {
    pub fn new(pid: u32, started_ms: u64, spool: Option<PathBuf>) -> Self {
        Self {
            counts: FxHashMap::default(),
            unacked: Vec::new(),
            pid,
            started_ms,
            seq: 0,
            spool,
        }
    }

    /// Counts one redirect.
    pub fn record(
        &mut self,
        link_id: u64,
        unix_secs: i64,
        device: DeviceClass,
        bot: bool,
        referrer: Option<&[u8]>,
    ) {
        let referrer = referrer
            .and_then(shortlink_core::device::referrer_host)
            .map(|h| {
                String::from_utf8_lossy(h)
                    .to_ascii_lowercase()
                    .into_boxed_str()
            });
        let key = ClickKey {
            link_id,
            hour: (unix_secs.max(0) / 3600) as u32,
            device,
            bot,
            referrer,
        };
        let n = self.counts.entry(key).or_insert(0);
        *n = n.saturating_add(1);
    }

    /// Rows held in memory.
    pub fn pending_rows(&self) -> usize {
        self.counts.len() + self.unacked.iter().map(|b| b.clicks.len()).sum::<usize>()
    }

    /// True when memory is over its bound and the spool should take over.
    pub fn over_bound(&self) -> bool {
        self.pending_rows() > MAX_PENDING_ROWS
    }

    /// Moves the current counts into a new unacknowledged batch and returns
    /// a copy to send.
    pub fn take_batch(&mut self) -> Option<ClickBatch> {
        if self.counts.is_empty() {
            return None;
        }
        self.seq += 1;
        let mut id = [0u8; 16];
        id[..4].copy_from_slice(&self.pid.to_be_bytes());
        id[4..10].copy_from_slice(&self.started_ms.to_be_bytes()[2..]);
        id[10..].copy_from_slice(&self.seq.to_be_bytes()[2..]);
        let clicks = self
            .counts
            .drain()
            .map(|(k, count)| ClickCount {
                link_id: k.link_id,
                hour: k.hour,
                device: k.device,
                bot: k.bot,
                referrer: k.referrer.map(String::from),
                count,
            })
            .collect();
        let batch = ClickBatch {
            batch_id: BatchId(id),
            clicks,
        };
        self.unacked.push(batch.clone());
        Some(batch)
    }

    /// The daemon has stored this batch.
    pub fn acked(&mut self, id: BatchId) {
        self.unacked.retain(|b| b.batch_id != id);
    }

    /// Batches to send again after a reconnect.
    pub fn unacked(&self) -> &[ClickBatch] {
        &self.unacked
    }

    /// Writes everything held (counts and unacknowledged batches) to a new
    /// spool file and forgets it. Returns the number of clicks written;
    /// `Err` leaves everything in memory.
    pub fn spool_all(&mut self) -> Result<u64, String> {
        self.take_batch();
        if self.unacked.is_empty() {
            return Ok(0);
        }
        let Some(dir) = self.spool.clone() else {
            return Err("no \"shortlink_spool\" is configured".into());
        };
        let mut buf = Vec::new();
        for batch in &self.unacked {
            write_frame(batch, &mut buf).map_err(|e| e.to_string())?;
        }
        let name = format!("clicks-{}-{}-{}.spool", self.pid, self.started_ms, self.seq);
        let tmp = dir.join(format!("{name}.tmp"));
        let write = || -> std::io::Result<()> {
            std::fs::create_dir_all(&dir)?;
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(&buf)?;
            f.sync_all()?;
            std::fs::rename(&tmp, dir.join(&name))
        };
        write().map_err(|e| format!("cannot write spool file {}: {e}", tmp.display()))?;
        let clicks = self
            .unacked
            .iter()
            .flat_map(|b| &b.clicks)
            .map(|c| u64::from(c.count))
            .sum();
        self.unacked.clear();
        Ok(clicks)
    }

    /// Clicks held in memory.
    pub fn held_clicks(&self) -> u64 {
        self.counts.values().map(|&c| u64::from(c)).sum::<u64>()
            + self
                .unacked
                .iter()
                .flat_map(|b| &b.clicks)
                .map(|c| u64::from(c.count))
                .sum::<u64>()
    }
}
