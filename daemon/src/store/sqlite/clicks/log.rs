//! The `click_log` and `click_batches` tables (in the log's own file,
//! `super::logdb`): a batch made durable in O(1) pages before its ack,
//! recovery of unfolded rows at open, pruning.

use std::collections::HashMap;

use rusqlite::{params, Connection};
use shortlink_core::click_formats::{decode_batch, decode_batch_v4, decode_batch_v7};
use shortlink_core::ipc::{self, ClickBatch, FrameError, HEADER_LEN};

use super::late;
use super::pending::{folded_through, PendingClicks};
use crate::store::{StoreError, StoreResult};

/// Records each batch id (a re-sent batch is a duplicate: `None`) and
/// appends each new batch to `click_log`, less the late rows of recycled or
/// deleted ids (`super::late`); returns each batch's log seq. O(1) pages per
/// batch: the log's last page(s) and one leaf of the batch id index,
/// whatever the number of links in the batch.
pub fn append_batches(
    conn: &Connection,
    batches: &mut [ClickBatch],
    now: i64,
) -> StoreResult<Vec<Option<i64>>> {
    let mut seen = conn.prepare_cached(
        "INSERT OR IGNORE INTO clicklog.click_batches (batch_id, seen_at) VALUES (?1, ?2)",
    )?;
    let mut log = conn.prepare_cached(
        "INSERT INTO clicklog.click_log (received_at, batch, format) VALUES (?1, ?2, 3)",
    )?;
    let mut out = Vec::with_capacity(batches.len());
    for batch in batches {
        if seen.execute(params![&batch.batch_id.0[..], now])? == 0 {
            out.push(None);
            continue;
        }
        let dropped = late::drop_stale_rows(conn, batch, now)?;
        if dropped > 0 {
            tracing::info!(
                rows = dropped,
                "late click rows of links created after them (recycled ids) or gone: not counted"
            );
        }
        let bytes = ipc::frame(batch).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        log.execute(params![now, bytes])?;
        out.push(Some(conn.last_insert_rowid()));
    }
    Ok(out)
}

/// At open: puts the log rows a crash left (acknowledged, not folded) back
/// into memory, for the next fold. A row that does not decode is logged and
/// left in the log (never counted, never deleted). Rows of format 1 (before
/// clicks had a country) count with the unknown country, rows of format 2
/// (before clicks had a variant) with none. Clicks of a link the prompt fold
/// took ahead are skipped in the rows it covered (`click_fold_links`).
pub fn recover(conn: &Connection, pending: &PendingClicks) -> StoreResult<u64> {
    let through = folded_through(conn)?;
    let ahead: HashMap<u64, i64> = conn
        .prepare("SELECT link_id, through FROM click_fold_links")?
        .query_map([], |r| Ok((r.get::<_, i64>(0)? as u64, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    let mut st = conn.prepare(
        "SELECT seq, received_at, batch, format FROM clicklog.click_log WHERE seq > ?1 ORDER BY seq",
    )?;
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
        let format: i64 = row.get(3)?;
        let decode = match format {
            1 => decode_batch_v4,
            2 => decode_batch_v7,
            _ => decode_batch,
        };
        let decoded = bytes
            .get(HEADER_LEN..)
            .ok_or_else(|| FrameError::Malformed("short frame".into()))
            .and_then(decode);
        match decoded {
            Ok(mut batch) => {
                if !ahead.is_empty() {
                    batch
                        .clicks
                        .retain(|c| !matches!(ahead.get(&c.link_id), Some(t) if seq <= *t));
                }
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

/// Forgets batch ids older than `cutoff` (Unix seconds).
pub fn prune_batches(conn: &Connection, cutoff: i64) -> StoreResult<usize> {
    Ok(conn.execute(
        "DELETE FROM clicklog.click_batches WHERE seen_at < ?1",
        [cutoff],
    )?)
}

/// Acknowledged batches not folded yet: the `click_log` rows past
/// `folded_through` (on the writer connection, which has the log attached).
pub fn log_len(conn: &Connection) -> StoreResult<u64> {
    let through = folded_through(conn)?;
    Ok(conn.query_row(
        "SELECT count(*) FROM clicklog.click_log WHERE seq > ?1",
        [through],
        |r| r.get::<_, i64>(0),
    )? as u64)
}
