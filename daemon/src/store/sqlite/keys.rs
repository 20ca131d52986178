//! The `api_keys`, `apps`, `seen_signatures` and `credential_use` tables.
//!
//! App secrets are sealed in the statements that write them and opened in
//! those that read them, by two SQL functions every store connection has
//! ([`register_secret_functions`]): `seal_app_secret(app_id, secret)` and
//! `open_app_secret(app_id, stored)`. The database keeps only sealed
//! secrets; callers see clear ones.

use rusqlite::functions::{Context, FunctionFlags};
use rusqlite::{params, Connection, OptionalExtension, Row};

use crate::access::Role;
use crate::app_secret::SecretSeal;
use crate::store::{ApiKey, App, Owner, StoreError, StoreResult};

/// Why the seal functions fail on a store opened without the key.
const NO_SEAL: &str =
    "app secrets are sealed with the deployment key, and this store was opened without it";

fn text_arg(ctx: &Context<'_>, i: usize) -> rusqlite::Result<String> {
    ctx.get::<String>(i)
}

fn user_error(message: String) -> rusqlite::Error {
    rusqlite::Error::UserFunctionError(message.into())
}

/// Gives `conn` the SQL functions that seal and open app secrets with
/// `seal` (without one they fail, saying so, when an app secret is touched).
pub(crate) fn register_secret_functions(
    conn: &Connection,
    seal: Option<SecretSeal>,
) -> rusqlite::Result<()> {
    let opener = seal.clone();
    conn.create_scalar_function(
        "seal_app_secret",
        2,
        FunctionFlags::SQLITE_UTF8,
        move |ctx| {
            let seal = seal.as_ref().ok_or_else(|| user_error(NO_SEAL.into()))?;
            Ok(seal.seal(&text_arg(ctx, 0)?, &text_arg(ctx, 1)?))
        },
    )?;
    conn.create_scalar_function(
        "open_app_secret",
        2,
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC,
        move |ctx| {
            let seal = opener.as_ref().ok_or_else(|| user_error(NO_SEAL.into()))?;
            seal.open(&text_arg(ctx, 0)?, &text_arg(ctx, 1)?)
                .map_err(|e| user_error(e.to_string()))
        },
    )
}

fn key_row(r: &Row<'_>) -> rusqlite::Result<ApiKey> {
    Ok(ApiKey {
        id: r.get(0)?,
        name: r.get(1)?,
        prefix: r.get(2)?,
        hash: r.get(3)?,
        scopes: r.get(4)?,
        created_at: r.get(5)?,
        revoked_at: r.get(6)?,
        expires_at: r.get(7)?,
        user_id: r.get(8)?,
        team_id: r.get(9)?,
        role: Role::from_stored(&r.get::<_, String>(10)?),
    })
}

/// A key with its user's current team and role; a key whose user is gone
/// reads as revoked (deleting a user revokes their keys too).
const KEY_COLUMNS: &str = "k.id, k.name, k.prefix, k.hash, k.scopes, k.created_at, \
     CASE WHEN k.user_id IS NOT NULL AND u.id IS NULL THEN coalesce(k.revoked_at, 0) \
     ELSE k.revoked_at END, k.expires_at, k.user_id, coalesce(u.team_id, k.team_id), \
     CASE WHEN k.user_id IS NULL THEN k.role ELSE coalesce(u.role, 'viewer') END \
     FROM api_keys k LEFT JOIN users u ON u.id = k.user_id";

/// Stores a new key; returns its id.
#[allow(clippy::too_many_arguments)]
pub fn insert_key(
    conn: &Connection,
    name: &str,
    prefix: &str,
    hash: &[u8],
    scopes: &str,
    now: i64,
    expires_at: Option<i64>,
    owner: Owner,
) -> StoreResult<i64> {
    conn.execute(
        "INSERT INTO api_keys (name, prefix, hash, scopes, created_at, expires_at, user_id, \
         team_id, role) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        params![
            name,
            prefix,
            hash,
            scopes,
            now,
            expires_at,
            owner.user_id,
            owner.team_id,
            owner.role.as_str()
        ],
    )?;
    Ok(conn.last_insert_rowid())
}

/// The key whose secret starts with `prefix`.
pub fn key_by_prefix(conn: &Connection, prefix: &str) -> StoreResult<Option<ApiKey>> {
    let sql = format!("SELECT {KEY_COLUMNS} WHERE k.prefix = ?1");
    Ok(conn
        .prepare_cached(&sql)?
        .query_row([prefix], key_row)
        .optional()?)
}

/// All keys, oldest first.
pub fn list_keys(conn: &Connection) -> StoreResult<Vec<ApiKey>> {
    let sql = format!("SELECT {KEY_COLUMNS} ORDER BY k.id");
    let mut st = conn.prepare(&sql)?;
    let rows = st.query_map([], key_row)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Marks a key revoked; returns it (with its prefix, to drop it from caches).
pub fn revoke_key(conn: &Connection, id: i64, now: i64) -> StoreResult<ApiKey> {
    conn.execute(
        "UPDATE api_keys SET revoked_at = ?2 WHERE id = ?1 AND revoked_at IS NULL",
        params![id, now],
    )?;
    let sql = format!("SELECT {KEY_COLUMNS} WHERE k.id = ?1");
    conn.query_row(&sql, [id], key_row)
        .optional()?
        .ok_or_else(|| StoreError::NotFound(format!("API key {id}")))
}

fn app_row(r: &Row<'_>) -> rusqlite::Result<App> {
    Ok(App {
        id: r.get(0)?,
        app_id: r.get(1)?,
        name: r.get(2)?,
        secret: r.get(3)?,
        scopes: r.get(4)?,
        created_at: r.get(5)?,
        revoked_at: r.get(6)?,
        team_id: r.get(7)?,
        role: Role::from_stored(&r.get::<_, String>(8)?),
    })
}

const APP_COLUMNS: &str = "id, app_id, name, open_app_secret(app_id, secret), scopes, \
     created_at, revoked_at, team_id, role";
/// The same without the secret (left empty): listing and revoking have no
/// use for it, and a secret that does not open must not keep an app from
/// being listed or revoked.
const LISTED_APP_COLUMNS: &str =
    "id, app_id, name, '', scopes, created_at, revoked_at, team_id, role";

/// Stores a new app; `secret` in clear, sealed on its way in.
pub fn insert_app(
    conn: &Connection,
    app_id: &str,
    name: &str,
    secret: &str,
    scopes: &str,
    now: i64,
    owner: Owner,
) -> StoreResult<i64> {
    conn.execute(
        "INSERT INTO apps (app_id, name, secret, scopes, created_at, team_id, role) \
         VALUES (?1, ?2, seal_app_secret(?1, ?3), ?4, ?5, ?6, ?7)",
        params![
            app_id,
            name,
            secret,
            scopes,
            now,
            owner.team_id,
            owner.role.as_str()
        ],
    )?;
    Ok(conn.last_insert_rowid())
}

/// The app with this public id.
pub fn app_by_app_id(conn: &Connection, app_id: &str) -> StoreResult<Option<App>> {
    let sql = format!("SELECT {APP_COLUMNS} FROM apps WHERE app_id = ?1");
    Ok(conn
        .prepare_cached(&sql)?
        .query_row([app_id], app_row)
        .optional()?)
}

/// All apps, oldest first.
pub fn list_apps(conn: &Connection) -> StoreResult<Vec<App>> {
    let sql = format!("SELECT {LISTED_APP_COLUMNS} FROM apps ORDER BY id");
    let mut st = conn.prepare(&sql)?;
    let rows = st.query_map([], app_row)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Marks an app revoked (by numeric id or public app id).
pub fn revoke_app(conn: &Connection, which: &str, now: i64) -> StoreResult<App> {
    conn.execute(
        "UPDATE apps SET revoked_at = ?2 WHERE (app_id = ?1 OR CAST(id AS TEXT) = ?1) \
         AND revoked_at IS NULL",
        params![which, now],
    )?;
    let sql =
        format!("SELECT {LISTED_APP_COLUMNS} FROM apps WHERE app_id = ?1 OR CAST(id AS TEXT) = ?1");
    conn.query_row(&sql, [which], app_row)
        .optional()?
        .ok_or_else(|| StoreError::NotFound(format!("app \"{which}\"")))
}

/// Records a used signature; false when it was already recorded (a replay).
pub fn record_signature(conn: &Connection, signature: &str, ts: i64) -> StoreResult<bool> {
    let n = conn
        .prepare_cached("INSERT OR IGNORE INTO seen_signatures (signature, ts) VALUES (?1, ?2)")?
        .execute(params![signature, ts])?;
    Ok(n == 1)
}

/// Signatures recorded with a timestamp at or after `since`.
pub fn recent_signatures(conn: &Connection, since: i64) -> StoreResult<Vec<(String, i64)>> {
    let mut st = conn.prepare("SELECT signature, ts FROM seen_signatures WHERE ts >= ?1")?;
    let rows = st.query_map([since], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Forgets signatures whose timestamps are too old to be accepted anyway.
pub fn prune_signatures(conn: &Connection, before: i64) -> StoreResult<usize> {
    Ok(conn.execute("DELETE FROM seen_signatures WHERE ts < ?1", [before])?)
}

/// Notes that a credential (`kind` `key` by prefix, `app` by app id) was
/// used at `at`; an older time never replaces a newer one.
pub fn record_use(conn: &Connection, kind: &str, ident: &str, at: i64) -> StoreResult<()> {
    conn.prepare_cached(
        "INSERT INTO credential_use (kind, ident, last_used_at) VALUES (?1, ?2, ?3) \
         ON CONFLICT (kind, ident) DO UPDATE SET last_used_at = max(last_used_at, excluded.last_used_at)",
    )?
    .execute(params![kind, ident, at])?;
    Ok(())
}

/// The last use of every credential ever used, as `(kind, ident, at)`.
pub fn last_uses(conn: &Connection) -> StoreResult<Vec<(String, String, i64)>> {
    let mut st = conn.prepare("SELECT kind, ident, last_used_at FROM credential_use")?;
    let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

#[cfg(test)]
mod tests {
    use rusqlite_migration::{Migrations, M};

    use super::*;
    use crate::store::sqlite::SqliteStore;

    /// A database at schema v2 whose `credential_use` table the admin UI
    /// made on the fly, as daemons before v3 left it.
    fn v2_with_lazy_table(path: &std::path::Path) {
        let mut conn = Connection::open(path).unwrap();
        Migrations::new(vec![
            M::up(include_str!("schema_v1.sql")),
            M::up(include_str!("schema_v2.sql")),
        ])
        .to_latest(&mut conn)
        .unwrap();
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS credential_use (\
             kind TEXT NOT NULL, ident TEXT NOT NULL, last_used_at INTEGER NOT NULL, \
             PRIMARY KEY (kind, ident)) WITHOUT ROWID;\
             INSERT INTO credential_use VALUES ('key', '0123456789ab', 100);",
        )
        .unwrap();
    }

    #[tokio::test]
    async fn credential_use_survives_the_v3_migration_and_keeps_the_latest() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shortlink.db");
        v2_with_lazy_table(&path);
        let store = SqliteStore::open(&path, 1, 16).unwrap();
        store
            .write(|c| {
                record_use(c, "key", "0123456789ab", 50)?;
                record_use(c, "app", "app_1", 200)?;
                record_use(c, "app", "app_1", 300)
            })
            .await
            .unwrap();
        let mut uses = store.read(last_uses).await.unwrap();
        uses.sort();
        assert_eq!(
            uses,
            vec![
                ("app".into(), "app_1".into(), 300),
                ("key".into(), "0123456789ab".into(), 100),
            ]
        );
        store.close();

        // A new database gets the table from the migration alone.
        let fresh = SqliteStore::open(&dir.path().join("fresh.db"), 1, 16).unwrap();
        assert_eq!(fresh.read(last_uses).await.unwrap(), vec![]);
        fresh.close();
    }

    /// A database at schema v4 with an app whose secret is kept in clear,
    /// as daemons before v5 kept them, and `more` such apps.
    fn v4_with_clear_apps(path: &std::path::Path, secret: &str, more: &[String]) {
        let mut conn = Connection::open(path).unwrap();
        Migrations::new(vec![
            M::up(include_str!("schema_v1.sql")),
            M::up(include_str!("schema_v2.sql")),
            M::up(include_str!("schema_v3.sql")),
            M::up(include_str!("schema_v4.sql")),
        ])
        .to_latest(&mut conn)
        .unwrap();
        conn.execute(
            "INSERT INTO apps (app_id, name, secret, scopes, created_at) \
             VALUES ('app_old', 'old', ?1, 'links:read', 1)",
            [secret],
        )
        .unwrap();
        for (i, s) in more.iter().enumerate() {
            conn.execute(
                "INSERT INTO apps (app_id, name, secret, scopes, created_at) \
                 VALUES (?1, 'more', ?2, 'links:read', 1)",
                params![format!("app_{i}"), s],
            )
            .unwrap();
        }
    }

    #[tokio::test]
    async fn the_v5_migration_seals_clear_secrets_which_still_verify() {
        use crate::app_secret::{AppSecret, SecretSeal, SEALED_PREFIX};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shortlink.db");
        let secret = AppSecret::generate();
        let more: Vec<String> = (0..40)
            .map(|_| AppSecret::generate().reveal().to_string())
            .collect();
        v4_with_clear_apps(&path, secret.reveal(), &more);

        // Without the key the clear secret cannot be sealed: said, not done.
        let e = SqliteStore::open(&path, 1, 16).unwrap_err().to_string();
        assert!(e.contains("opened without"), "{e}");

        let key = shortlink_core::DeploymentKey::generate().unwrap();
        let store = SqliteStore::open_sealed(&path, 1, 16, Some(SecretSeal::new(&key))).unwrap();
        let app = store
            .read(|c| app_by_app_id(c, "app_old"))
            .await
            .unwrap()
            .unwrap();
        let opened = AppSecret::from_stored(&app.secret);
        assert_eq!(opened, secret);
        let sig = secret.sign("message");
        assert!(opened.verifies("message", &hex::decode(sig).unwrap()));
        // New apps go in sealed too.
        let fresh = AppSecret::generate();
        let s = fresh.to_stored();
        store
            .write(move |c| {
                insert_app(
                    c,
                    "app_new",
                    "new",
                    &s,
                    "links:read",
                    2,
                    Owner::of_team(1, Role::Viewer),
                )
            })
            .await
            .unwrap();
        let opened = store.read(|c| app_by_app_id(c, "app_new")).await.unwrap();
        assert_eq!(opened.unwrap().secret, fresh.reveal());
        store.close();

        let raw = Connection::open(&path).unwrap();
        let mut st = raw.prepare("SELECT secret FROM apps ORDER BY id").unwrap();
        let stored: Vec<String> = st
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(stored.len(), 2 + more.len());
        assert!(
            stored.iter().all(|s| s.starts_with(SEALED_PREFIX)),
            "{stored:?}"
        );
        drop(st);
        drop(raw);
        for file in std::fs::read_dir(dir.path()).unwrap() {
            let bytes = std::fs::read(file.unwrap().path()).unwrap();
            let all = more.iter().map(String::as_str);
            for clear in all.chain([secret.reveal(), fresh.reveal()]) {
                assert!(
                    !bytes.windows(clear.len()).any(|w| w == clear.as_bytes()),
                    "a secret in clear in the database files"
                );
            }
        }

        // Under another key nothing opens, and the error says why.
        let other = shortlink_core::DeploymentKey::generate().unwrap();
        let store = SqliteStore::open_sealed(&path, 1, 16, Some(SecretSeal::new(&other))).unwrap();
        let e = store
            .read(|c| app_by_app_id(c, "app_old"))
            .await
            .unwrap_err()
            .to_string();
        assert!(e.contains("does not open with this deployment key"), "{e}");
        // Listing and revoking need no secret.
        assert_eq!(store.read(list_apps).await.unwrap().len(), 2 + more.len());
        let revoked = store.write(|c| revoke_app(c, "app_old", 3)).await.unwrap();
        assert_eq!(revoked.revoked_at, Some(3));
        store.close();
    }
}
