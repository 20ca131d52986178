//! The `teams` table: who links, users, keys and apps belong to.

use rusqlite::{params, Connection, OptionalExtension};

use crate::store::{StoreError, StoreResult, Team};

fn team_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Team> {
    Ok(Team {
        id: r.get(0)?,
        name: r.get(1)?,
        created_at: r.get(2)?,
    })
}

/// Adds a team; a taken name is a [`StoreError::Conflict`].
pub fn insert(conn: &Connection, name: &str, now: i64) -> StoreResult<Team> {
    conn.execute(
        "INSERT INTO teams (name, created_at) VALUES (?1, ?2)",
        params![name, now],
    )
    .map_err(|e| match e {
        rusqlite::Error::SqliteFailure(f, _)
            if f.code == rusqlite::ErrorCode::ConstraintViolation =>
        {
            StoreError::Conflict(format!("team name \"{name}\""))
        }
        e => StoreError::from(e),
    })?;
    Ok(Team {
        id: conn.last_insert_rowid(),
        name: name.to_string(),
        created_at: now,
    })
}

/// Every team, by id.
pub fn list(conn: &Connection) -> StoreResult<Vec<Team>> {
    let mut st = conn.prepare_cached("SELECT id, name, created_at FROM teams ORDER BY id")?;
    let rows = st.query_map([], team_row)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The team of this name.
pub fn by_name(conn: &Connection, name: &str) -> StoreResult<Option<Team>> {
    Ok(conn
        .query_row(
            "SELECT id, name, created_at FROM teams WHERE name = ?1",
            [name],
            team_row,
        )
        .optional()?)
}

/// [`StoreError::NotFound`] unless team `id` exists.
pub fn require(conn: &Connection, id: i64) -> StoreResult<()> {
    let found: Option<i64> = conn
        .query_row("SELECT id FROM teams WHERE id = ?1", [id], |r| r.get(0))
        .optional()?;
    found
        .map(|_| ())
        .ok_or_else(|| StoreError::NotFound(format!("team {id}")))
}

/// Deletes team `id`; refused ([`StoreError::InUse`]) while a link, a
/// user, a live key or app, or a webhook is still in it, so nothing is left without a
/// team.
pub fn delete(conn: &Connection, id: i64) -> StoreResult<()> {
    require(conn, id)?;
    let in_use: i64 = conn.query_row(
        "SELECT (SELECT count(*) FROM links WHERE team_id = ?1) \
         + (SELECT count(*) FROM users WHERE team_id = ?1) \
         + (SELECT count(*) FROM api_keys WHERE team_id = ?1 AND user_id IS NULL \
            AND revoked_at IS NULL) \
         + (SELECT count(*) FROM apps WHERE team_id = ?1 AND revoked_at IS NULL) \
         + (SELECT count(*) FROM webhooks WHERE team_id = ?1)",
        [id],
        |r| r.get(0),
    )?;
    if in_use > 0 {
        return Err(StoreError::InUse(format!(
            "team {id} still has {in_use} links, users, keys, apps or webhooks; move or delete them first"
        )));
    }
    conn.execute("DELETE FROM teams WHERE id = ?1", [id])?;
    Ok(())
}
