//! Reads on the caller's own thread, for the edge's small bursts of
//! lookups: a reader thread costs each burst two wake-ups (the reader's,
//! then the runtime's for the answer), more than the reads themselves.
//!
//! A few read-only connections wait in a pool. A read takes one, runs in
//! it and puts it back; when none is free, or the read fails in any way
//! (the database busy, an error, a panic), it is not done here and the
//! caller sends it to the reader threads as before, which wait for locks
//! and report errors. These connections never wait for a lock
//! (`busy_timeout` 0), so a caller on the async runtime is held for the
//! reads alone.

use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use rusqlite::Connection;

use super::threads::{open_reader, panic_message};
use crate::app_secret::SecretSeal;
use crate::store::StoreResult;

/// Connections in the pool: one per runtime worker on the machines the
/// daemon is sized for; a caller that finds none free uses the readers.
const CONNECTIONS: usize = 2;

/// The pool.
pub(super) struct InlineReaders {
    /// The free connections; `None` once the store is closed.
    free: Mutex<Option<Vec<Connection>>>,
}

impl InlineReaders {
    /// Opens the pool's connections on the database at `path`.
    pub(super) fn open(path: &Path, seal: &Option<SecretSeal>) -> StoreResult<Self> {
        let mut free = Vec::with_capacity(CONNECTIONS);
        for _ in 0..CONNECTIONS {
            let conn = open_reader(path, seal)?;
            conn.busy_timeout(Duration::ZERO)?;
            free.push(conn);
        }
        Ok(Self {
            free: Mutex::new(Some(free)),
        })
    }

    /// Runs `f` on a free connection of the pool: `None` when none is free
    /// or `f` failed (the caller then reads through the reader threads).
    pub(super) fn try_read<T>(&self, f: impl FnOnce(&Connection) -> StoreResult<T>) -> Option<T> {
        let conn = self.lock().as_mut()?.pop()?;
        let result = std::panic::catch_unwind(AssertUnwindSafe(|| f(&conn)));
        if let Some(free) = self.lock().as_mut() {
            free.push(conn);
        }
        match result {
            Ok(Ok(value)) => Some(value),
            Ok(Err(e)) => {
                tracing::debug!(error = %e, "inline read failed; handing it to the reader threads");
                None
            }
            Err(p) => {
                tracing::error!(panic = %panic_message(&p), "inline read panicked; handing it to the reader threads");
                None
            }
        }
    }

    /// Drops the pool's connections; those in use are dropped when handed
    /// back.
    pub(super) fn close(&self) {
        *self.lock() = None;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Vec<Connection>>> {
        self.free.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use crate::store::sqlite::clicks::tests::add_link;
    use crate::store::sqlite::tests::temp_store;
    use crate::store::{CodeRef, LinkStore, StoreError};

    /// Reads go inline while a connection is free, and fall back (`None`)
    /// when the read fails, panics, finds the pool empty, or the store is
    /// closed; a failed read hands its connection back.
    #[tokio::test]
    async fn reads_inline_until_it_cannot() {
        let (_dir, store) = temp_store();
        add_link(&store, 7, None).await;
        let codes = [
            CodeRef::Id(7),
            CodeRef::Id(8),
            CodeRef::Alias("none".into()),
        ];
        let found = store.find_links_now(&codes).expect("a free connection");
        let ids: Vec<Option<u64>> = found.iter().map(|l| l.as_ref().map(|l| l.id)).collect();
        assert_eq!(ids, [Some(7), None, None]);

        let failed: Option<()> = store.read_now(|_| Err(StoreError::Corrupt("no".into())));
        assert!(failed.is_none());
        let panicked: Option<()> = store.read_now(|_| panic!("in a read"));
        assert!(panicked.is_none());
        // Both connections are back: a read inside a read still finds one,
        // and a third finds none.
        let nested =
            store.read_now(|_| Ok(store.read_now(|_| Ok(store.read_now(|_| Ok(())).is_some()))));
        assert_eq!(nested, Some(Some(false)));
        // A query-only connection: a write is refused, not done.
        let wrote = store.read_now(|c| Ok(c.execute("DELETE FROM links", [])?));
        assert!(wrote.is_none());
        assert!(store.find_links_now(&codes).unwrap()[0].is_some());

        store.close();
        assert!(store.find_links_now(&codes).is_none());
    }
}
