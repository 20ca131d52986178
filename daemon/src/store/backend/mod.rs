//! The SQLite implementation of the store interface (`crate::db`): each
//! method sends one job to the writer or a reader thread, built from the
//! SQL helpers of the files beside it.

mod ids;
