//! Late clicks and recycled ids: a click stamped before its link was
//! created (`shortlink_core::clicks::counts_for`) was the old link's,
//! delivered after the id was recycled (a spool file weeks old), and is
//! dropped, never counted for the new link. Only late rows
//! (`shortlink_core::clicks::is_late`) cost a read of the link's creation
//! time; live traffic never does.
//!
//! Checked twice: when a batch is appended (so the log and the pending
//! clicks readers see hold none), and again per link at the fold (a late
//! row appended while the old link still existed, in the moment between
//! the recycling sweep's fold and its purge, or put back by recovery).

use std::borrow::Cow;
use std::collections::HashMap;

use rusqlite::{Connection, OptionalExtension};
use shortlink_core::clicks::{counts_for, is_late};
use shortlink_core::ipc::ClickBatch;

use crate::store::clicks::LinkAgg;
use crate::store::StoreResult;

/// When link `id` was created; `None` when there is no such link.
fn created_at(conn: &Connection, id: u64) -> StoreResult<Option<i64>> {
    let Ok(id) = i64::try_from(id) else {
        return Ok(None);
    };
    Ok(conn
        .prepare_cached("SELECT created_at FROM links WHERE id = ?1")?
        .query_row([id], |r| r.get(0))
        .optional()?)
}

/// Drops the late rows of `batch` that no link can take at `now`: their
/// link is gone or was created after them. The rows dropped.
pub fn drop_stale_rows(conn: &Connection, batch: &mut ClickBatch, now: i64) -> StoreResult<usize> {
    if !batch.clicks.iter().any(|c| is_late(c.hour.into(), now)) {
        return Ok(0);
    }
    let mut created: HashMap<u64, Option<i64>> = HashMap::new();
    for c in batch.clicks.iter().filter(|c| is_late(c.hour.into(), now)) {
        if let std::collections::hash_map::Entry::Vacant(e) = created.entry(c.link_id) {
            e.insert(created_at(conn, c.link_id)?);
        }
    }
    let before = batch.clicks.len();
    batch.clicks.retain(|c| {
        !is_late(c.hour.into(), now)
            || created[&c.link_id].is_some_and(|at| counts_for(c.hour.into(), at))
    });
    Ok(before - batch.clicks.len())
}

/// Link `id`'s pending clicks as the fold may count them at `now`: all of
/// them when none is late (the common case, no read), else those from
/// after the link's creation; `None` when the link is gone.
pub fn countable<'a>(
    conn: &Connection,
    id: u64,
    l: &'a LinkAgg,
    now: i64,
) -> StoreResult<Option<Cow<'a, LinkAgg>>> {
    if !l.rows.iter().any(|(k, _)| is_late(k.hour, now)) {
        return Ok(Some(Cow::Borrowed(l)));
    }
    Ok(created_at(conn, id)?.map(|at| Cow::Owned(l.since(|hour| counts_for(hour, at)))))
}
