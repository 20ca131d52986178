//! The storage layer's error type.

/// Why a storage operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite reported an error.
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// The schema could not be brought up to date.
    #[error("database migration failed: {0}")]
    Migration(#[from] rusqlite_migration::Error),
    /// The transaction a write was grouped into failed to commit.
    #[error("database commit failed: {0}")]
    Commit(String),
    /// A unique name (alias, user name) is already taken.
    #[error("{0} is already taken")]
    Conflict(String),
    /// The row does not exist.
    #[error("{0} not found")]
    NotFound(String),
    /// The store was closed (daemon shutting down).
    #[error("the database is closed")]
    Closed,
    /// A stored value could not be decoded.
    #[error("corrupt stored value: {0}")]
    Corrupt(String),
    /// A job panicked on a database thread.
    #[error("internal error on the database thread: {0}")]
    Panic(String),
}

/// Result alias for this layer.
pub type StoreResult<T> = Result<T, StoreError>;
