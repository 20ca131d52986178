//! The `links` table.

use rusqlite::{params, Connection, OptionalExtension, Row, Statement};
use shortlink_core::check_mode::CheckMode;
use shortlink_core::ipc::DeviceTargets;

use super::changes;
use crate::store::links::{
    country_targets_from_stored, country_targets_to_stored, variants_from_stored,
    variants_to_stored,
};
use crate::store::{Link, StoreError, StoreResult};

/// [`Link::state`] as an SQL expression (a literal, so queries can
/// `concat!` it): disabled, then expired at `:now`, then exhausted.
macro_rules! state_sql {
    () => {
        "CASE WHEN taken_down THEN 'taken_down' WHEN disabled THEN 'disabled' \
         WHEN expires_at IS NOT NULL AND expires_at <= :now THEN 'expired' \
         WHEN max_visits IS NOT NULL AND clicks - bot_clicks >= max_visits THEN 'exhausted' \
         ELSE 'active' END"
    };
}

#[cfg(test)]
mod dedupe_tests;
mod list;
pub use list::{count_matching, list};

/// The columns [`from_row`] reads, as a literal so queries are `concat!`ed
/// at compile time (no `format!` per lookup).
macro_rules! columns {
    () => {
        "id, alias, url, created_at, updated_at, expires_at, renew_ttl, max_visits, \
         redirect, target_desktop, target_mobile, target_ios, target_android, disabled, tags, \
         created_by, clicks, bot_clicks, forward_query, country_targets, password_hash, \
         variants, team_id, broken, check_mode, taken_down, title"
    };
}
const COLUMNS: &str = columns!();

fn from_row(row: &Row<'_>) -> rusqlite::Result<Link> {
    let tags = row.get_ref(14)?.as_str().map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(14, rusqlite::types::Type::Text, Box::new(e))
    })?;
    Ok(Link {
        id: row.get::<_, i64>(0)? as u64,
        alias: row.get(1)?,
        url: row.get(2)?,
        created_at: row.get(3)?,
        updated_at: row.get(4)?,
        expires_at: row.get(5)?,
        renew_ttl: row.get(6)?,
        max_visits: row.get(7)?,
        redirect: row.get(8)?,
        targets: DeviceTargets {
            desktop: row.get(9)?,
            mobile: row.get(10)?,
            ios: row.get(11)?,
            android: row.get(12)?,
        },
        disabled: row.get(13)?,
        tags: if tags == "[]" {
            Vec::new()
        } else {
            serde_json::from_str(tags).unwrap_or_default()
        },
        created_by: row.get(15)?,
        clicks: row.get(16)?,
        bot_clicks: row.get(17)?,
        forward_query: row.get(18)?,
        country_targets: country_targets_from_stored(row.get::<_, Option<String>>(19)?.as_deref()),
        password_hash: row.get(20)?,
        variants: variants_from_stored(row.get::<_, Option<String>>(21)?.as_deref()),
        team_id: row.get(22)?,
        broken: row.get(23)?,
        check: match row.get::<_, Option<String>>(24)? {
            None => None,
            Some(m) => Some(CheckMode::parse(&m).map_err(|e| {
                rusqlite::Error::FromSqlConversionFailure(
                    24,
                    rusqlite::types::Type::Text,
                    Box::new(e),
                )
            })?),
        },
        taken_down: row.get(25)?,
        title: row.get(26)?,
    })
}

fn alias_conflict(e: rusqlite::Error, alias: Option<&str>) -> StoreError {
    match (&e, alias) {
        (rusqlite::Error::SqliteFailure(f, Some(msg)), Some(alias))
            if f.code == rusqlite::ErrorCode::ConstraintViolation && msg.contains("alias") =>
        {
            StoreError::Conflict(format!("alias \"{alias}\""))
        }
        _ => StoreError::from(e),
    }
}

/// The statement [`insert_with`] runs.
pub const INSERT: &str = "INSERT INTO links (id, alias, url, created_at, updated_at, expires_at, \
     renew_ttl, max_visits, redirect, target_desktop, target_mobile, target_ios, target_android, \
     disabled, tags, created_by, dedupe_hash, forward_query, country_targets, password_hash, \
     variants, team_id, check_mode, title) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, \
     ?19, ?20, ?21, ?22, ?23, ?24)";

/// Inserts a new link; an alias in use is a [`StoreError::Conflict`].
pub fn insert(conn: &Connection, link: &Link, dedupe_hash: Option<&[u8]>) -> StoreResult<()> {
    insert_with(conn, &mut *conn.prepare_cached(INSERT)?, link, dedupe_hash)
}

/// [`insert`] with `st`, [`INSERT`] prepared on `conn` by the caller.
pub fn insert_with(
    conn: &Connection,
    st: &mut Statement<'_>,
    link: &Link,
    dedupe_hash: Option<&[u8]>,
) -> StoreResult<()> {
    st.execute(params![
        link.id as i64,
        link.alias,
        link.url,
        link.created_at,
        link.updated_at,
        link.expires_at,
        link.renew_ttl,
        link.max_visits,
        link.redirect,
        link.targets.desktop,
        link.targets.mobile,
        link.targets.ios,
        link.targets.android,
        link.disabled,
        serde_json::to_string(&link.tags).unwrap_or_else(|_| "[]".into()),
        link.created_by,
        dedupe_hash,
        link.forward_query,
        country_targets_to_stored(&link.country_targets),
        link.password_hash,
        variants_to_stored(&link.variants),
        link.team_id,
        link.check.map(CheckMode::as_str),
        link.title,
    ])
    .map_err(|e| alias_conflict(e, link.alias.as_deref()))?;
    if link.alias.is_some() {
        // A new generated code cannot be cached at the edge; an alias can
        // (as "not found"), and joins the edge's alias set.
        changes::record(conn, link.id, None, link.alias.as_deref())?;
    }
    Ok(())
}

/// Writes every editable field of `link` back (after a patch); clears the
/// dedupe hash since the link no longer matches how it was created.
/// `old_alias` is the alias before the patch, for the edge change log.
pub fn update(conn: &Connection, link: &Link, old_alias: Option<&str>) -> StoreResult<()> {
    let n = conn
        .prepare_cached(
            "UPDATE links SET alias = ?2, url = ?3, updated_at = ?4, expires_at = ?5, \
             renew_ttl = ?6, max_visits = ?7, redirect = ?8, target_desktop = ?9, \
             target_mobile = ?10, target_ios = ?11, target_android = ?12, disabled = ?13, \
             tags = ?14, forward_query = ?15, country_targets = ?16, password_hash = ?17, \
             variants = ?18, check_mode = ?19, title = ?20, dedupe_hash = NULL, \
             broken = CASE WHEN ?19 IN ('off', 'report') THEN 0 ELSE broken END WHERE id = ?1",
        )?
        .execute(params![
            link.id as i64,
            link.alias,
            link.url,
            link.updated_at,
            link.expires_at,
            link.renew_ttl,
            link.max_visits,
            link.redirect,
            link.targets.desktop,
            link.targets.mobile,
            link.targets.ios,
            link.targets.android,
            link.disabled,
            serde_json::to_string(&link.tags).unwrap_or_else(|_| "[]".into()),
            link.forward_query,
            country_targets_to_stored(&link.country_targets),
            link.password_hash,
            variants_to_stored(&link.variants),
            link.check.map(CheckMode::as_str),
            link.title,
        ])
        .map_err(|e| alias_conflict(e, link.alias.as_deref()))?;
    if n == 0 {
        return Err(StoreError::NotFound(format!("link {}", link.id)));
    }
    changes::record(conn, link.id, old_alias, link.alias.as_deref())
}

/// Moves a renew-on-access link's expiry.
pub fn set_expiry(conn: &Connection, id: u64, expires_at: i64) -> StoreResult<()> {
    conn.prepare_cached("UPDATE links SET expires_at = ?2 WHERE id = ?1")?
        .execute(params![id as i64, expires_at])?;
    Ok(())
}

/// Sets a link's click totals (an import restoring them); the fold adds
/// to these from then on.
pub fn set_click_totals(
    conn: &Connection,
    id: u64,
    clicks: i64,
    bot_clicks: i64,
) -> StoreResult<()> {
    conn.prepare_cached("UPDATE links SET clicks = ?2, bot_clicks = ?3 WHERE id = ?1")?
        .execute(params![id as i64, clicks, bot_clicks])?;
    Ok(())
}

/// The statement of [`by_id_with`].
pub const BY_ID: &str = concat!("SELECT ", columns!(), " FROM links WHERE id = ?1");

/// The statement of [`by_alias_with`].
pub const BY_ALIAS: &str = concat!("SELECT ", columns!(), " FROM links WHERE alias = ?1");

/// The link with this id.
pub fn by_id(conn: &Connection, id: u64) -> StoreResult<Option<Link>> {
    by_id_with(&mut *conn.prepare_cached(BY_ID)?, id)
}

/// [`by_id`] on [`BY_ID`] prepared once for many reads.
pub fn by_id_with(stmt: &mut Statement<'_>, id: u64) -> StoreResult<Option<Link>> {
    Ok(stmt.query_row([id as i64], from_row).optional()?)
}

/// The link with this alias (exact, case-sensitive like the URL path).
pub fn by_alias(conn: &Connection, alias: &str) -> StoreResult<Option<Link>> {
    by_alias_with(&mut *conn.prepare_cached(BY_ALIAS)?, alias)
}

/// [`by_alias`] on [`BY_ALIAS`] prepared once for many reads.
pub fn by_alias_with(stmt: &mut Statement<'_>, alias: &str) -> StoreResult<Option<Link>> {
    Ok(stmt.query_row([alias], from_row).optional()?)
}

/// A live link created from the same request (for `dedupe: true`): found
/// through the index of the hashes' first 8 bytes (`links_dedupe8`), the
/// whole hash compared in the row.
pub fn by_dedupe_hash(conn: &Connection, hash: &[u8], now: i64) -> StoreResult<Option<Link>> {
    by_dedupe_hash_with(&mut *conn.prepare_cached(BY_DEDUPE_HASH)?, hash, now)
}

/// The statement [`by_dedupe_hash_with`] runs.
pub const BY_DEDUPE_HASH: &str = concat!(
    "SELECT ",
    columns!(),
    " FROM links WHERE substr(dedupe_hash, 1, 8) = substr(?1, 1, 8) \
     AND dedupe_hash = ?1 AND disabled = 0 AND taken_down = 0 \
     AND (expires_at IS NULL OR expires_at > ?2) \
     AND (max_visits IS NULL OR clicks - bot_clicks < max_visits) ORDER BY id LIMIT 1"
);

/// [`by_dedupe_hash`] with `st`, [`BY_DEDUPE_HASH`] prepared by the caller.
pub fn by_dedupe_hash_with(
    st: &mut Statement<'_>,
    hash: &[u8],
    now: i64,
) -> StoreResult<Option<Link>> {
    Ok(st.query_row(params![hash, now], from_row).optional()?)
}

/// Deletes a link and its click rows; returns what was deleted.
pub fn delete(conn: &Connection, id: u64) -> StoreResult<Option<Link>> {
    let Some(link) = by_id(conn, id)? else {
        return Ok(None);
    };
    conn.prepare_cached("DELETE FROM links WHERE id = ?1")?
        .execute([id as i64])?;
    super::recycle::tombstone(conn, id, crate::timestamp::unix_now())?;
    changes::record(conn, id, link.alias.as_deref(), None)?;
    Ok(Some(link))
}

/// Every alias, for the edge's alias set.
pub fn all_aliases(conn: &Connection) -> StoreResult<Vec<String>> {
    let mut st = conn.prepare_cached("SELECT alias FROM links WHERE alias IS NOT NULL")?;
    let rows = st.query_map([], |r| r.get(0))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Number of links.
pub fn count(conn: &Connection) -> StoreResult<u64> {
    Ok(conn.query_row("SELECT count(*) FROM links", [], |r| r.get::<_, i64>(0))? as u64)
}

/// [`Link::state`] as SQL, at the Unix time bound to `:now` (clicks as of
/// the last fold).
pub const STATE_SQL: &str = state_sql!();

/// How many links are in each state at `now`: `(state, count)`, only the
/// states that occur.
pub fn count_by_state(conn: &Connection, now: i64) -> StoreResult<Vec<(String, u64)>> {
    let sql = format!("SELECT {STATE_SQL} AS state, count(*) FROM links GROUP BY state");
    let mut st = conn.prepare_cached(&sql)?;
    let rows = st.query_map(rusqlite::named_params! {":now": now}, |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)? as u64))
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sqlite::tests::temp_store;
    use crate::store::{LinkState, ListQuery};

    /// The SQL form of the state agrees with [`Link::state`].
    #[tokio::test]
    async fn states_counted_in_sql_agree_with_link_state() {
        let (_dir, store) = temp_store();
        let now = 1_000_000;
        let links = [
            Link {
                id: 1,
                url: "https://e.com/a".into(),
                ..Link::default()
            },
            Link {
                id: 2,
                url: "https://e.com/d".into(),
                disabled: true,
                ..Link::default()
            },
            Link {
                id: 3,
                url: "https://e.com/e".into(),
                expires_at: Some(now),
                ..Link::default()
            },
            Link {
                id: 4,
                url: "https://e.com/x".into(),
                max_visits: Some(2),
                ..Link::default()
            },
            Link {
                id: 5,
                url: "https://e.com/f".into(),
                expires_at: Some(now + 1),
                ..Link::default()
            },
        ];
        let want: Vec<LinkState> = {
            let mut l = links.clone();
            l[3].clicks = 3;
            l[3].bot_clicks = 1;
            l.iter().map(|l| l.state(now)).collect()
        };
        store
            .write(move |c| {
                for l in &links {
                    insert(c, l, None)?;
                }
                c.execute(
                    "UPDATE links SET clicks = 3, bot_clicks = 1 WHERE id = 4",
                    [],
                )?;
                Ok(())
            })
            .await
            .unwrap();
        let mut counted = store.read(move |c| count_by_state(c, now)).await.unwrap();
        counted.sort();
        let mut expected: Vec<(String, u64)> = Vec::new();
        for s in want {
            match expected.iter_mut().find(|(n, _)| n == s.as_str()) {
                Some((_, n)) => *n += 1,
                None => expected.push((s.as_str().to_string(), 1)),
            }
        }
        expected.sort();
        assert_eq!(counted, expected);
        assert_eq!(expected.len(), 4, "every state occurs");
    }

    /// A database made before `forward_query` keeps its links, which leave
    /// the choice to the location; the field is stored and read in all three
    /// states after the migration. (Made at schema v4: v5 needs the store's
    /// own SQL function, which the store registers when it opens.)
    #[tokio::test]
    async fn links_from_before_forward_query_migrate_as_unset() {
        use rusqlite_migration::{Migrations, M};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v4.db");
        {
            let mut conn = Connection::open(&path).unwrap();
            Migrations::new(vec![
                M::up(include_str!("schema_v1.sql")),
                M::up(include_str!("schema_v2.sql")),
                M::up(include_str!("schema_v3.sql")),
                M::up(include_str!("schema_v4.sql")),
            ])
            .to_latest(&mut conn)
            .unwrap();
            conn.execute(
                "INSERT INTO links (id, url, created_at, updated_at) VALUES (5, 'https://e.com/old', 1, 1)",
                [],
            )
            .unwrap();
        }
        let store = crate::store::sqlite::SqliteStore::open(&path, 1, 16).unwrap();
        let old = store.read(|c| by_id(c, 5)).await.unwrap().unwrap();
        assert_eq!(old.forward_query, None);
        store
            .write(|c| {
                for (id, f) in [(6, Some(true)), (7, Some(false))] {
                    insert(
                        c,
                        &Link {
                            forward_query: f,
                            ..sample(id, None)
                        },
                        None,
                    )?;
                }
                let mut edited = by_id(c, 5)?.unwrap();
                edited.forward_query = Some(false);
                update(c, &edited, None)
            })
            .await
            .unwrap();
        let got: Vec<Option<bool>> = store
            .read(|c| {
                [5, 6, 7]
                    .into_iter()
                    .map(|id| by_id(c, id).map(|l| l.unwrap().forward_query))
                    .collect::<StoreResult<Vec<_>>>()
            })
            .await
            .unwrap();
        assert_eq!(got, vec![Some(false), Some(true), Some(false)]);
        store.close();
    }

    fn sample(id: u64, alias: Option<&str>) -> Link {
        Link {
            id,
            alias: alias.map(str::to_string),
            url: format!("https://example.com/{id}"),
            created_at: 1,
            updated_at: 1,
            tags: vec!["news".into()],
            ..Link::default()
        }
    }

    #[tokio::test]
    async fn insert_get_list_delete() {
        let (_dir, store) = temp_store();
        store
            .write(|c| {
                insert(c, &sample(10, Some("hello")), None)?;
                insert(c, &sample(11, None), None)
            })
            .await
            .unwrap();
        let err = store
            .write(|c| insert(c, &sample(12, Some("hello")), None))
            .await
            .unwrap_err();
        assert!(
            matches!(err, StoreError::Conflict(ref m) if m.contains("hello")),
            "{err}"
        );
        let got = store.read(|c| by_alias(c, "hello")).await.unwrap().unwrap();
        assert_eq!(got, sample(10, Some("hello")));
        let page = store
            .read(|c| {
                list(
                    c,
                    &ListQuery {
                        limit: 1,
                        tags: vec!["news".into()],
                        ..Default::default()
                    },
                )
            })
            .await
            .unwrap();
        assert_eq!(page.iter().map(|l| l.id).collect::<Vec<_>>(), vec![11]);
        let next = store
            .read(|c| {
                list(
                    c,
                    &ListQuery {
                        limit: 10,
                        after: Some((11, 11)),
                        ..Default::default()
                    },
                )
            })
            .await
            .unwrap();
        assert_eq!(next.iter().map(|l| l.id).collect::<Vec<_>>(), vec![10]);
        let gone = store.write(|c| delete(c, 10)).await.unwrap().unwrap();
        assert_eq!(gone.alias.as_deref(), Some("hello"));
        assert_eq!(store.read(|c| by_id(c, 10)).await.unwrap(), None);
    }

    #[test]
    fn states() {
        let mut l = sample(1, None);
        assert_eq!(l.state(100), LinkState::Active);
        l.expires_at = Some(100);
        assert_eq!(l.state(100), LinkState::Expired);
        l.expires_at = None;
        l.max_visits = Some(2);
        l.clicks = 3;
        l.bot_clicks = 2;
        assert_eq!(l.state(100), LinkState::Active);
        l.bot_clicks = 1;
        assert_eq!(l.state(100), LinkState::Exhausted);
        l.disabled = true;
        assert_eq!(l.state(100), LinkState::Disabled);
    }
}
