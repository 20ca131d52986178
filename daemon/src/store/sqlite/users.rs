//! The `users` table: accounts with argon2 password hashes, each in a
//! team with a role.

use rusqlite::{params, Connection, OptionalExtension};

use crate::access::Role;
use crate::store::{StoreError, StoreResult, User};

/// Adds a user; a taken name is a [`StoreError::Conflict`], a team that
/// does not exist a [`StoreError::NotFound`].
pub fn insert(
    conn: &Connection,
    name: &str,
    password_hash: &str,
    now: i64,
    team_id: i64,
    role: Role,
) -> StoreResult<i64> {
    super::teams::require(conn, team_id)?;
    conn.execute(
        "INSERT INTO users (name, password_hash, created_at, updated_at, team_id, role) \
         VALUES (?1, ?2, ?3, ?3, ?4, ?5)",
        params![name, password_hash, now, team_id, role.as_str()],
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
        team_id: r.get(5)?,
        role: Role::from_stored(&r.get::<_, String>(6)?),
    })
}

const USER_COLUMNS: &str = "id, name, password_hash, created_at, updated_at, team_id, role";

/// Moves a user to `team_id` with `role`; returns the user as it is now.
pub fn set_membership(
    conn: &Connection,
    name: &str,
    team_id: i64,
    role: Role,
) -> StoreResult<User> {
    super::teams::require(conn, team_id)?;
    let n = conn.execute(
        "UPDATE users SET team_id = ?2, role = ?3 WHERE name = ?1",
        params![name, team_id, role.as_str()],
    )?;
    if n == 0 {
        return Err(StoreError::NotFound(format!("user \"{name}\"")));
    }
    by_name(conn, name)?.ok_or_else(|| StoreError::NotFound(format!("user \"{name}\"")))
}

/// Every user, by name.
pub fn list(conn: &Connection) -> StoreResult<Vec<User>> {
    let mut st = conn.prepare_cached(&format!("SELECT {USER_COLUMNS} FROM users ORDER BY name"))?;
    let rows = st.query_map([], user_row)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Deletes a user and revokes their keys at `now`; [`StoreError::NotFound`]
/// when there is none.
pub fn delete(conn: &Connection, name: &str, now: i64) -> StoreResult<()> {
    conn.execute(
        "UPDATE api_keys SET revoked_at = ?2 WHERE revoked_at IS NULL \
         AND user_id = (SELECT id FROM users WHERE name = ?1)",
        params![name, now],
    )?;
    if conn.execute("DELETE FROM users WHERE name = ?1", [name])? == 0 {
        return Err(StoreError::NotFound(format!("user \"{name}\"")));
    }
    Ok(())
}

/// The user with this name.
pub fn by_name(conn: &Connection, name: &str) -> StoreResult<Option<User>> {
    Ok(conn
        .query_row(
            &format!("SELECT {USER_COLUMNS} FROM users WHERE name = ?1"),
            [name],
            user_row,
        )
        .optional()?)
}
