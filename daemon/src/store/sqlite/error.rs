//! SQLite's errors as the store's ([`StoreError`]).

use crate::store::StoreError;

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        Self::Database(Box::new(e))
    }
}

impl From<rusqlite_migration::Error> for StoreError {
    fn from(e: rusqlite_migration::Error) -> Self {
        Self::Migration(Box::new(e))
    }
}
