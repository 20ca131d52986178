//! `by_dedupe_hash` goes through the index of the hashes' first 8 bytes
//! and still tells apart hashes that share them.

use rusqlite::Connection;

use super::{by_dedupe_hash, insert};
use crate::store::sqlite::tests::temp_store;
use crate::store::sqlite::SqliteStore;
use crate::store::Link;

fn link(id: u64) -> Link {
    Link {
        id,
        url: format!("https://e.com/{id}"),
        ..Link::default()
    }
}

/// A hash starting with the 8 bytes of `prefix`, then `rest`.
fn hash(prefix: u8, rest: u8) -> [u8; 32] {
    let mut h = [rest; 32];
    h[..8].fill(prefix);
    h
}

fn found(c: &Connection, h: [u8; 32]) -> Option<u64> {
    by_dedupe_hash(c, &h, 0).unwrap().map(|l| l.id)
}

#[tokio::test]
async fn hashes_sharing_the_indexed_prefix_are_told_apart() {
    let (_dir, store) = temp_store();
    store
        .write(|c| {
            insert(c, &link(1), Some(&hash(7, 1)))?;
            insert(c, &link(2), Some(&hash(7, 2)))?;
            insert(c, &link(3), None)?;
            Ok(())
        })
        .await
        .unwrap();
    store
        .read(|c| {
            assert_eq!(found(c, hash(7, 1)), Some(1));
            assert_eq!(found(c, hash(7, 2)), Some(2));
            assert_eq!(found(c, hash(7, 3)), None, "same first 8 bytes, other hash");
            assert_eq!(found(c, hash(8, 1)), None);
            Ok(())
        })
        .await
        .unwrap();
}

#[tokio::test]
async fn the_lookup_uses_the_short_key_index() {
    let (_dir, store) = temp_store();
    let plan = store
        .read(|c| {
            let sql = "EXPLAIN QUERY PLAN SELECT id FROM links \
                       WHERE substr(dedupe_hash, 1, 8) = substr(?1, 1, 8) AND dedupe_hash = ?1 \
                       AND disabled = 0 ORDER BY id LIMIT 1";
            let mut st = c.prepare(sql)?;
            let rows = st.query_map([vec![1u8; 32]], |r| r.get::<_, String>(3))?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?.join("; "))
        })
        .await
        .unwrap();
    assert!(plan.contains("USING INDEX links_dedupe8"), "{plan}");
}

/// A database of v19 (the 32-byte index) moves to the short key and its
/// links are still found.
#[tokio::test]
async fn links_from_before_the_short_key_are_found_after_the_migration() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v19.db");
    {
        // A database made by version 19's migrations, as that daemon left it.
        let mut c = Connection::open(&path).unwrap();
        crate::store::sqlite::keys::register_secret_functions(&c, None).unwrap();
        crate::store::sqlite::migrations_to(19)
            .to_latest(&mut c)
            .unwrap();
        // With v19's columns (today's insert names newer ones).
        c.execute(
            "INSERT INTO links (id, url, created_at, updated_at, dedupe_hash) \
             VALUES (1, 'https://e.com/1', 0, 0, ?1)",
            [hash(5, 6).to_vec()],
        )
        .unwrap();
        let index: String = c
            .query_row(
                "SELECT group_concat(name) FROM sqlite_master \
                 WHERE type = 'index' AND name LIKE 'links_dedupe%'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(index, "links_dedupe", "the 32-byte index of v19");
    }
    let store = SqliteStore::open(&path, 1, 10).unwrap();
    let (index, id) = store
        .read(|c| {
            let index: String = c.query_row(
                "SELECT group_concat(name) FROM sqlite_master \
                 WHERE type = 'index' AND name LIKE 'links_dedupe%'",
                [],
                |r| r.get(0),
            )?;
            Ok((index, found(c, hash(5, 6))))
        })
        .await
        .unwrap();
    assert_eq!(index, "links_dedupe8");
    assert_eq!(id, Some(1));
}
