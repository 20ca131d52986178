//! Id allocation from leased segments.
//!
//! A segment is a range of ids leased from the database in one transaction
//! (`next = next + size`), so no id is ever handed out twice: not across
//! restarts, not after a crash (the unused rest of a lease is skipped), not
//! between several processes sharing the database. Segments are refilled in
//! the background once the ids in memory drop to 20% of a segment plus the
//! spares, so creating a link rarely waits for the database.
//!
//! With recycling on (`[recycling]`, see `crate::recycle`) a lease first
//! takes the lowest recycled range free in the store, so short codes come
//! back before the code length grows; and a segment is never held in
//! memory past half the grace period: a range older than the grace period
//! is then in no daemon's hands, which is what lets the sweep reuse it.

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::store::{Store, StoreError, StoreResult};

/// The id allocator: several leased ranges held in memory.
pub struct IdSegments {
    store: Store,
    /// Lowest id ever handed out: the first id of the minimum code length.
    floor: u64,
    /// No id at or above this is handed out: the first id past the
    /// maximum code length (`u64::MAX`: none).
    ceiling: u64,
    size: u64,
    /// Segments to hold (the current one plus spares).
    keep: usize,
    /// With recycling on: how long a segment may be held in memory, and
    /// recycled ranges are taken before fresh ones.
    hold_limit: Option<Duration>,
    state: Mutex<State>,
    /// Told when a background lease lands (for [`IdSegments::give_back`]).
    refilled: tokio::sync::Notify,
    /// Segments leased so far by this process.
    pub leased: AtomicU64,
    /// Ids handed out so far by this process.
    pub handed_out: AtomicU64,
    /// Recycled ranges taken again by this process.
    pub reused: AtomicU64,
    /// Ids made reusable by this process's recycling sweeps.
    pub recycled: AtomicU64,
}

/// A leased range in memory: the ids not handed out yet, when it was
/// leased, and where the lease ends (a lease around ids already in use
/// is held as several segments).
struct Segment {
    ids: Range<u64>,
    leased: Instant,
    lease_end: u64,
}

/// A lease as the store answered it: its range, and the ids in it some
/// link already has (an import kept them), which are never handed out.
struct Lease {
    range: Range<u64>,
    used: Vec<u64>,
}

/// `range` without the ids in `used`, as consecutive pieces.
fn pieces(range: Range<u64>, used: &[u64]) -> Vec<Range<u64>> {
    let mut out = Vec::new();
    let mut start = range.start;
    let mut used: Vec<u64> = used.iter().copied().filter(|u| range.contains(u)).collect();
    used.sort_unstable();
    for u in used {
        if start < u {
            out.push(start..u);
        }
        start = start.max(u + 1);
    }
    if start < range.end {
        out.push(start..range.end);
    }
    out
}

#[derive(Default)]
struct State {
    segments: VecDeque<Segment>,
    /// Ends of leases whose ids are all handed out or dropped, for the
    /// store to forget with the next lease.
    used_up: Vec<u64>,
    refilling: bool,
    /// The ids went back to the store: no more leases.
    closed: bool,
    /// Ids up to this one are taken by an import ([`IdSegments::reserve_through`]):
    /// a lease that lands later is cut above it.
    reserved_through: u64,
    /// Single ids an import kept anywhere ([`IdSegments::exclude`]): a
    /// lease that lands later skips them too.
    excluded: std::collections::BTreeSet<u64>,
}

impl State {
    /// Adds the ids of a lease ending at `lease_end`, taken at `leased`,
    /// without those in `used` and those an import took.
    fn push(&mut self, ids: Range<u64>, used: &[u64], leased: Instant, lease_end: u64) {
        let start = ids.start.max(self.reserved_through.saturating_add(1));
        let range = start..ids.end.max(start);
        let mut used = used.to_vec();
        used.extend(self.excluded.range(range.clone()));
        let kept = pieces(range, &used);
        if kept.is_empty() {
            self.release(lease_end);
        }
        for ids in kept {
            self.segments.push_back(Segment {
                ids,
                leased,
                lease_end,
            });
        }
    }

    /// Adds a fresh lease.
    fn push_lease(&mut self, lease: Lease) {
        let end = lease.range.end;
        self.push(lease.range, &lease.used, Instant::now(), end);
    }

    /// Reports the lease ending at `lease_end` used up once no segment of
    /// it is held any more.
    fn release(&mut self, lease_end: u64) {
        if !self.segments.iter().any(|s| s.lease_end == lease_end) {
            self.used_up.push(lease_end);
        }
    }

    /// Drops the segments leased longer than `limit` ago (their ids may be
    /// recycled elsewhere soon), reporting them used up.
    fn drop_older_than(&mut self, limit: Duration) {
        while let Some(at) = self
            .segments
            .iter()
            .position(|s| s.leased.elapsed() > limit)
        {
            let Some(old) = self.segments.remove(at) else {
                break;
            };
            tracing::info!(
                start = old.ids.start,
                end = old.ids.end,
                "dropping an id segment held past half the recycling grace period"
            );
            self.release(old.lease_end);
        }
    }

    fn remaining(&self) -> u64 {
        self.segments.iter().map(|s| s.ids.end - s.ids.start).sum()
    }
}

impl std::fmt::Debug for IdSegments {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdSegments")
            .field("floor", &self.floor)
            .field("size", &self.size)
            .field("remaining", &self.remaining())
            .finish()
    }
}

impl IdSegments {
    /// An allocator that hands out ids from `floor` up, leasing `size` at a
    /// time and keeping `keep` segments in memory.
    pub fn new(store: Store, floor: u64, size: u64, keep: usize) -> Arc<Self> {
        Self::within(store, floor..u64::MAX, size, keep, None)
    }

    /// Like [`IdSegments::new`], with recycling on: recycled ranges are
    /// taken first, and no segment is held longer than `hold_limit`.
    pub fn recycling(
        store: Store,
        floor: u64,
        size: u64,
        keep: usize,
        hold_limit: Duration,
    ) -> Arc<Self> {
        Self::within(store, floor..u64::MAX, size, keep, Some(hold_limit))
    }

    /// An allocator of the ids in `ids` only (the code lengths the
    /// settings allow), with recycling when `hold_limit` is set (see
    /// [`IdSegments::recycling`]): once they are handed out, a take fails
    /// with [`StoreError::Exhausted`].
    pub fn within(
        store: Store,
        ids: Range<u64>,
        size: u64,
        keep: usize,
        hold_limit: Option<Duration>,
    ) -> Arc<Self> {
        Arc::new(Self {
            store,
            floor: ids.start,
            ceiling: ids.end,
            size: size.max(1),
            keep: keep.max(1),
            hold_limit,
            state: Mutex::new(State::default()),
            refilled: tokio::sync::Notify::new(),
            leased: AtomicU64::new(0),
            handed_out: AtomicU64::new(0),
            reused: AtomicU64::new(0),
            recycled: AtomicU64::new(0),
        })
    }

    /// Whether recycled ranges are taken before fresh ones.
    pub fn recycles(&self) -> bool {
        self.hold_limit.is_some()
    }

    /// Ids left in memory.
    pub fn remaining(&self) -> u64 {
        self.state.lock().expect("id state").remaining()
    }

    /// Ids per lease.
    pub fn segment_size(&self) -> u64 {
        self.size
    }

    /// One new id.
    pub async fn next(self: &Arc<Self>) -> StoreResult<u64> {
        Ok(self.take(1).await?[0])
    }

    /// `n` new ids (increasing within a segment; a recycled range may come
    /// after higher ones).
    pub async fn take(self: &Arc<Self>, n: usize) -> StoreResult<Vec<u64>> {
        let mut out = Vec::with_capacity(n);
        loop {
            {
                let mut st = self.state.lock().expect("id state");
                if let Some(limit) = self.hold_limit {
                    st.drop_older_than(limit);
                }
                while out.len() < n {
                    let Some(front) = st.segments.front_mut().map(|s| &mut s.ids) else {
                        break;
                    };
                    let want = (n - out.len()) as u64;
                    let end = (front.start + want).min(front.end);
                    out.extend(front.start..end);
                    front.start = end;
                    if front.start == front.end {
                        if let Some(done) = st.segments.pop_front() {
                            st.release(done.lease_end);
                        }
                    }
                }
                if out.len() == n {
                    self.handed_out.fetch_add(n as u64, Ordering::Relaxed);
                    self.maybe_refill(&mut st);
                    return Ok(out);
                }
            }
            // Nothing in memory: lease right away, at least what is missing.
            let need = (n - out.len()) as u64;
            let lease = self.lease(need.max(self.size)).await?;
            self.state.lock().expect("id state").push_lease(lease);
        }
    }

    /// Fills memory at start so the first creates do not wait.
    pub async fn prime(self: &Arc<Self>) -> StoreResult<()> {
        let lease = self.lease(self.size).await?;
        let mut st = self.state.lock().expect("id state");
        st.push_lease(lease);
        self.maybe_refill(&mut st);
        Ok(())
    }

    /// Takes every id up to `last` out of use (an import kept them): the
    /// next lease starts after it, and the ids in memory up to it are
    /// dropped, so no later create is handed one of them.
    pub async fn reserve_through(self: &Arc<Self>, last: u64) -> StoreResult<()> {
        // Memory first: no create is handed one of them while the store
        // records the reservation.
        {
            let mut st = self.state.lock().expect("id state");
            st.reserved_through = st.reserved_through.max(last);
            let held = std::mem::take(&mut st.segments);
            for segment in held {
                st.push(segment.ids, &[], segment.leased, segment.lease_end);
            }
        }
        self.store.reserve_ids_through(last).await?;
        self.maybe_refill(&mut self.state.lock().expect("id state"));
        Ok(())
    }

    fn maybe_refill(self: &Arc<Self>, st: &mut State) {
        let remaining = st.remaining();
        let low_water = self.size * (self.keep as u64 - 1) + self.size / 5;
        if st.closed || st.refilling || remaining > low_water || st.segments.len() > self.keep {
            return;
        }
        if tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        st.refilling = true;
        let this = Arc::clone(self);
        tokio::spawn(async move {
            let result = this.lease(this.size).await;
            let mut st = this.state.lock().expect("id state");
            st.refilling = false;
            match result {
                Ok(lease) => st.push_lease(lease),
                Err(e) => {
                    tracing::warn!(error = %e, "cannot lease an id segment in the background")
                }
            }
            drop(st);
            this.refilled.notify_waiters();
        });
    }

    /// A lease, cut at the ceiling (none left under it is an error), with
    /// the ids in it some link already has.
    async fn lease(&self, size: u64) -> StoreResult<Lease> {
        let range = self.lease_any(size).await?;
        if range.start >= self.ceiling {
            return Err(StoreError::Exhausted(format!(
                "every short code up to max_length is handed out (ids up to {}); \
                 raise max_length to create more links",
                self.ceiling - 1
            )));
        }
        let range = range.start..range.end.min(self.ceiling);
        let used = self.store.used_ids(range.clone()).await?;
        Ok(Lease { range, used })
    }

    /// Takes `kept` out of the ids in memory (an import gave links those
    /// ids without moving the allocator: they may lie anywhere), so no
    /// later create is handed one; later leases skip them as used.
    pub fn exclude(&self, kept: &[u64]) {
        let mut st = self.state.lock().expect("id state");
        st.excluded.extend(kept);
        let held = std::mem::take(&mut st.segments);
        for s in held {
            for ids in pieces(s.ids, kept) {
                st.segments.push_back(Segment {
                    ids,
                    leased: s.leased,
                    lease_end: s.lease_end,
                });
            }
        }
    }

    /// Hands the ids in memory back to the store at a clean shutdown, so
    /// the next lease starts where this process stopped (instead of past
    /// every spare segment it held); none is handed out from here on.
    /// How many the store took back.
    pub async fn give_back(&self) -> StoreResult<u64> {
        // A background lease on its way lands first: its range is the one
        // the store's next lease would follow.
        let unused: Vec<Range<u64>> = loop {
            let landed = self.refilled.notified();
            {
                let mut st = self.state.lock().expect("id state");
                if !st.refilling {
                    st.closed = true;
                    break st.segments.drain(..).map(|s| s.ids).collect();
                }
            }
            landed.await;
        };
        if unused.is_empty() {
            return Ok(0);
        }
        self.store.return_ids(unused).await
    }

    async fn lease_any(&self, size: u64) -> StoreResult<Range<u64>> {
        let floor = self.floor;
        if self.recycles() {
            match self.store.claim_recycled_ids(floor).await {
                Ok(Some(range)) => {
                    self.reused.fetch_add(1, Ordering::Relaxed);
                    tracing::info!(
                        start = range.start,
                        end = range.end,
                        "took a recycled id range"
                    );
                    return Ok(range);
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(error = %e, "cannot claim a recycled id range; leasing fresh ids")
                }
            }
        }
        let used_up = std::mem::take(&mut self.state.lock().expect("id state").used_up);
        let range = match self.store.lease_ids(floor, size, used_up.clone()).await {
            Ok(range) => range,
            Err(e) => {
                // Forgotten with a later lease instead.
                self.state.lock().expect("id state").used_up.extend(used_up);
                return Err(e);
            }
        };
        self.leased.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(start = range.start, end = range.end, "leased id segment");
        Ok(range)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sqlite::tests::temp_store;
    use std::collections::HashSet;

    #[tokio::test]
    async fn ids_are_unique_across_allocators_and_restarts() {
        let (dir, store) = temp_store();
        let a = IdSegments::new(store.clone().into(), 1000, 10, 2);
        let b = IdSegments::new(store.clone().into(), 1000, 10, 2);
        let mut seen = HashSet::new();
        for _ in 0..25 {
            assert!(seen.insert(a.next().await.unwrap()));
            assert!(seen.insert(b.next().await.unwrap()));
        }
        let many = a.take(37).await.unwrap();
        assert_eq!(many.len(), 37);
        for id in many {
            assert!(id >= 1000);
            assert!(seen.insert(id));
        }
        store.close();
        // A new process on the same database continues after every lease.
        let store =
            crate::store::sqlite::SqliteStore::open(&dir.path().join("t.db"), 1, 10).unwrap();
        let c = IdSegments::new(store.into(), 1000, 10, 2);
        for _ in 0..30 {
            assert!(seen.insert(c.next().await.unwrap()));
        }
    }

    #[tokio::test]
    async fn ids_stop_at_the_ceiling_and_spare_ones_go_back() {
        let (_dir, store) = temp_store();
        let ids = IdSegments::within(store.clone().into(), 100..125, 10, 2, None);
        let got = ids.take(25).await.unwrap();
        assert_eq!(got, (100..125).collect::<Vec<_>>());
        match ids.next().await {
            Err(StoreError::Exhausted(why)) => assert!(why.contains("max_length"), "{why}"),
            other => panic!("{other:?}"),
        }
        // Another process: one id taken, the rest of its segments back.
        let other = IdSegments::new(store.clone().into(), 200, 10, 3);
        assert_eq!(other.next().await.unwrap(), 200);
        other.prime().await.unwrap();
        let back = other.give_back().await.unwrap();
        assert!(back >= 9, "{back}");
        let again = IdSegments::new(store.into(), 200, 10, 1);
        assert_eq!(again.next().await.unwrap(), 201);
    }

    #[tokio::test]
    async fn ids_reserved_by_an_import_are_never_handed_out() {
        let (dir, store) = temp_store();
        let ids = IdSegments::new(store.clone().into(), 100, 50, 2);
        ids.prime().await.unwrap();
        assert_eq!(ids.next().await.unwrap(), 100);
        // An import kept ids up to 130, some of them in memory here.
        ids.reserve_through(130).await.unwrap();
        let after = ids.take(60).await.unwrap();
        assert!(after.iter().all(|&id| id > 130), "{after:?}");
        // Beyond every lease: another process leases after them too.
        ids.reserve_through(5000).await.unwrap();
        assert!(ids.next().await.unwrap() > 5000);
        store.close();
        let store =
            crate::store::sqlite::SqliteStore::open(&dir.path().join("t.db"), 1, 10).unwrap();
        let other = IdSegments::new(store.into(), 100, 50, 2);
        assert!(other.next().await.unwrap() > 5000);
    }

    #[tokio::test]
    async fn recycling_takes_recycled_ranges_first_and_drops_segments_held_too_long() {
        let (_dir, store) = temp_store();
        store
            .write(|c| {
                crate::store::sqlite::ids::advance_past(c, 999)?;
                crate::store::sqlite::recycle::record_lease(c, &(100..110), 0)?;
                c.execute("UPDATE id_ranges SET state = 'available'", [])?;
                Ok(())
            })
            .await
            .unwrap();
        let hold = std::time::Duration::from_millis(300);
        let ids = IdSegments::recycling(store.clone().into(), 100, 50, 1, hold);
        let first = ids.take(10).await.unwrap();
        assert_eq!(
            first,
            (100..110).collect::<Vec<_>>(),
            "the recycled range first"
        );
        assert_eq!(ids.reused.load(Ordering::Relaxed), 1);
        assert_eq!(ids.next().await.unwrap(), 1000, "then fresh ids");
        tokio::time::sleep(hold * 2).await;
        // The segment of 1000.. is past the hold limit: never handed out again.
        let later = ids.next().await.unwrap();
        assert!(later >= 1050, "{later}");
        // Without recycling the same store's available ranges stay put.
        store
            .write(|c| {
                Ok(c.execute(
                    "UPDATE id_ranges SET state = 'available' WHERE start = 100",
                    [],
                )?)
            })
            .await
            .unwrap();
        let plain = IdSegments::new(store.into(), 100, 50, 1);
        assert!(plain.next().await.unwrap() >= 1100);
    }

    #[tokio::test]
    async fn refills_in_the_background_at_eighty_percent() {
        let (_dir, store) = temp_store();
        let ids = IdSegments::new(store.into(), 1, 100, 2);
        ids.prime().await.unwrap();
        // Priming leases one segment and starts fetching the spare.
        for _ in 0..50 {
            tokio::task::yield_now().await;
            if ids.remaining() == 200 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        assert_eq!(ids.remaining(), 200);
        assert_eq!(ids.leased.load(Ordering::Relaxed), 2);
        ids.take(70).await.unwrap();
        // 130 left > low water (100 + 20): no new lease yet.
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        assert_eq!(ids.leased.load(Ordering::Relaxed), 2);
        ids.take(20).await.unwrap();
        for _ in 0..50 {
            if ids.leased.load(Ordering::Relaxed) == 3 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        assert_eq!(ids.leased.load(Ordering::Relaxed), 3);
        assert_eq!(ids.remaining(), 210);
    }
}
