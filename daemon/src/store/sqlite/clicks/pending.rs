//! Acknowledged clicks not folded into the tables yet, and the overlay
//! through which readers add them to what they read, cut consistently
//! against the fold.

use std::sync::{Arc, Mutex, MutexGuard};

use rusqlite::Connection;
use shortlink_core::ipc::ClickBatch;

use crate::store::clicks::{Aggregate, LinkAgg, RowKey};
use crate::store::sqlite::snapshot::ReadSnapshot;
use crate::store::{Link, StoreResult};

/// What [`PendingClicks`] guards: the open aggregate and the sealed one.
#[derive(Debug, Default)]
pub(super) struct PendingState {
    /// Batches acknowledged since the last fold started.
    pub(super) open: Aggregate,
    /// Highest `click_log` seq in `open` or in what is folded before it.
    pub(super) open_through: i64,
    /// What a running fold is writing, and the `click_fold` generation its
    /// commit writes: still counted by readers whose snapshot has an older
    /// generation.
    pub(super) sealed: Option<(Arc<Aggregate>, i64)>,
}

/// Acknowledged clicks not yet in the `clicks` table and the link totals.
/// Only the writer thread changes it (after its commits); readers look
/// through [`with_overlay`].
#[derive(Debug, Default)]
pub struct PendingClicks {
    state: Mutex<PendingState>,
}

impl PendingClicks {
    /// The state; a panic elsewhere while holding it leaves it usable.
    pub(super) fn lock(&self) -> MutexGuard<'_, PendingState> {
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

    /// Every pending `clicks` row, with its link id.
    pub fn all_rows(&self) -> impl Iterator<Item = (u64, &RowKey, i64)> {
        self.parts.iter().flatten().flat_map(|a| {
            a.links
                .iter()
                .flat_map(|(id, l)| l.rows.iter().map(move |(k, n)| (*id, k, *n)))
        })
    }

    /// Pending `clicks` rows of one link.
    pub fn rows(&self, id: u64) -> impl Iterator<Item = (&RowKey, i64)> {
        self.links(id)
            .flat_map(|l| l.rows.iter().map(|(k, n)| (k, *n)))
    }

    /// Pending `variant_clicks` rows of one link: `(hour, variant, clicks)`.
    pub fn variant_rows(&self, id: u64) -> impl Iterator<Item = (i64, u8, i64)> + '_ {
        self.links(id)
            .flat_map(|l| l.variants.iter().map(|&((h, v), n)| (h, v, n)))
    }
}

/// The highest `click_log` seq already in the tables (but for links the
/// prompt fold took ahead, see `click_fold_links`).
pub(super) fn folded_through(conn: &Connection) -> StoreResult<i64> {
    Ok(conn
        .prepare_cached("SELECT folded_through FROM click_fold WHERE id = 1")?
        .query_row([], |r| r.get(0))?)
}

/// How many folds committed (each bumps it).
pub(super) fn fold_generation(conn: &Connection) -> StoreResult<i64> {
    Ok(conn
        .prepare_cached("SELECT generation FROM click_fold WHERE id = 1")?
        .query_row([], |r| r.get(0))?)
}

/// Runs `f` with the pending clicks that are not in the tables as `conn`
/// sees them. Outside a transaction, opens a read transaction after taking
/// the pending lock, so the tables and the memory are one consistent cut:
/// a fold that commits meanwhile cannot clear its sealed part (it needs the
/// lock), and the fold generation in the snapshot tells whether that part
/// is in the tables already. Inside a write transaction (writer thread) the
/// connection sees its own fold, and memory only changes on that thread.
pub fn with_overlay<T>(
    conn: &Connection,
    pending: &PendingClicks,
    f: impl FnOnce(&Connection, &ClickOverlay<'_>) -> StoreResult<T>,
) -> StoreResult<T> {
    let state = pending.lock();
    let snapshot = if conn.is_autocommit() {
        Some(ReadSnapshot::begin(conn)?)
    } else {
        None
    };
    let generation = fold_generation(conn)?;
    let sealed = state
        .sealed
        .as_ref()
        .filter(|(_, sealed_by)| *sealed_by > generation)
        .map(|(a, _)| &**a);
    let overlay = ClickOverlay {
        parts: [Some(&state.open), sealed],
    };
    let out = f(conn, &overlay)?;
    drop(snapshot);
    Ok(out)
}
