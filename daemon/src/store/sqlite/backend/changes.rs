//! [`ChangeLog`] over SQLite: the log is table `edge_changes`, appended to
//! by the link writes in their own transactions.

use async_trait::async_trait;
use shortlink_core::ipc::ChangePosition;

use crate::store::sqlite::snapshot::ReadSnapshot;
use crate::store::sqlite::{changes, links as table, SqliteStore};
use crate::store::{Change, ChangeLog, Resume, StoreResult};

#[async_trait]
impl ChangeLog for SqliteStore {
    fn changes_at_open(&self) -> ChangePosition {
        SqliteStore::changes_at_open(self)
    }

    async fn changes_since(&self, from: u64) -> StoreResult<(ChangePosition, Option<Vec<Change>>)> {
        self.read(move |c| {
            let head = changes::head(c)?;
            Ok((head, changes::between(c, from, head.seq)?))
        })
        .await
    }

    async fn resume(&self, since: Option<ChangePosition>) -> StoreResult<Resume> {
        self.read(move |c| {
            let _snapshot = ReadSnapshot::begin(c)?;
            let aliases = table::all_aliases(c)?;
            let head = changes::head(c)?;
            let changes = changes::since(c, since, head)?;
            Ok(Resume {
                aliases,
                changes,
                head,
            })
        })
        .await
    }
}
