//! The `click_log` on PostgreSQL: the clicks of a batch for links without a
//! visit limit or renew-on-access, appended whole (one row, whatever the
//! number of links in it) in the transaction that claims the batch id, and
//! folded later into the tables by any node (`backend/clicks.rs`).
//!
//! A fold locks the oldest log rows (in seq order), adds their clicks to
//! the tables and deletes them in one transaction: a row is in the tables
//! exactly when it is gone from the log, whichever node folded it, so a
//! daemon killed or a PostgreSQL restart loses or doubles nothing.

use std::collections::BTreeSet;

use deadpool_postgres::GenericClient;
use shortlink_core::click_formats::decode_batch;
use shortlink_core::ipc::{self, ClickBatch, HEADER_LEN};

use super::PgError;

/// The log rows' format: the current IPC frame of a batch.
const FORMAT: i16 = 3;

/// Of the links `ids` (ascending), those with a visit limit or
/// renew-on-access: their clicks are counted in the batch's transaction
/// (so limits hold across nodes as before), the others go to the log.
///
/// Walks the shorter of the two lists, as the SQLite fold does: the links
/// with a limit or renewal (the partial index `links_fold_promptly`, read
/// up to one more than `ids`), or else `ids`, each probed in that index.
/// Most sites have few such links or none, and a batch carries thousands
/// of ids: one probe per id, once per batch, was the click ingest's
/// costliest statement (`bench/pgstatements.py --scenario clicks`).
pub async fn prompt_links(tx: &impl GenericClient, ids: &[i64]) -> Result<BTreeSet<u64>, PgError> {
    if ids.is_empty() {
        return Ok(BTreeSet::new());
    }
    let scan = tx
        .prepare_cached(
            "SELECT id FROM links WHERE max_visits IS NOT NULL OR renew_ttl IS NOT NULL \
             ORDER BY id LIMIT $1",
        )
        .await
        .map_err(PgError::query("preparing the prompt links' scan"))?;
    let limit = ids.len() as i64 + 1;
    let prompt: Vec<i64> = tx
        .query(&scan, &[&limit])
        .await
        .map_err(PgError::query(
            "reading the links clicks are counted for at once",
        ))?
        .iter()
        .map(|r| r.get(0))
        .collect();
    if prompt.len() < limit as usize {
        return Ok(prompt
            .into_iter()
            .filter(|id| ids.binary_search(id).is_ok())
            .map(|id| id as u64)
            .collect());
    }
    let probe = tx
        .prepare_cached(
            "SELECT id FROM links WHERE id = ANY($1) \
             AND (max_visits IS NOT NULL OR renew_ttl IS NOT NULL)",
        )
        .await
        .map_err(PgError::query("preparing the prompt links"))?;
    let rows = tx.query(&probe, &[&ids]).await.map_err(PgError::query(
        "finding the links clicks are counted for at once",
    ))?;
    Ok(rows.iter().map(|r| r.get::<_, i64>(0) as u64).collect())
}

/// Appends `batch` (received at Unix second `at`) to the log, in the
/// caller's transaction.
pub async fn append(tx: &impl GenericClient, at: i64, batch: &ClickBatch) -> Result<(), PgError> {
    let bytes = ipc::frame(batch)
        .map_err(|e| PgError::Invalid(format!("cannot frame a click batch: {e}")))?;
    let st = tx
        .prepare_cached("INSERT INTO click_log (received_at, batch, format) VALUES ($1, $2, $3)")
        .await
        .map_err(PgError::query("preparing a click log row"))?;
    tx.execute(&st, &[&at, &bytes, &FORMAT])
        .await
        .map_err(PgError::query("appending a click batch to the log"))?;
    Ok(())
}

/// The newest log row's seq (0 for an empty log): a fold takes rows up to
/// it, so rows appended while it runs never keep it going.
pub async fn head(client: &impl GenericClient) -> Result<i64, PgError> {
    let row = client
        .query_one("SELECT coalesce(max(seq), 0) FROM click_log", &[])
        .await
        .map_err(PgError::query("reading the click log's head"))?;
    Ok(row.get(0))
}

/// Takes up to `limit` of the oldest log rows up to seq `through`, in the caller's transaction:
/// locked in seq order (waiting for a fold in progress on another node,
/// whose rows are then gone), deleted, and returned with the time each was
/// received. A row that does not decode is logged and left (never counted).
pub async fn take(
    tx: &impl GenericClient,
    limit: i64,
    through: i64,
) -> Result<Vec<(i64, ClickBatch)>, PgError> {
    let st = tx
        .prepare_cached(
            "SELECT seq, received_at, batch FROM click_log WHERE format = $2 AND seq <= $3 \
             ORDER BY seq LIMIT $1 FOR UPDATE",
        )
        .await
        .map_err(PgError::query("preparing a click log read"))?;
    let rows = tx
        .query(&st, &[&limit, &FORMAT, &through])
        .await
        .map_err(PgError::query("reading the click log"))?;
    let mut seqs = Vec::with_capacity(rows.len());
    let mut out = Vec::with_capacity(rows.len());
    for row in &rows {
        let seq: i64 = row.get(0);
        let bytes: &[u8] = row.get(2);
        match bytes.get(HEADER_LEN..).map(decode_batch) {
            Some(Ok(batch)) => {
                seqs.push(seq);
                out.push((row.get(1), batch));
            }
            _ => tracing::error!(
                seq,
                "click_log row does not decode; left in the log, not counted"
            ),
        }
    }
    if !seqs.is_empty() {
        let st = tx
            .prepare_cached("DELETE FROM click_log WHERE seq = ANY($1)")
            .await
            .map_err(PgError::query("preparing a click log delete"))?;
        tx.execute(&st, &[&seqs])
            .await
            .map_err(PgError::query("deleting folded click log rows"))?;
    }
    Ok(out)
}
