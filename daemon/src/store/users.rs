//! The `users` table: admin UI accounts with argon2 password hashes.

use rusqlite::{params, Connection, OptionalExtension};

use super::{StoreError, StoreResult};

/// An admin UI account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    /// Row id.
    pub id: i64,
    /// Sign-in name, unique.
    pub name: String,
    /// Argon2id PHC string.
    pub password_hash: String,
    /// Unix seconds.
    pub created_at: i64,
    /// Unix seconds of the last password change.
    pub updated_at: i64,
}

/// Adds a user; a taken name is a [`StoreError::Conflict`].
pub fn insert(conn: &Connection, name: &str, password_hash: &str, now: i64) -> StoreResult<i64> {
    conn.execute(
        "INSERT INTO users (name, password_hash, created_at, updated_at) VALUES (?1, ?2, ?3, ?3)",
        params![name, password_hash, now],
    )
    .map_err(|e| match e {
        rusqlite::Error::SqliteFailure(f, _)
            if f.code == rusqlite::ErrorCode::ConstraintViolation =>
        {
            StoreError::Conflict(format!("user name \"{name}\""))
        }
        e => StoreError::from(e),
    })?;
    Ok(conn.last_insert_rowid())
}

/// Replaces a user's password hash.
pub fn set_password(
    conn: &Connection,
    name: &str,
    password_hash: &str,
    now: i64,
) -> StoreResult<()> {
    let n = conn.execute(
        "UPDATE users SET password_hash = ?2, updated_at = ?3 WHERE name = ?1",
        params![name, password_hash, now],
    )?;
    if n == 0 {
        return Err(StoreError::NotFound(format!("user \"{name}\"")));
    }
    Ok(())
}

fn user_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<User> {
    Ok(User {
        id: r.get(0)?,
        name: r.get(1)?,
        password_hash: r.get(2)?,
        created_at: r.get(3)?,
        updated_at: r.get(4)?,
    })
}

/// Every user, by name.
pub fn list(conn: &Connection) -> StoreResult<Vec<User>> {
    let mut st = conn.prepare_cached(
        "SELECT id, name, password_hash, created_at, updated_at FROM users ORDER BY name",
    )?;
    let rows = st.query_map([], user_row)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Deletes a user; [`StoreError::NotFound`] when there is none.
pub fn delete(conn: &Connection, name: &str) -> StoreResult<()> {
    if conn.execute("DELETE FROM users WHERE name = ?1", [name])? == 0 {
        return Err(StoreError::NotFound(format!("user \"{name}\"")));
    }
    Ok(())
}

/// The user with this name.
pub fn by_name(conn: &Connection, name: &str) -> StoreResult<Option<User>> {
    Ok(conn
        .query_row(
            "SELECT id, name, password_hash, created_at, updated_at FROM users WHERE name = ?1",
            [name],
            user_row,
        )
        .optional()?)
}
