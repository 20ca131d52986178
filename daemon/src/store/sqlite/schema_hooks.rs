//! Migrations that SQL text alone cannot do: they run as hooks of their
//! version, inside the same transaction (see `super::migrations`).

use rusqlite::Transaction;
use rusqlite_migration::{HookError, HookResult};

/// The `links.check_mode` constraint as v15 wrote it.
const CHECK_MODE_IN: &str = "CHECK (check_mode IN ('off', 'report', 'fallback'))";
/// The same rule without `IN` (schema_v21.sql says why).
const CHECK_MODE_EQ: &str =
    "CHECK (check_mode = 'off' OR check_mode = 'report' OR check_mode = 'fallback')";

/// v21: rewrites the stored `CREATE TABLE links` with [`CHECK_MODE_EQ`] in
/// place of [`CHECK_MODE_IN`] (SQLite's procedure for changing a CHECK:
/// `writable_schema`, the new SQL, `schema_version` one up so that every
/// connection, this one included, parses the schema again).
pub(super) fn v21_check_mode_without_in(tx: &Transaction) -> HookResult {
    let sql: String = tx.query_row(
        "SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = 'links'",
        [],
        |r| r.get(0),
    )?;
    match (
        sql.matches(CHECK_MODE_IN).count(),
        sql.contains(CHECK_MODE_EQ),
    ) {
        (1, false) => {}
        // Rewritten already (a copy whose version number was set back).
        (0, true) => return Ok(()),
        _ => {
            return Err(HookError::Hook(format!(
                "migration 21: the stored definition of table links does not hold \
                 `{CHECK_MODE_IN}` exactly once; was the schema changed by hand?"
            )))
        }
    }
    let version: i64 = tx.pragma_query_value(None, "schema_version", |r| r.get(0))?;
    tx.pragma_update(None, "writable_schema", true)?;
    let rewritten = tx.execute(
        "UPDATE sqlite_schema SET sql = ?1 WHERE type = 'table' AND name = 'links'",
        [sql.replace(CHECK_MODE_IN, CHECK_MODE_EQ)],
    );
    // Off again before any error is returned.
    tx.pragma_update(None, "writable_schema", false)?;
    rewritten?;
    tx.pragma_update(None, "schema_version", version + 1)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use rusqlite::Connection;

    use super::*;
    use crate::store::sqlite::{migrations_to, SqliteStore};

    /// Opcodes of `INSERT INTO links` on `conn` (every CHECK of the table is
    /// coded whichever columns the statement names).
    fn insert_opcodes(conn: &Connection) -> Vec<String> {
        let mut st = conn
            .prepare(
                "EXPLAIN INSERT INTO links (id, url, created_at, updated_at, check_mode) \
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )
            .unwrap();
        let ops = st
            .query_map([rusqlite::types::Null; 5], |r| r.get::<_, String>(1))
            .unwrap();
        ops.collect::<Result<_, _>>().unwrap()
    }

    fn insert(conn: &Connection, id: i64, mode: Option<&str>) -> rusqlite::Result<usize> {
        conn.execute(
            "INSERT INTO links (id, url, created_at, updated_at, check_mode) \
             VALUES (?1, 'https://e.com/', 1, 1, ?2)",
            rusqlite::params![id, mode],
        )
    }

    /// The rule of v15 holds on `conn`: NULL and the three modes go in,
    /// anything else is refused by the CHECK.
    fn assert_rule(conn: &Connection, first_id: i64) {
        for (i, mode) in [None, Some("off"), Some("report"), Some("fallback")]
            .iter()
            .enumerate()
        {
            insert(conn, first_id + i as i64, *mode).unwrap();
        }
        for bad in ["", "OFF", "fallback ", "on"] {
            let e = insert(conn, first_id + 10, Some(bad)).unwrap_err();
            assert!(
                e.to_string().contains("CHECK constraint failed"),
                "{bad:?}: {e}"
            );
        }
    }

    #[tokio::test]
    async fn a_database_of_v20_keeps_its_links_and_the_check_mode_rule_without_an_ephemeral_table()
    {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v20.db");
        {
            let mut conn = Connection::open(&path).unwrap();
            crate::store::sqlite::keys::register_secret_functions(&conn, None).unwrap();
            migrations_to(20).to_latest(&mut conn).unwrap();
            assert!(insert_opcodes(&conn).iter().any(|op| op == "OpenEphemeral"));
            insert(&conn, 1, Some("report")).unwrap();
            insert(&conn, 2, None).unwrap();
        }
        let store = SqliteStore::open(&path, 1, 10).unwrap();
        // The writer ran the migration: its own parsed schema must be the
        // new one too, not only connections opened after it.
        let (ops, kept, integrity) = store
            .write(|c| {
                let ops = insert_opcodes(c);
                let kept: Vec<(i64, Option<String>)> = c
                    .prepare("SELECT id, check_mode FROM links ORDER BY id")?
                    .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect::<Result<_, _>>()?;
                let integrity: String = c.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
                assert_rule(c, 100);
                Ok((ops, kept, integrity))
            })
            .await
            .unwrap();
        assert!(!ops.iter().any(|op| op == "OpenEphemeral"), "{ops:?}");
        assert_eq!(kept, vec![(1, Some("report".into())), (2, None)]);
        assert_eq!(integrity, "ok");
        let read_ops = store.read(|c| Ok(insert_opcodes(c))).await.unwrap();
        assert!(!read_ops.iter().any(|op| op == "OpenEphemeral"));
        store.close();
        // Opened again (v21 already): nothing to migrate, same rule.
        let store = SqliteStore::open(&path, 1, 10).unwrap();
        store
            .write(|c| {
                assert_rule(c, 200);
                Ok(())
            })
            .await
            .unwrap();
    }

    #[test]
    fn a_links_table_changed_by_hand_stops_the_migration_with_its_reason() {
        let mut conn = Connection::open_in_memory().unwrap();
        crate::store::sqlite::keys::register_secret_functions(&conn, None).unwrap();
        migrations_to(20).to_latest(&mut conn).unwrap();
        conn.execute_batch("ALTER TABLE links ADD COLUMN extra TEXT CHECK (extra IN ('off', 'report', 'fallback'))")
            .unwrap();
        let tx = conn.transaction().unwrap();
        // Its own column's CHECK differs by name, so the count is one; a
        // second copy of v15's text is what a hand edit would leave.
        tx.execute_batch(
            "ALTER TABLE links ADD COLUMN again TEXT CHECK (check_mode IN ('off', 'report', 'fallback'))",
        )
        .unwrap();
        let e = v21_check_mode_without_in(&tx).unwrap_err();
        assert!(format!("{e:?}").contains("exactly once"), "{e:?}");
    }
}
