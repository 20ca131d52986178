//! Click storage: the append-only `click_log`, the `clicks` and
//! `click_batches` tables, the per-link totals, and the in-memory aggregate
//! of acknowledged clicks not folded into the tables yet.
//!
//! A click batch is made durable by appending it whole to `click_log` (one
//! row, a few pages, whatever the number of links in it) in the same
//! transaction that records its batch id in `click_batches`; it is
//! acknowledged after that commit, then added to [`PendingClicks`] in memory
//! (on the writer thread, before the next transaction starts). A periodic
//! fold ([`fold_job`]) writes the aggregate to `clicks` and `links` and
//! deletes the log rows it covers in one transaction, recording the highest
//! seq it covers in `click_fold`. After a crash, [`recover`] folds the log
//! rows left into memory again; they are persisted by the next fold, so a
//! click is in the tables exactly once.
//!
//! Readers see acknowledged clicks at once through a [`ClickOverlay`]: the
//! tables plus the in-memory aggregate, cut consistently by `folded_through`
//! (see [`with_overlay`]).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

use rusqlite::{params, Connection, OptionalExtension};
use shortlink_core::ipc::{self, ClickBatch};

use super::links::Link;
use super::{StoreError, StoreResult};

/// Longest referrer host kept (a DNS name is at most 253 bytes).
const MAX_REFERRER: usize = 253;

/// The dimensions of one `clicks` row (besides the link).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RowKey {
    /// Hours since the Unix epoch.
    pub hour: i64,
    /// Device class (its `u8` value).
    pub device: u8,
    pub bot: bool,
    /// Lower-case referrer host, `""` for none.
    pub referrer: String,
}

/// Clicks of one link not yet in the tables.
#[derive(Debug, Clone, Default)]
pub struct LinkAgg {
    /// All clicks, bots included.
    pub clicks: i64,
    /// The bot share of `clicks`.
    pub bots: i64,
    /// When the latest batch with clicks of this link was acknowledged
    /// (renew-on-access moves the expiry from this time).
    pub last_at: i64,
    /// Per hour, device, bot flag and referrer (a few per link: a list).
    pub rows: Vec<(RowKey, i64)>,
}

/// Acknowledged clicks, summed per link and per `clicks` row.
#[derive(Debug, Clone, Default)]
pub struct Aggregate {
    links: HashMap<u64, LinkAgg>,
    batches: u64,
    rows: u64,
}

/// A referrer as stored: lower case, at most [`MAX_REFERRER`] bytes.
fn referrer_key(r: Option<&str>) -> std::borrow::Cow<'_, str> {
    let Some(r) = r else {
        return "".into();
    };
    let mut end = r.len().min(MAX_REFERRER);
    while !r.is_char_boundary(end) {
        end -= 1;
    }
    let r = &r[..end];
    if r.bytes().any(|b| b.is_ascii_uppercase()) {
        r.to_ascii_lowercase().into()
    } else {
        r.into()
    }
}

impl Aggregate {
    /// True when nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.links.is_empty() && self.batches == 0
    }

    /// Batches folded in.
    pub fn batches(&self) -> u64 {
        self.batches
    }

    /// Distinct `clicks` rows held.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Adds one batch acknowledged at `at`. Items with no clicks or an id
    /// SQLite cannot hold are skipped (no link can have such an id).
    pub fn add_batch(&mut self, batch: &ClickBatch, at: i64) {
        self.batches += 1;
        for c in &batch.clicks {
            if c.count == 0 || c.link_id > i64::MAX as u64 {
                continue;
            }
            let n = c.count as i64;
            let l = self.links.entry(c.link_id).or_default();
            l.clicks += n;
            if c.bot {
                l.bots += n;
            }
            l.last_at = l.last_at.max(at);
            let referrer = referrer_key(c.referrer.as_deref());
            let (hour, device) = (c.hour as i64, c.device as u8);
            match l.rows.iter_mut().find(|(k, _)| {
                k.hour == hour && k.device == device && k.bot == c.bot && k.referrer == referrer
            }) {
                Some((_, count)) => *count += n,
                None => {
                    self.rows += 1;
                    l.rows.push((
                        RowKey {
                            hour,
                            device,
                            bot: c.bot,
                            referrer: referrer.into_owned(),
                        },
                        n,
                    ));
                }
            }
        }
    }

    /// Adds everything in `other`.
    pub fn merge(&mut self, other: &Aggregate) {
        self.batches += other.batches;
        for (id, o) in &other.links {
            let l = self.links.entry(*id).or_default();
            l.clicks += o.clicks;
            l.bots += o.bots;
            l.last_at = l.last_at.max(o.last_at);
            for (key, n) in &o.rows {
                match l.rows.iter_mut().find(|(k, _)| k == key) {
                    Some((_, count)) => *count += n,
                    None => {
                        self.rows += 1;
                        l.rows.push((key.clone(), *n));
                    }
                }
            }
        }
    }

    /// The pending clicks of one link.
    pub fn link(&self, id: u64) -> Option<&LinkAgg> {
        self.links.get(&id)
    }
}

#[derive(Debug, Default)]
struct PendingState {
    /// Batches acknowledged since the last fold started.
    open: Aggregate,
    /// Highest `click_log` seq in `open` or in what is folded before it.
    open_through: i64,
    /// What a running fold is writing, and the highest seq it covers: still
    /// counted by readers until `click_fold` says it is in the tables.
    sealed: Option<(Arc<Aggregate>, i64)>,
}

/// Acknowledged clicks not yet in the `clicks` table and the link totals.
/// Only the writer thread changes it (after its commits); readers look
/// through [`with_overlay`].
#[derive(Debug, Default)]
pub struct PendingClicks {
    state: Mutex<PendingState>,
}

impl PendingClicks {
    fn lock(&self) -> MutexGuard<'_, PendingState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// True when there is nothing to fold.
    pub fn is_empty(&self) -> bool {
        self.lock().open.is_empty()
    }

    /// Batches and distinct rows waiting for the next fold.
    pub fn backlog(&self) -> (u64, u64) {
        let s = self.lock();
        (s.open.batches, s.open.rows)
    }

    /// Adds batches whose log rows were just committed (writer thread,
    /// after the commit, before the next transaction).
    pub(crate) fn add_committed(&self, batches: &[(i64, &ClickBatch)], at: i64) {
        let mut s = self.lock();
        for (seq, batch) in batches {
            s.open.add_batch(batch, at);
            s.open_through = s.open_through.max(*seq);
        }
    }

    /// After a fold's transaction: on success its clicks are in the tables;
    /// on failure they go back to the open aggregate for the next fold.
    pub(crate) fn finish_fold(&self, committed: bool) {
        let mut s = self.lock();
        if let Some((sealed, _)) = s.sealed.take() {
            if !committed {
                s.open.merge(&sealed);
            }
        }
    }
}

/// Pending clicks as a reader must add them to what it read from the
/// tables in the same snapshot.
pub struct ClickOverlay<'a> {
    parts: [Option<&'a Aggregate>; 2],
}

impl ClickOverlay<'_> {
    /// No pending clicks (for callers without a store).
    pub const EMPTY: ClickOverlay<'static> = ClickOverlay {
        parts: [None, None],
    };

    fn links(&self, id: u64) -> impl Iterator<Item = &LinkAgg> {
        self.parts.iter().flatten().filter_map(move |a| a.link(id))
    }

    /// Pending clicks and bot clicks of one link.
    pub fn totals(&self, id: u64) -> (i64, i64) {
        self.links(id)
            .fold((0, 0), |(c, b), l| (c + l.clicks, b + l.bots))
    }

    /// Adds the pending clicks to a link read from the table.
    pub fn apply(&self, link: &mut Link) {
        let (c, b) = self.totals(link.id);
        link.clicks += c;
        link.bot_clicks += b;
    }

    /// Pending `clicks` rows of one link.
    pub fn rows(&self, id: u64) -> impl Iterator<Item = (&RowKey, i64)> {
        self.links(id)
            .flat_map(|l| l.rows.iter().map(|(k, n)| (k, *n)))
    }
}

fn folded_through(conn: &Connection) -> StoreResult<i64> {
    Ok(conn
        .prepare_cached("SELECT folded_through FROM click_fold WHERE id = 1")?
        .query_row([], |r| r.get(0))?)
}

/// Runs `f` with the pending clicks that are not in the tables as `conn`
/// sees them. Outside a transaction, opens a read transaction after taking
/// the pending lock, so the tables and the memory are one consistent cut:
/// a fold that commits meanwhile cannot clear its sealed part (it needs the
/// lock), and `folded_through` in the snapshot tells whether that part is
/// in the tables already. Inside a write transaction (writer thread) the
/// connection sees its own fold, and memory only changes on that thread.
pub fn with_overlay<T>(
    conn: &Connection,
    pending: &PendingClicks,
    f: impl FnOnce(&Connection, &ClickOverlay<'_>) -> StoreResult<T>,
) -> StoreResult<T> {
    let state = pending.lock();
    let tx = if conn.is_autocommit() {
        Some(conn.unchecked_transaction()?)
    } else {
        None
    };
    let through = folded_through(conn)?;
    let sealed = state
        .sealed
        .as_ref()
        .filter(|(_, seq)| *seq > through)
        .map(|(a, _)| &**a);
    let overlay = ClickOverlay {
        parts: [Some(&state.open), sealed],
    };
    let out = f(conn, &overlay)?;
    if let Some(tx) = tx {
        tx.finish()?;
    }
    Ok(out)
}

/// Records each batch id (a re-sent batch is a duplicate: `None`) and
/// appends each new batch to `click_log`; returns each batch's log seq.
/// O(1) pages per batch: the log's last page(s) and one leaf of the batch
/// id index, whatever the number of links in the batch.
pub fn append_batches(
    conn: &Connection,
    batches: &[ClickBatch],
    now: i64,
) -> StoreResult<Vec<Option<i64>>> {
    let mut seen = conn.prepare_cached(
        "INSERT OR IGNORE INTO click_batches (batch_id, seen_at) VALUES (?1, ?2)",
    )?;
    let mut log =
        conn.prepare_cached("INSERT INTO click_log (received_at, batch) VALUES (?1, ?2)")?;
    let mut out = Vec::with_capacity(batches.len());
    for batch in batches {
        if seen.execute(params![&batch.batch_id.0[..], now])? == 0 {
            out.push(None);
            continue;
        }
        let bytes = ipc::frame(batch).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        log.execute(params![now, bytes])?;
        out.push(Some(conn.last_insert_rowid()));
    }
    Ok(out)
}

/// At open: puts the log rows a crash left (acknowledged, not folded) back
/// into memory, for the next fold. A row that does not decode is logged and
/// left in the log (never counted, never deleted).
pub fn recover(conn: &Connection, pending: &PendingClicks) -> StoreResult<u64> {
    let through = folded_through(conn)?;
    let mut st =
        conn.prepare("SELECT seq, received_at, batch FROM click_log WHERE seq > ?1 ORDER BY seq")?;
    let mut rows = st.query([through])?;
    let mut s = pending.lock();
    s.open_through = s.open_through.max(through);
    let mut n = 0;
    while let Some(row) = rows.next()? {
        let seq: i64 = row.get(0)?;
        let at: i64 = row.get(1)?;
        let bytes = row
            .get_ref(2)?
            .as_blob()
            .map_err(|e| StoreError::Corrupt(e.to_string()))?;
        match ipc::read_frame::<ClickBatch>(bytes) {
            Ok(Some((batch, _))) => {
                s.open.add_batch(&batch, at);
                s.open_through = s.open_through.max(seq);
                n += 1;
            }
            _ => tracing::error!(
                seq,
                "click_log row does not decode; left in the log, not counted"
            ),
        }
    }
    Ok(n)
}

/// What a fold did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FoldOutcome {
    /// Batches folded.
    pub batches: u64,
    /// Clicks added to the tables (items for unknown or deleted links are
    /// dropped).
    pub counted: u64,
    /// Links whose edge view changed (reached max visits, expiry renewed):
    /// id and alias, so the edge can be told to refetch.
    pub changed: Vec<(u64, Option<String>)>,
}

/// The fold, inside a write transaction: seals the open aggregate, adds it
/// to `links` and `clicks`, deletes the log rows it covers and moves
/// `folded_through`. The caller must call [`PendingClicks::finish_fold`]
/// with whether the transaction committed, and never run two folds at once.
pub fn fold_job(conn: &Connection, pending: &PendingClicks) -> StoreResult<FoldOutcome> {
    let (agg, through) = {
        let mut s = pending.lock();
        if s.open.is_empty() {
            return Ok(FoldOutcome::default());
        }
        let agg = Arc::new(std::mem::take(&mut s.open));
        let through = s.open_through;
        s.sealed = Some((Arc::clone(&agg), through));
        (agg, through)
    };
    let mut outcome = apply_aggregate(conn, &agg)?;
    outcome.batches = agg.batches;
    // Only rows this fold covers: seqs above `through` were committed
    // after the seal and are still in memory only as part of the new open
    // aggregate (or not at all yet).
    conn.prepare_cached("DELETE FROM click_log WHERE seq <= ?1")?
        .execute([through])?;
    conn.prepare_cached("UPDATE click_fold SET folded_through = ?1 WHERE id = 1")?
        .execute([through])?;
    Ok(outcome)
}

/// Adds an aggregate to the tables: per link (in id order, neighbouring
/// rows on neighbouring pages) one UPDATE of the totals that also returns
/// what the edge depends on (and tells whether the link exists), then one
/// upsert per `clicks` row.
fn apply_aggregate(conn: &Connection, agg: &Aggregate) -> StoreResult<FoldOutcome> {
    let mut totals = conn.prepare_cached(
        "UPDATE links SET clicks = clicks + ?2, bot_clicks = bot_clicks + ?3 WHERE id = ?1 \
         RETURNING max_visits, clicks - bot_clicks, renew_ttl, expires_at, alias, disabled",
    )?;
    let mut upsert = conn.prepare_cached(
        "INSERT INTO clicks (link_id, hour, device, bot, referrer, count) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6) \
         ON CONFLICT (link_id, hour, device, bot, referrer) \
         DO UPDATE SET count = count + excluded.count",
    )?;
    let mut ids: Vec<u64> = agg.links.keys().copied().collect();
    ids.sort_unstable();
    let mut outcome = FoldOutcome::default();
    for id in ids {
        let l = &agg.links[&id];
        type Row = (
            Option<i64>,
            i64,
            Option<i64>,
            Option<i64>,
            Option<String>,
            bool,
        );
        let row: Option<Row> = totals
            .query_row(params![id as i64, l.clicks, l.bots], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                ))
            })
            .optional()?;
        let Some((max_visits, humans_after, renew_ttl, expires_at, alias, disabled)) = row else {
            continue; // unknown or deleted link
        };
        let mut rows: Vec<&(RowKey, i64)> = l.rows.iter().collect();
        rows.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        for (k, n) in rows {
            upsert.execute(params![
                id as i64,
                k.hour,
                k.device as i64,
                k.bot,
                k.referrer,
                n
            ])?;
        }
        outcome.counted += l.clicks as u64;
        let humans = l.clicks - l.bots;
        let humans_before = humans_after - humans;
        let mut changed = false;
        if let Some(max) = max_visits {
            if humans_before < max && humans_after >= max {
                changed = true;
            }
        }
        if let (Some(ttl), Some(exp)) = (renew_ttl, expires_at) {
            // Renewed as of the latest click (its batch's ack), as if the
            // batch had been applied then; only a link that was live at
            // that time, and only when the move is worth an edge refetch.
            let at = l.last_at;
            let renewed = at + ttl;
            if !disabled && exp > at && renewed >= exp + (ttl / 10).max(1) {
                super::links::set_expiry(conn, id, renewed)?;
                changed = true;
            }
        }
        if changed {
            outcome.changed.push((id, alias));
        }
    }
    Ok(outcome)
}

/// Forgets batch ids older than `cutoff` (Unix seconds).
pub fn prune_batches(conn: &Connection, cutoff: i64) -> StoreResult<usize> {
    Ok(conn.execute("DELETE FROM click_batches WHERE seen_at < ?1", [cutoff])?)
}

/// Batch ids remembered.
pub fn batch_count(conn: &Connection) -> StoreResult<u64> {
    Ok(
        conn.query_row("SELECT count(*) FROM click_batches", [], |r| {
            r.get::<_, i64>(0)
        })? as u64,
    )
}

/// Rows in `click_log` (acknowledged batches not folded yet).
pub fn log_len(conn: &Connection) -> StoreResult<u64> {
    Ok(conn.query_row("SELECT count(*) FROM click_log", [], |r| r.get::<_, i64>(0))? as u64)
}

/// Most referrers a stats query returns.
const TOP_REFERRERS: usize = 50;

/// Click numbers of one link over a range of hours.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RangeStats {
    /// Clicks in the range, bots included.
    pub total: i64,
    /// Bot clicks in the range.
    pub bots: i64,
    /// `(bucket start in Unix seconds, clicks)` for every bucket with clicks.
    pub series: Vec<(i64, i64)>,
    /// Clicks per device class (its `u8` value).
    pub devices: Vec<(u8, i64)>,
    /// Top referrer hosts.
    pub referrers: Vec<(String, i64)>,
}

/// Stats of `link_id` for hours `from_hour..=to_hour`, in hour or day
/// buckets: the `clicks` table plus the pending clicks in `overlay`.
pub fn range_stats(
    conn: &Connection,
    overlay: &ClickOverlay<'_>,
    link_id: u64,
    from_hour: i64,
    to_hour: i64,
    daily: bool,
) -> StoreResult<RangeStats> {
    let id = link_id as i64;
    let bucket_hours: i64 = if daily { 24 } else { 1 };
    let mut total = 0i64;
    let mut bots = 0i64;
    let mut series: BTreeMap<i64, i64> = BTreeMap::new();
    let mut devices: BTreeMap<u8, i64> = BTreeMap::new();
    let mut referrers: HashMap<String, i64> = HashMap::new();
    {
        let mut st = conn.prepare_cached(
            "SELECT hour, device, bot, referrer, count FROM clicks \
             WHERE link_id = ?1 AND hour BETWEEN ?2 AND ?3",
        )?;
        let mut rows = st.query(params![id, from_hour, to_hour])?;
        while let Some(r) = rows.next()? {
            let hour: i64 = r.get(0)?;
            let device: i64 = r.get(1)?;
            let bot: bool = r.get(2)?;
            let referrer = r.get_ref(3)?.as_str().unwrap_or("");
            let n: i64 = r.get(4)?;
            total += n;
            if bot {
                bots += n;
            }
            *series.entry(hour.div_euclid(bucket_hours)).or_default() += n;
            *devices.entry(device as u8).or_default() += n;
            if !referrer.is_empty() {
                match referrers.get_mut(referrer) {
                    Some(c) => *c += n,
                    None => {
                        referrers.insert(referrer.to_string(), n);
                    }
                }
            }
        }
    }
    for (k, n) in overlay.rows(link_id) {
        if k.hour < from_hour || k.hour > to_hour {
            continue;
        }
        total += n;
        if k.bot {
            bots += n;
        }
        *series.entry(k.hour.div_euclid(bucket_hours)).or_default() += n;
        *devices.entry(k.device).or_default() += n;
        if !k.referrer.is_empty() {
            *referrers.entry(k.referrer.clone()).or_default() += n;
        }
    }
    let mut referrers: Vec<(String, i64)> = referrers.into_iter().collect();
    referrers.sort_unstable_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    referrers.truncate(TOP_REFERRERS);
    Ok(RangeStats {
        total,
        bots,
        series: series
            .into_iter()
            .map(|(b, n)| (b * bucket_hours * 3600, n))
            .collect(),
        devices: devices.into_iter().collect(),
        referrers,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::links::{self, Link};
    use crate::store::tests::temp_store;
    use crate::store::Store;
    use shortlink_core::device::DeviceClass;
    use shortlink_core::ipc::{BatchId, ClickCount};

    fn click(link_id: u64, hour: u32, bot: bool, referrer: Option<&str>, count: u32) -> ClickCount {
        ClickCount {
            link_id,
            hour,
            device: DeviceClass::Desktop,
            bot,
            referrer: referrer.map(str::to_string),
            count,
        }
    }

    async fn add_link(store: &Store, id: u64, max_visits: Option<i64>) {
        store
            .write(move |c| {
                links::insert(
                    c,
                    &Link {
                        id,
                        url: "https://e.com/".into(),
                        max_visits,
                        ..Link::default()
                    },
                    None,
                )
            })
            .await
            .unwrap();
    }

    async fn counted(store: &Store, id: u64) -> (i64, i64, RangeStats) {
        store
            .read_counted(move |c, o| {
                let mut l = links::by_id(c, id)?.unwrap();
                o.apply(&mut l);
                Ok((
                    l.clicks,
                    l.bot_clicks,
                    range_stats(c, o, id, 0, 200, false)?,
                ))
            })
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn batches_count_once_and_report_exhaustion() {
        let (_dir, store) = temp_store();
        add_link(&store, 5, Some(3)).await;
        let batch = ClickBatch {
            batch_id: BatchId([1; 16]),
            clicks: vec![
                click(5, 100, false, Some("News.Example.com"), 2),
                click(5, 101, true, None, 4),
                click(99, 100, false, None, 7),
            ],
        };
        assert_eq!(
            store
                .append_clicks(vec![batch.clone()], 1000)
                .await
                .unwrap(),
            vec![true]
        );
        // Seen at once, before any fold.
        let (clicks, bots, stats) = counted(&store, 5).await;
        assert_eq!((clicks, bots, stats.total), (6, 4, 6));
        // A re-sent batch is a duplicate, before and after the fold.
        assert_eq!(
            store
                .append_clicks(vec![batch.clone()], 1000)
                .await
                .unwrap(),
            vec![false]
        );
        let first = store.fold_clicks().await.unwrap();
        assert_eq!((first.batches, first.counted), (1, 6));
        assert!(first.changed.is_empty());
        assert_eq!(
            store
                .append_clicks(vec![batch.clone()], 1000)
                .await
                .unwrap(),
            vec![false]
        );
        let more = ClickBatch {
            batch_id: BatchId([2; 16]),
            clicks: vec![click(5, 101, false, None, 1)],
        };
        store.append_clicks(vec![more], 1000).await.unwrap();
        let (clicks, bots, _) = counted(&store, 5).await;
        assert_eq!((clicks, bots), (7, 4));
        let third = store.fold_clicks().await.unwrap();
        assert_eq!(third.changed, vec![(5, None)]);
        assert_eq!(store.fold_clicks().await.unwrap(), FoldOutcome::default());
        let link = store.read(|c| links::by_id(c, 5)).await.unwrap().unwrap();
        assert_eq!((link.clicks, link.bot_clicks), (7, 4));
        let (clicks, bots, stats) = counted(&store, 5).await;
        assert_eq!((clicks, bots), (7, 4));
        assert_eq!(stats.total, 7);
        assert_eq!(stats.bots, 4);
        assert_eq!(stats.series, vec![(100 * 3600, 2), (101 * 3600, 5)]);
        assert_eq!(stats.referrers, vec![("news.example.com".to_string(), 2)]);
        let daily = store
            .read_counted(|c, o| range_stats(c, o, 5, 0, 200, true))
            .await
            .unwrap();
        assert_eq!(daily.series, vec![(4 * 86400, 7)]);
        assert_eq!(store.read(log_len).await.unwrap(), 0);
    }

    #[tokio::test]
    async fn reads_during_folds_count_each_click_once() {
        let (_dir, store) = temp_store();
        add_link(&store, 7, None).await;
        let mut expected = 0;
        for round in 0..40u8 {
            let b = ClickBatch {
                batch_id: BatchId([round; 16]),
                clicks: vec![click(
                    7,
                    100 + (round % 3) as u32,
                    round % 2 == 0,
                    Some("a.example"),
                    3,
                )],
            };
            let append = store.append_clicks(vec![b], 1000);
            let fold = store.fold_clicks();
            let s2 = store.clone();
            let read = async move { counted(&s2, 7).await };
            let (a, f, r) = tokio::join!(append, fold, read);
            a.unwrap();
            f.unwrap();
            // A read sees every batch acknowledged before it started, and
            // never one twice.
            assert!(
                r.0 == expected || r.0 == expected + 3,
                "{} vs {expected}",
                r.0
            );
            assert_eq!(r.0, r.2.total);
            expected += 3;
            let (clicks, _, stats) = counted(&store, 7).await;
            assert_eq!((clicks, stats.total), (expected, expected));
        }
    }

    #[tokio::test]
    async fn unfolded_log_rows_are_recovered_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        {
            let store = Store::open(&path, 1, 10).unwrap();
            add_link(&store, 9, None).await;
            store
                .append_clicks(
                    vec![ClickBatch {
                        batch_id: BatchId([1; 16]),
                        clicks: vec![click(9, 100, false, None, 2)],
                    }],
                    1000,
                )
                .await
                .unwrap();
            store.fold_clicks().await.unwrap();
            store
                .append_clicks(
                    vec![ClickBatch {
                        batch_id: BatchId([2; 16]),
                        clicks: vec![click(9, 100, false, None, 5)],
                    }],
                    1000,
                )
                .await
                .unwrap();
            // Closed without a fold: like a crash after the ack.
            store.close();
        }
        let store = Store::open(&path, 1, 10).unwrap();
        assert_eq!(counted(&store, 9).await.0, 7);
        assert_eq!(store.read(log_len).await.unwrap(), 1);
        let again = ClickBatch {
            batch_id: BatchId([2; 16]),
            clicks: vec![click(9, 100, false, None, 5)],
        };
        assert_eq!(
            store.append_clicks(vec![again], 1000).await.unwrap(),
            vec![false]
        );
        assert_eq!(store.fold_clicks().await.unwrap().counted, 5);
        assert_eq!(counted(&store, 9).await.0, 7);
        store.close();
        let store = Store::open(&path, 1, 10).unwrap();
        assert_eq!(counted(&store, 9).await.0, 7);
        assert_eq!(store.read(log_len).await.unwrap(), 0);
    }
}
