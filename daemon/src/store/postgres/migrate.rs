//! Versioned schema migrations, run by every daemon at start.
//!
//! Several daemons may start at once against one database: each runs the
//! whole check-and-apply in one transaction that first takes a
//! transaction-level advisory lock ([`LOCK_KEY`]), so one applies the
//! missing versions while the others wait, then find them recorded in
//! `schema_version` and apply nothing. DDL is transactional in PostgreSQL:
//! a failed migration leaves the database at the version before it.

use super::{Pg, PgError};

/// The advisory lock key of the migration ("shortlnk" in ASCII).
pub const LOCK_KEY: i64 = 0x73686f72746c6e6b;

/// Every migration, in order; version n is `MIGRATIONS[n - 1]`.
pub const MIGRATIONS: &[&str] = &[
    include_str!("schema_v1.sql"),
    include_str!("schema_v2.sql"),
    include_str!("schema_v3.sql"),
    include_str!("schema_v4.sql"),
    include_str!("schema_v5.sql"),
    include_str!("schema_v6.sql"),
    include_str!("schema_v7.sql"),
    include_str!("schema_v8.sql"),
    include_str!("schema_v9.sql"),
    include_str!("schema_v10.sql"),
    include_str!("schema_v11.sql"),
    include_str!("schema_v12.sql"),
    include_str!("schema_v13.sql"),
    include_str!("schema_v14.sql"),
    include_str!("schema_v15.sql"),
    include_str!("schema_v16.sql"),
];

/// The newest schema version this build knows.
pub fn newest() -> i32 {
    MIGRATIONS.len() as i32
}

/// Brings the schema up to [`newest`]; returns the versions applied here
/// (empty when another daemon had applied them, or none were missing).
pub async fn run(pg: &Pg) -> Result<Vec<i32>, PgError> {
    // A session of its own, not watched: a migration may run long.
    let mut client = pg.unwatched_session().await?;
    let tx = client
        .transaction()
        .await
        .map_err(PgError::query("starting the migration"))?;
    // Another daemon's migration may hold the lock long, and a migration
    // may rewrite a big table: neither is cut by the sessions' bounds.
    tx.batch_execute("SET LOCAL statement_timeout = 0; SET LOCAL lock_timeout = 0")
        .await
        .map_err(PgError::query("lifting the bounds for the migration"))?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&LOCK_KEY])
        .await
        .map_err(PgError::query("waiting for the migration lock"))?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS schema_version (
             version     integer PRIMARY KEY,
             applied_at  timestamptz NOT NULL DEFAULT now()
         )",
    )
    .await
    .map_err(PgError::query("creating schema_version"))?;
    let found: i32 = tx
        .query_one("SELECT coalesce(max(version), 0) FROM schema_version", &[])
        .await
        .map_err(PgError::query("reading the schema version"))?
        .get(0);
    if found > newest() {
        return Err(PgError::SchemaTooNew {
            found,
            known: newest(),
        });
    }
    let mut applied = Vec::new();
    for version in found + 1..=newest() {
        tx.batch_execute(MIGRATIONS[version as usize - 1])
            .await
            .map_err(PgError::query("applying a schema migration"))?;
        tx.execute(
            "INSERT INTO schema_version (version) VALUES ($1)",
            &[&version],
        )
        .await
        .map_err(PgError::query("recording a schema migration"))?;
        applied.push(version);
    }
    tx.commit()
        .await
        .map_err(PgError::query("committing the migration"))?;
    if !applied.is_empty() {
        tracing::info!(url = %pg.url(), versions = ?applied, "migrated the PostgreSQL schema");
    }
    Ok(applied)
}
