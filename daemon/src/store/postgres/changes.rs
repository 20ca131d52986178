//! The edge change log on PostgreSQL, shared by every node: a write that
//! the edges must see appends a row in its own transaction ([`append`]);
//! once the row is final it gets a version ([`sequence`]), and every daemon
//! reads the versions after its position ([`read_after`]) and invalidates
//! its cache and its nginx zone, woken by a payload-free `NOTIFY` sent
//! after the commit ([`notify`]) or by a poll (`postgres::follow`).
//!
//! # The ordering rule
//!
//! With several writers, `seq` (taken at insert) is not commit order: a
//! transaction holding seq 10 may commit after one holding seq 11, so a
//! reader that returned 11 and then asked for "seq > 11" would skip 10
//! forever. Each row therefore records its writer's top-level transaction
//! id (`xid`, `pg_current_xact_id()`), and:
//!
//! * **A row is final** once its `xid` is below
//!   `pg_snapshot_xmin(pg_current_snapshot())`, the oldest transaction
//!   still running anywhere in the cluster. Every transaction below that
//!   horizon has ended, and any transaction that has not ended yet, or has
//!   not started, has an xid at or above it; so a final row is committed
//!   (or gone with its rollback) and visible to every later statement.
//! * **Versions** are given to final rows only, by [`sequence`]: in one
//!   transaction holding the advisory lock [`SEQUENCE_LOCK`], the final
//!   rows without a version are numbered in `(xid, seq)` order, continuing
//!   from the highest version ever given (or pruned). Whichever daemon gets
//!   there first does it; the lock makes the assignments one after another,
//!   each commits whole, and a later one starts only once the earlier one
//!   is visible. So versions are consecutive, given once, and every
//!   snapshot sees versions `1..=n` with no hole: a prefix.
//! * **Readers** ask for `version > position ORDER BY version`. A position
//!   is a version, the same on every node and across daemon restarts
//!   (`ChangePosition { store, seq: version }`). Nothing is skipped (a row
//!   gets a version above every version already readable), nothing comes
//!   twice (positions only grow).
//! * Reads are single read-only statements (or read-only transactions),
//!   which have no xid and so never hold the horizon back. A transaction
//!   that appended rows and then sequenced would wait for itself: sequence
//!   after committing.
//!
//! Two consequences. Changes to one link by two transactions get versions
//! in xid order, which is not always commit order (a transaction can take
//! its xid before it waits on the link's row lock), so a follower treats a
//! change as "link `link_id` and the aliases named changed: drop them and
//! read them again", never as a value to apply. And a long-running writing
//! transaction anywhere in the cluster delays every version after its xid
//! until it ends: every pooled connection sets
//! `idle_in_transaction_session_timeout` (`postgres::open`).

use deadpool_postgres::GenericClient;
use tokio_postgres::Row;

use super::PgError;
pub use crate::store::Change;

/// The channel `NOTIFY` wakes followers on.
pub const CHANNEL: &str = "shortlink_changes";

/// The advisory lock [`sequence`] and [`prune`] hold ("shortseq" in
/// ASCII; the migration's is another).
pub const SEQUENCE_LOCK: i64 = 0x73686f7274736571;

/// Versions kept: a follower or worker away for fewer changes than this
/// resumes where it left off (as many as the SQLite log keeps).
pub const KEEP: u64 = crate::store::changes::KEEP;

/// Rows versioned per statement.
const SEQUENCE_BATCH: i64 = 10_000;

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

/// Appends one change per new link in one statement, in their order, each
/// with the alias it was made with (an import chunk's links).
pub async fn append_new(
    tx: &impl GenericClient,
    links: &[(i64, Option<&str>)],
) -> Result<(), PgError> {
    if links.is_empty() {
        return Ok(());
    }
    let (ids, aliases): (Vec<i64>, Vec<Option<&str>>) = links.iter().copied().unzip();
    let st = tx
        .prepare_cached(
            "INSERT INTO edge_changes (link_id, old_alias, new_alias) \
             SELECT id, NULL, alias FROM unnest($1::bigint[], $2::text[]) \
             WITH ORDINALITY AS u(id, alias, n) ORDER BY n",
        )
        .await
        .map_err(PgError::query("preparing a change-log append"))?;
    tx.execute(&st, &[&ids, &aliases])
        .await
        .map_err(PgError::query("appending to the change log"))?;
    Ok(())
}

/// Appends one change per link in one statement, each under the alias it
/// keeps (a switch on or off: the codes stay, the edge drops them).
pub async fn append_in_place(
    tx: &impl GenericClient,
    links: &[(i64, Option<String>)],
) -> Result<(), PgError> {
    if links.is_empty() {
        return Ok(());
    }
    let (ids, aliases): (Vec<i64>, Vec<Option<String>>) = links.iter().cloned().unzip();
    let st = tx
        .prepare_cached(
            "INSERT INTO edge_changes (link_id, old_alias, new_alias) \
             SELECT id, alias, alias FROM unnest($1::bigint[], $2::text[]) AS u(id, alias)",
        )
        .await
        .map_err(PgError::query("preparing a change-log append"))?;
    tx.execute(&st, &[&ids, &aliases])
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

/// What [`sequence`] did and what it left.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sequenced {
    /// Rows given a version here (0: none was final and unversioned, or
    /// another daemon got there first).
    pub assigned: u64,
    /// The lowest and highest `seq` of committed rows that are not final
    /// yet (an older transaction still runs): they get versions later.
    pub waiting: Option<(u64, u64)>,
    /// The horizon they wait on: the oldest transaction still running.
    pub horizon: u64,
}

/// Gives every final row without a version the next versions, in
/// `(xid, seq)` order, under [`SEQUENCE_LOCK`]; prunes versions older than
/// the newest [`KEEP`] when a multiple of 1024 is crossed. Cheap when there
/// is nothing to do: one indexed read, no transaction.
pub async fn sequence(client: &mut deadpool_postgres::Client) -> Result<Sequenced, PgError> {
    sequence_keeping(client, KEEP).await
}

/// [`sequence`] keeping the newest `keep` versions instead of [`KEEP`].
pub async fn sequence_keeping(
    client: &mut deadpool_postgres::Client,
    keep: u64,
) -> Result<Sequenced, PgError> {
    let st = client
        .prepare_cached(
            "SELECT count(e.seq) FILTER (WHERE e.xid < h.x), \
                    min(e.seq) FILTER (WHERE e.xid >= h.x), \
                    max(e.seq) FILTER (WHERE e.xid >= h.x), \
                    h.x::text::bigint \
             FROM (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS x) h \
             LEFT JOIN edge_changes e ON e.version IS NULL \
             GROUP BY h.x",
        )
        .await
        .map_err(PgError::query("preparing the change-log sequencing check"))?;
    let row = client
        .query_one(&st, &[])
        .await
        .map_err(PgError::query("checking for changes to sequence"))?;
    let (min, max): (Option<i64>, Option<i64>) = (row.get(1), row.get(2));
    let mut done = Sequenced {
        assigned: 0,
        waiting: min.zip(max).map(|(a, b)| (a as u64, b as u64)),
        horizon: row.get::<_, i64>(3) as u64,
    };
    if row.get::<_, i64>(0) == 0 {
        return Ok(done);
    }
    let tx = client
        .transaction()
        .await
        .map_err(PgError::query("starting the change-log sequencing"))?;
    lock(&tx).await?;
    let before = head(&tx).await? as i64;
    let assign = tx
        .prepare_cached(
            "WITH todo AS ( \
                 SELECT seq, row_number() OVER (ORDER BY xid, seq) AS n FROM edge_changes \
                 WHERE version IS NULL AND xid < pg_snapshot_xmin(pg_current_snapshot()) \
                 ORDER BY xid, seq LIMIT $2) \
             UPDATE edge_changes e SET version = $1 + todo.n FROM todo WHERE e.seq = todo.seq",
        )
        .await
        .map_err(PgError::query("preparing the change-log sequencing"))?;
    let mut after = before;
    loop {
        let n = tx
            .execute(&assign, &[&after, &SEQUENCE_BATCH])
            .await
            .map_err(PgError::query("giving changes their versions"))?;
        after += n as i64;
        if n < SEQUENCE_BATCH as u64 {
            break;
        }
    }
    let keep = i64::try_from(keep).unwrap_or(i64::MAX);
    if after > keep && after / 1024 > before / 1024 {
        cut(&tx, after - keep).await?;
    }
    tx.commit()
        .await
        .map_err(PgError::query("committing the change-log sequencing"))?;
    done.assigned = (after - before) as u64;
    Ok(done)
}

/// Waits for [`SEQUENCE_LOCK`], held until the caller's transaction ends.
async fn lock(tx: &impl GenericClient) -> Result<(), PgError> {
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SEQUENCE_LOCK])
        .await
        .map_err(PgError::query("waiting for the change-log sequencing lock"))?;
    Ok(())
}

/// Deletes the versions up to `through` and records it as pruned, in the
/// caller's transaction (which holds the lock).
async fn cut(tx: &impl GenericClient, through: i64) -> Result<u64, PgError> {
    tx.execute(
        "UPDATE store_meta SET pruned_version = greatest(pruned_version, $1) WHERE id = 1",
        &[&through],
    )
    .await
    .map_err(PgError::query("recording the change-log prune mark"))?;
    tx.execute("DELETE FROM edge_changes WHERE version <= $1", &[&through])
        .await
        .map_err(PgError::query("pruning the change log"))
}

/// What a read found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogRead {
    /// The changes after the position, in version order (at most the
    /// limit asked; more may follow at once). Each change's `seq` is its
    /// version.
    Changes(Vec<Change>),
    /// Versions after the position were pruned: the follower must drop
    /// what it holds and start again from [`head`].
    Pruned,
}

/// Up to `limit` versioned changes after version `after`, in version order
/// (see the module doc for the rule).
pub async fn read_after(
    client: &impl GenericClient,
    after: u64,
    limit: u32,
) -> Result<LogRead, PgError> {
    read(client, after, i64::MAX, limit as i64).await
}

/// The changes after `after` up to and including version `to`, or `None`
/// when some of them were pruned (read in the caller's snapshot).
pub async fn between(
    client: &impl GenericClient,
    after: u64,
    to: u64,
) -> Result<Option<Vec<Change>>, PgError> {
    if after >= to {
        return Ok(Some(Vec::new()));
    }
    let to = i64::try_from(to).unwrap_or(i64::MAX);
    Ok(match read(client, after, to, i64::MAX).await? {
        LogRead::Changes(c) => Some(c),
        LogRead::Pruned => None,
    })
}

async fn read(
    client: &impl GenericClient,
    after: u64,
    to: i64,
    limit: i64,
) -> Result<LogRead, PgError> {
    let after = i64::try_from(after)
        .map_err(|_| PgError::Invalid(format!("change-log position {after} is past bigint")))?;
    let st = client
        .prepare_cached(
            "SELECT e.version, e.link_id, e.old_alias, e.new_alias, m.pruned_version \
             FROM edge_changes e LEFT JOIN store_meta m ON m.id = 1 \
             WHERE e.version > $1 AND e.version <= $2 ORDER BY e.version LIMIT $3",
        )
        .await
        .map_err(PgError::query("preparing a change-log read"))?;
    let rows = client
        .query(&st, &[&after, &to, &limit])
        .await
        .map_err(PgError::query("reading the change log"))?;
    // Rows and mark in one statement; with no row, the mark after them: a
    // prune in between can only make the answer a needless resync, never
    // a silent gap.
    let pruned = match rows.first() {
        Some(r) => r.get::<_, Option<i64>>(4).unwrap_or(0),
        None => pruned_through(client).await?,
    };
    if after < pruned {
        return Ok(LogRead::Pruned);
    }
    Ok(LogRead::Changes(rows.iter().map(change).collect()))
}

/// The newest pruned version (0: none, or no identity row yet).
async fn pruned_through(client: &impl GenericClient) -> Result<i64, PgError> {
    let st = client
        .prepare_cached("SELECT pruned_version FROM store_meta WHERE id = 1")
        .await
        .map_err(PgError::query("preparing the prune mark read"))?;
    let row = client
        .query_opt(&st, &[])
        .await
        .map_err(PgError::query("reading the prune mark"))?;
    Ok(row.map_or(0, |r| r.get(0)))
}

fn change(r: &Row) -> Change {
    Change {
        seq: r.get::<_, i64>(0) as u64,
        link_id: r.get::<_, i64>(1) as u64,
        old_alias: r.get(2),
        new_alias: r.get(3),
    }
}

/// The newest version given (or pruned); 0 for an empty log. A follower
/// that loads everything afresh takes it before loading.
pub async fn head(client: &impl GenericClient) -> Result<u64, PgError> {
    let st = client
        .prepare_cached(
            "SELECT greatest(coalesce((SELECT max(version) FROM edge_changes), 0), \
                             coalesce((SELECT pruned_version FROM store_meta WHERE id = 1), 0))",
        )
        .await
        .map_err(PgError::query("preparing the change-log head read"))?;
    let row = client
        .query_one(&st, &[])
        .await
        .map_err(PgError::query("reading the change-log head"))?;
    Ok(row.get::<_, i64>(0) as u64)
}

/// Deletes the versions before the newest `keep`, recording the newest
/// one deleted: a follower before it may have lost rows and is told to
/// resync. Returns the rows deleted. ([`sequence`] prunes on its own; this
/// is for maintenance and tests.)
pub async fn prune(client: &mut deadpool_postgres::Client, keep: u64) -> Result<u64, PgError> {
    let tx = client
        .transaction()
        .await
        .map_err(PgError::query("starting a change-log prune"))?;
    lock(&tx).await?;
    let newest = head(&tx).await?;
    let deleted = match newest.checked_sub(keep) {
        Some(through) if through > 0 => cut(&tx, through as i64).await?,
        _ => 0,
    };
    tx.commit()
        .await
        .map_err(PgError::query("committing a change-log prune"))?;
    Ok(deleted)
}
