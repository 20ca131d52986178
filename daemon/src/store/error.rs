//! The storage layer's error type.

/// Why a storage operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database engine reported an error (SQLite's, or another
    /// implementation's; callers do not look inside).
    #[error("database error: {0}")]
    Database(#[source] BoxedError),
    /// The schema could not be brought up to date.
    #[error("database migration failed: {0}")]
    Migration(#[source] BoxedError),
    /// The transaction a write was grouped into failed to commit.
    #[error("database commit failed: {0}")]
    Commit(String),
    /// A unique name (alias, user name) is already taken.
    #[error("{0} is already taken")]
    Conflict(String),
    /// The row is still referred to (a team with members or links).
    #[error("{0}")]
    InUse(String),
    /// The row does not exist.
    #[error("{0} not found")]
    NotFound(String),
    /// The database cannot be reached now (PostgreSQL down or restarting,
    /// the network to it cut); the same request may succeed later.
    #[error("the database cannot be reached: {0}")]
    Unavailable(String),
    /// The store was closed (daemon shutting down).
    #[error("the database is closed")]
    Closed,
    /// A stored value could not be decoded.
    #[error("corrupt stored value: {0}")]
    Corrupt(String),
    /// Every id the settings allow is handed out (`max_length`): nothing
    /// more can be created until they are raised.
    #[error("{0}")]
    Exhausted(String),
    /// A job panicked on a database thread.
    #[error("internal error on the database thread: {0}")]
    Panic(String),
}

impl StoreError {
    /// Logs a failed operation `what`: at error level, unless the database
    /// is unreachable, which the store logs once for the whole outage
    /// (`postgres::reach`), so each failure in it is a debug line.
    pub fn log(&self, what: &str) {
        if matches!(self, Self::Unavailable(_)) {
            tracing::debug!(error = %self, "{what}");
        } else {
            tracing::error!(error = %self, "{what}");
        }
    }
}

/// An engine's own error, kept whole for logs and for the engine's code.
pub type BoxedError = Box<dyn std::error::Error + Send + Sync>;

/// Result alias for this layer.
pub type StoreResult<T> = Result<T, StoreError>;
