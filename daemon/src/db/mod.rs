//! The store interface: every operation the daemon asks of its database,
//! named by what it does, with plain Rust types in and out. SQLite
//! (`crate::store`) is one implementation; callers never see which.

mod ids;

pub use ids::IdStore;
