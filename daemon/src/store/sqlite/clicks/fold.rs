//! The folds: the pending aggregate written into `clicks`,
//! `variant_clicks` and the link totals in one transaction, with visit
//! limits and renewals applied. The prompt fold takes only the links with a
//! visit limit or renew-on-access; the fold of everything takes the rest and
//! empties the log.

use std::sync::Arc;

use rusqlite::{params, Connection, OptionalExtension};

use super::late;
use super::pending::{fold_generation, folded_through, PendingClicks};
use crate::store::clicks::{Aggregate, RowKey};
use crate::store::sqlite::{changes, links, webhooks};
use crate::store::{FoldOutcome, StoreResult, WebhookEvent};
use crate::timestamp::unix_now;

/// The fold of everything, inside a write transaction: seals the open
/// aggregate, adds it to `links` and `clicks`, moves `folded_through` and
/// deletes the log rows an earlier fold covered (the log is another file,
/// whose commit may land without this fold's: `super::logdb`). The caller must call
/// [`PendingClicks::finish_fold`] with whether the transaction committed,
/// and never run two folds at once.
pub fn fold_job(conn: &Connection, pending: &PendingClicks) -> StoreResult<FoldOutcome> {
    // Only log rows a committed fold covered: this fold's own rows (up to
    // its `through`) go with the next fold, once `folded_through` says
    // they are in the tables; recovery skips them meanwhile.
    conn.prepare_cached(DELETE_FOLDED_LOG)?
        .execute([folded_through(conn)?])?;
    let generation = fold_generation(conn)? + 1;
    let (agg, through) = {
        let mut s = pending.lock();
        if s.open.is_empty() {
            return Ok(FoldOutcome::default());
        }
        let agg = Arc::new(std::mem::take(&mut s.open));
        let through = s.open_through;
        s.sealed = Some((Arc::clone(&agg), generation));
        (agg, through)
    };
    let prompt = prompt_links(conn, |f| f(&agg))?;
    let mut outcome = apply_aggregate(conn, &agg, &prompt)?;
    outcome.batches = agg.batches;
    // Every link a prompt fold took ahead was taken through at most
    // `through`.
    conn.prepare_cached("DELETE FROM click_fold_links")?
        .execute([])?;
    conn.prepare_cached("UPDATE click_fold SET folded_through = ?1, generation = ?2 WHERE id = 1")?
        .execute([through, generation])?;
    Ok(outcome)
}

/// The prompt fold, inside a write transaction: only the pending links with
/// a visit limit or renew-on-access (so those reach the edge within
/// `stats::FOLD_EVERY`); the log stays, and `click_fold_links` records
/// through which seq each of them is in the tables, for [`super::recover`].
/// Same contract with [`PendingClicks::finish_fold`] as [`fold_job`].
pub fn fold_prompt_job(conn: &Connection, pending: &PendingClicks) -> StoreResult<FoldOutcome> {
    let ids = prompt_links(conn, |f| f(&pending.lock().open))?;
    if ids.is_empty() {
        return Ok(FoldOutcome::default());
    }
    let generation = fold_generation(conn)? + 1;
    let (agg, through) = {
        let mut s = pending.lock();
        let agg = Arc::new(s.open.take_links(&ids));
        s.sealed = Some((Arc::clone(&agg), generation));
        (agg, s.open_through)
    };
    // Every link taken is one of `ids`.
    let outcome = apply_aggregate(conn, &agg, &ids)?;
    let mut ahead = conn.prepare_cached(
        "INSERT INTO click_fold_links (link_id, through) VALUES (?1, ?2) \
         ON CONFLICT (link_id) DO UPDATE SET through = excluded.through",
    )?;
    for id in agg.link_ids() {
        ahead.execute(params![id as i64, through])?;
    }
    conn.prepare_cached("UPDATE click_fold SET generation = ?1 WHERE id = 1")?
        .execute([generation])?;
    Ok(outcome)
}

/// The links of an aggregate that fold promptly, in id order. Walks the
/// shorter of the two lists: the links with a visit limit or renewal (a
/// partial index, read only up to one more than the aggregate's links), or
/// the aggregate's links, each looked up in that index. `look` shows the
/// aggregate to its argument (the pending one is under a lock, taken only
/// for that look: only the writer thread, this one, changes its links).
fn prompt_links(
    conn: &Connection,
    look: impl Fn(&mut dyn FnMut(&Aggregate)),
) -> StoreResult<Vec<u64>> {
    let mut n = 0;
    look(&mut |a| n = a.link_count());
    if n == 0 {
        return Ok(Vec::new());
    }
    let mut scan = conn.prepare_cached(
        "SELECT id FROM links INDEXED BY links_fold_promptly \
         WHERE (max_visits IS NOT NULL OR renew_ttl IS NOT NULL) ORDER BY id LIMIT ?1",
    )?;
    let mut prompt: Vec<u64> = scan
        .query_map([n as i64 + 1], |r| r.get::<_, i64>(0))?
        .map(|id| id.map(|id| id as u64))
        .collect::<Result<_, _>>()?;
    if prompt.len() <= n {
        look(&mut |a| prompt.retain(|id| a.link(*id).is_some()));
        return Ok(prompt);
    }
    let mut ids = Vec::new();
    look(&mut |a| ids = a.link_ids().collect());
    ids.sort_unstable();
    let mut probe = conn.prepare_cached(
        "SELECT 1 FROM links INDEXED BY links_fold_promptly \
         WHERE id = ?1 AND (max_visits IS NOT NULL OR renew_ttl IS NOT NULL)",
    )?;
    let mut out = Vec::new();
    for id in ids {
        if probe.exists([id as i64])? {
            out.push(id);
        }
    }
    Ok(out)
}

/// A fold's delete of the log rows a committed fold covered (`?1` the
/// highest seq it covered).
pub const DELETE_FOLDED_LOG: &str = "DELETE FROM clicklog.click_log WHERE seq <= ?1";

/// A fold's write of a link's totals: its clicks and bot clicks (`?1` the
/// link, `?2` and `?3` the deltas); no row changed means no such link.
pub const ADD_TOTALS: &str =
    "UPDATE links SET clicks = clicks + ?2, bot_clicks = bot_clicks + ?3 WHERE id = ?1";

/// A fold's write of one `clicks` row: link, hour, device, bot, referrer,
/// country, then the count to add.
pub const ADD_ROW: &str =
    "INSERT INTO clicks (link_id, hour, device, bot, referrer, country, count) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) \
     ON CONFLICT (link_id, hour, device, bot, referrer, country) \
     DO UPDATE SET count = count + excluded.count";

/// Adds an aggregate to the tables: per link (in id order, neighbouring
/// rows on neighbouring pages) one UPDATE of the totals (which tells
/// whether the link exists), then one upsert per `clicks` row and per
/// `variant_clicks` row. For the links in `prompt` (those with a visit
/// limit or renew-on-access, in id order) it first reads what the edge
/// depends on, and applies the limit and the renewal.
fn apply_aggregate(conn: &Connection, agg: &Aggregate, prompt: &[u64]) -> StoreResult<FoldOutcome> {
    // A read, then an update of the same row (its page is cached), not
    // `UPDATE ... RETURNING`: SQLite opens and closes an ephemeral table
    // per such statement, which was most of its time.
    let mut before = conn.prepare_cached(
        "SELECT max_visits, clicks - bot_clicks, renew_ttl, expires_at, alias, disabled \
         FROM links WHERE id = ?1",
    )?;
    let mut totals = conn.prepare_cached(ADD_TOTALS)?;
    let mut upsert = conn.prepare_cached(ADD_ROW)?;
    let mut upsert_variant = conn.prepare_cached(
        "INSERT INTO variant_clicks (link_id, hour, variant, count) VALUES (?1, ?2, ?3, ?4) \
         ON CONFLICT (link_id, hour, variant) DO UPDATE SET count = count + excluded.count",
    )?;
    let mut ids: Vec<u64> = agg.links.keys().copied().collect();
    ids.sort_unstable();
    let mut outcome = FoldOutcome::default();
    let now = unix_now();
    for id in ids {
        // Clicks from before the link existed (a recycled id) are not its.
        let Some(l) = late::countable(conn, id, &agg.links[&id], now)? else {
            continue; // deleted link
        };
        if l.clicks == 0 {
            continue; // every click was an old link's: no renewal either
        }
        type Row = (
            Option<i64>,
            i64,
            Option<i64>,
            Option<i64>,
            Option<String>,
            bool,
        );
        // What the edge depends on, read only for a link whose clicks can
        // change it (`prompt` was read in this transaction: it exists).
        let edge: Option<Row> = if prompt.binary_search(&id).is_ok() {
            before
                .query_row([id as i64], |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get(5)?,
                    ))
                })
                .optional()?
        } else {
            None
        };
        if totals.execute(params![id as i64, l.clicks, l.bots])? == 0 {
            continue; // unknown or deleted link
        }
        let mut rows: Vec<&(RowKey, i64)> = l.rows.iter().collect();
        rows.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        for (k, n) in rows {
            upsert.execute(params![
                id as i64,
                k.hour,
                k.device as i64,
                k.bot,
                k.referrer,
                k.country.as_str(),
                n
            ])?;
        }
        let mut variants = l.variants.clone();
        variants.sort_unstable();
        for ((hour, variant), n) in variants {
            upsert_variant.execute(params![id as i64, hour, variant, n])?;
        }
        outcome.counted += l.clicks as u64;
        let Some((max_visits, humans_before, renew_ttl, expires_at, alias, disabled)) = edge else {
            continue; // no visit limit, no renewal
        };
        let humans_after = humans_before + l.clicks - l.bots;
        let mut changed = false;
        if let Some(max) = max_visits {
            if humans_before < max && humans_after >= max {
                changed = true;
                webhooks::link_event_by_id(conn, WebhookEvent::Exhausted, id, unix_now())?;
            }
        }
        if let (Some(ttl), Some(exp)) = (renew_ttl, expires_at) {
            // Renewed as of the latest click (its batch's ack), as if the
            // batch had been applied then; only a link that was live at
            // that time, and only when the move is worth an edge refetch.
            let at = l.last_at;
            let renewed = at + ttl;
            if !disabled && exp > at && renewed >= exp + (ttl / 10).max(1) {
                links::set_expiry(conn, id, renewed)?;
                changed = true;
            }
        }
        if changed {
            changes::record(conn, id, alias.as_deref(), alias.as_deref())?;
            outcome.changed.push((id, alias));
        }
    }
    Ok(outcome)
}
