//! Storage: SQLite ([`sqlite`]) and PostgreSQL ([`postgres`]).

pub mod postgres;
pub mod sqlite;
