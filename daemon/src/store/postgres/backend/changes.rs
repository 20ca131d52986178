//! [`ChangeLog`] on PostgreSQL: the shared, versioned log of
//! `postgres::changes`. A position is `ChangePosition { store: the database's
//! store id, seq: a version }`: the same on every node and across daemon
//! restarts, so a worker resumes from it exactly as on SQLite.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use shortlink_core::ipc::ChangePosition;
use tokio_postgres::IsolationLevel;

use super::PgStore;
use crate::store::postgres::changes::{self, Change};
use crate::store::postgres::PgError;
use crate::store::{ChangeLog, Resume, StoreResult};

/// How long a reader waits for rows committed before it asked to become
/// final (another transaction, older than them, still runs): a daemon's
/// own write then reaches its own nginx with its reply, unless the other
/// transaction outlasts this (the follower delivers it later).
pub const SETTLE: Duration = Duration::from_secs(1);
/// Pause between two sequencing attempts while waiting.
const SETTLE_STEP: Duration = Duration::from_millis(10);

impl PgStore {
    /// The position `seq` in this database.
    fn position(&self, seq: u64) -> ChangePosition {
        ChangePosition {
            store: self.identity().store_id,
            seq,
        }
    }

    /// Versions what is final; while rows committed before the call wait
    /// for an older transaction, tries again, for up to [`SETTLE`]. Once a
    /// transaction has outlasted a wait, later reads do not wait on it
    /// again (the caller holds the edge's push lock: every write of this
    /// node would queue behind it); the follower delivers those rows.
    async fn sequence_settled(&self, client: &mut deadpool_postgres::Client) -> StoreResult<()> {
        let deadline = Instant::now() + SETTLE;
        let first = changes::sequence(client).await?;
        let Some((_, target)) = first.waiting else {
            return Ok(());
        };
        if self.outlasted.load(Ordering::Relaxed) == first.horizon {
            return Ok(());
        }
        while Instant::now() < deadline {
            tokio::time::sleep(SETTLE_STEP).await;
            match changes::sequence(client).await?.waiting {
                Some((lowest, _)) if lowest <= target => {}
                _ => return Ok(()),
            }
        }
        self.outlasted.store(first.horizon, Ordering::Relaxed);
        tracing::debug!(
            horizon = first.horizon,
            "a change waits for an older transaction; the follower pushes it once it ends"
        );
        Ok(())
    }
}

/// The head and the changes after `from` up to it, in one snapshot.
async fn read_since(
    client: &mut deadpool_postgres::Client,
    from: Option<u64>,
    with_aliases: bool,
) -> Result<(Vec<String>, u64, Option<Vec<Change>>), PgError> {
    let tx = client
        .build_transaction()
        .isolation_level(IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .await
        .map_err(PgError::query("starting a change-log read"))?;
    let aliases = match with_aliases {
        true => tx
            .query("SELECT alias FROM links WHERE alias IS NOT NULL", &[])
            .await
            .map_err(PgError::query("reading every alias"))?
            .iter()
            .map(|r| r.get(0))
            .collect(),
        false => Vec::new(),
    };
    let head = changes::head(&tx).await?;
    let rows = match from {
        Some(from) if from <= head => changes::between(&tx, from, head).await?,
        _ => None,
    };
    tx.commit()
        .await
        .map_err(PgError::query("ending a change-log read"))?;
    Ok((aliases, head, rows))
}

#[async_trait]
impl ChangeLog for PgStore {
    fn changes_at_open(&self) -> ChangePosition {
        self.position(self.opened_at)
    }

    async fn changes_since(&self, from: u64) -> StoreResult<(ChangePosition, Option<Vec<Change>>)> {
        let mut client = self.pg().get().await?;
        self.sequence_settled(&mut client).await?;
        let (_, head, rows) = read_since(&mut client, Some(from), false).await?;
        Ok((self.position(head), rows))
    }

    async fn resume(&self, since: Option<ChangePosition>) -> StoreResult<Resume> {
        let mut client = self.pg().get().await?;
        changes::sequence(&mut client).await?;
        let from = since
            .filter(|p| p.store == self.identity().store_id)
            .map(|p| p.seq);
        let (aliases, head, changes) = read_since(&mut client, from, true).await?;
        Ok(Resume {
            aliases,
            changes,
            head: self.position(head),
        })
    }
}

/// The head of the log now (after versioning what is final), for a store
/// being opened.
pub(super) async fn head_at_open(client: &mut deadpool_postgres::Client) -> Result<u64, PgError> {
    changes::sequence(client).await?;
    changes::head(&*client).await
}
