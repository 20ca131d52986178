//! The edge change log on PostgreSQL, shared by every node: a write that
//! the edges must see appends a row in its own transaction ([`append`]);
//! every daemon reads the rows after its position ([`read_after`]) and
//! invalidates its cache and its nginx zone, woken by a payload-free
//! `NOTIFY` sent after the commit ([`notify`]) or by a poll
//! (`pg::follow`).
//!
//! # The ordering rule
//!
//! With several writers, `seq` (taken at insert) is not commit order: a
//! transaction holding seq 10 may commit after one holding seq 11, so a
//! reader that returned 11 and then asked for "seq > 11" would skip 10
//! forever. Each row therefore records its writer's top-level transaction
//! id (`xid`, `pg_current_xact_id()`), and:
//!
//! * **Version order** is `(xid, seq)`, ascending. A position is the
//!   `(xid, seq)` of the last row handed out ([`LogPosition`]).
//! * **A row is handed out only once final**: its `xid` is below
//!   `pg_snapshot_xmin(pg_current_snapshot())` of the reading statement,
//!   the oldest transaction still running anywhere in the cluster. Every
//!   transaction below that horizon has ended, and any transaction that
//!   has not ended yet, or has not started, has an xid at or above it; so
//!   the set of rows below the horizon never grows again, and a read
//!   returns exactly the rows in `(position, (horizon, 0))`, in version
//!   order. No row is skipped (a later commit always has an xid at or
//!   above the horizon that excluded it), none is returned twice
//!   (positions only grow). The horizon and the rows come from the same
//!   statement, hence the same snapshot.
//! * The reader's own transaction: reads run as single read-only
//!   statements, which have no xid and so never hold the horizon back. A
//!   transaction that appended rows and then reads would wait for itself:
//!   read after committing.
//!
//! Two consequences. Changes to one link by two transactions come in xid
//! order, which is not always commit order (a transaction can take its xid
//! before it waits on the link's row lock), so a follower treats a change
//! as "link `link_id` and the aliases named changed: drop them and read
//! them again", never as a value to apply. And a long-running writing
//! transaction anywhere in the cluster delays every follower until it
//! ends: keep `idle_in_transaction_session_timeout` set.

use deadpool_postgres::GenericClient;
use tokio_postgres::Row;

use super::PgError;

/// The channel `NOTIFY` wakes followers on.
pub const CHANNEL: &str = "shortlink_changes";

/// Where a follower is in the log: the `(xid, seq)` of the last change it
/// was handed. Ordered as the log is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct LogPosition {
    /// Transaction id of the last change handed out.
    pub xid: u64,
    /// Its seq.
    pub seq: u64,
}

/// One change: a link and its alias before and after the write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// Place in the log; the next read starts after it.
    pub position: LogPosition,
    /// The link; its generated code is invalidated.
    pub link_id: u64,
    /// Alias before the write.
    pub old_alias: Option<String>,
    /// Alias after the write.
    pub new_alias: Option<String>,
}

/// Appends a change in the caller's transaction (it commits or rolls back
/// with the write it describes). Call [`notify`] after the commit.
pub async fn append(
    tx: &impl GenericClient,
    link_id: u64,
    old_alias: Option<&str>,
    new_alias: Option<&str>,
) -> Result<(), PgError> {
    let id = i64::try_from(link_id)
        .map_err(|_| PgError::Invalid(format!("link id {link_id} is past bigint")))?;
    let st = tx
        .prepare_cached(
            "INSERT INTO edge_changes (link_id, old_alias, new_alias) VALUES ($1, $2, $3)",
        )
        .await
        .map_err(PgError::query("preparing a change-log append"))?;
    tx.execute(&st, &[&id, &old_alias, &new_alias])
        .await
        .map_err(PgError::query("appending to the change log"))?;
    Ok(())
}

/// Wakes every follower (payload-free; sent outside the writing
/// transaction so it never serialises busy commits).
pub async fn notify(client: &impl GenericClient) -> Result<(), PgError> {
    client
        .batch_execute(&format!("NOTIFY {CHANNEL}"))
        .await
        .map_err(PgError::query("notifying followers"))
}

/// What a read found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogRead {
    /// The final changes after the position, in version order (at most
    /// the limit asked; more may follow at once).
    Changes(Vec<Change>),
    /// Rows after the position were pruned: the follower must drop what it
    /// holds and start again from [`head`].
    Pruned,
}

/// Up to `limit` final changes after `after`, in version order (see the
/// module doc for the rule).
pub async fn read_after(
    client: &impl GenericClient,
    after: LogPosition,
    limit: u32,
) -> Result<LogRead, PgError> {
    let st = client
        .prepare_cached(
            "SELECT e.seq, e.xid::text::bigint, e.link_id, e.old_alias, e.new_alias, \
                    m.pruned_xid::text::bigint, m.pruned_seq \
             FROM edge_changes e LEFT JOIN store_meta m ON m.id = 1 \
             WHERE (e.xid, e.seq) > ($1::bigint::text::xid8, $2::bigint) \
               AND e.xid < pg_snapshot_xmin(pg_current_snapshot()) \
             ORDER BY e.xid, e.seq LIMIT $3",
        )
        .await
        .map_err(PgError::query("preparing a change-log read"))?;
    let rows = client
        .query(
            &st,
            &[&(after.xid as i64), &(after.seq as i64), &(limit as i64)],
        )
        .await
        .map_err(PgError::query("reading the change log"))?;
    let pruned = match rows.first() {
        Some(r) => r.get::<_, Option<i64>>(5).zip(r.get::<_, Option<i64>>(6)),
        None => pruned_through(client).await?,
    };
    let pruned = pruned.map_or(LogPosition::default(), |(xid, seq)| LogPosition {
        xid: xid as u64,
        seq: seq as u64,
    });
    if after < pruned {
        return Ok(LogRead::Pruned);
    }
    Ok(LogRead::Changes(rows.iter().map(change).collect()))
}

/// The newest pruned row, if the store has its identity row.
async fn pruned_through(client: &impl GenericClient) -> Result<Option<(i64, i64)>, PgError> {
    let st = client
        .prepare_cached("SELECT pruned_xid::text::bigint, pruned_seq FROM store_meta WHERE id = 1")
        .await
        .map_err(PgError::query("preparing the prune mark read"))?;
    let row = client
        .query_opt(&st, &[])
        .await
        .map_err(PgError::query("reading the prune mark"))?;
    Ok(row.map(|r| (r.get(0), r.get(1))))
}

fn change(r: &Row) -> Change {
    Change {
        position: LogPosition {
            xid: r.get::<_, i64>(1) as u64,
            seq: r.get::<_, i64>(0) as u64,
        },
        link_id: r.get::<_, i64>(2) as u64,
        old_alias: r.get(3),
        new_alias: r.get(4),
    }
}

/// The position a follower starts from when it loads everything afresh
/// (take it before loading): every row final now is at or before it.
pub async fn head(client: &impl GenericClient) -> Result<LogPosition, PgError> {
    let row = client
        .query_one(
            "SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint",
            &[],
        )
        .await
        .map_err(PgError::query("reading the change-log head"))?;
    // (horizon, 0) is after every final row and before every later one.
    Ok(LogPosition {
        xid: row.get::<_, i64>(0) as u64,
        seq: 0,
    })
}

/// Deletes the final rows before the newest `keep` of them, recording the
/// newest row deleted: a follower before it may have lost rows and is told
/// to resync. Returns the rows deleted.
pub async fn prune(client: &impl GenericClient, keep: u32) -> Result<u64, PgError> {
    let st = client
        .prepare_cached(
            "WITH cut AS ( \
                 SELECT xid, seq FROM edge_changes \
                 WHERE xid < pg_snapshot_xmin(pg_current_snapshot()) \
                 ORDER BY xid DESC, seq DESC OFFSET $1 LIMIT 1), \
             mark AS ( \
                 UPDATE store_meta m SET pruned_xid = cut.xid, pruned_seq = cut.seq \
                 FROM cut WHERE m.id = 1 AND (cut.xid, cut.seq) > (m.pruned_xid, m.pruned_seq)) \
             DELETE FROM edge_changes e USING cut WHERE (e.xid, e.seq) <= (cut.xid, cut.seq)",
        )
        .await
        .map_err(PgError::query("preparing a change-log prune"))?;
    client
        .execute(&st, &[&(keep as i64)])
        .await
        .map_err(PgError::query("pruning the change log"))
}
