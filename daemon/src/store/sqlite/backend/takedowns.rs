//! [`TakedownStore`] over SQLite: a takedown and its undo are one job each
//! on the writer thread (one transaction: the record, the matched links,
//! the switch and the edge change log).

use async_trait::async_trait;
use rusqlite::{params, Connection, OptionalExtension, Row};

use crate::store::sqlite::{changes, SqliteStore};
use crate::store::{
    ChangedLink, Matcher, NewTakedown, StoreError, StoreResult, Takedown, TakedownLink,
    TakedownStore, TakenDown, Undone, WebhookEvent,
};

const COLUMNS: &str = "id, kind, selector, reason, created_by, created_at, matched, disabled, \
                       undone_at, undone_by, restored";

fn record(r: &Row) -> rusqlite::Result<Takedown> {
    Ok(Takedown {
        id: r.get(0)?,
        kind: r.get(1)?,
        selector: r.get(2)?,
        reason: r.get(3)?,
        created_by: r.get(4)?,
        created_at: r.get(5)?,
        matched: r.get::<_, i64>(6)? as u64,
        disabled: r.get::<_, i64>(7)? as u64,
        undone_at: r.get(8)?,
        undone_by: r.get(9)?,
        restored: r.get::<_, Option<i64>>(10)?.map(|n| n as u64),
    })
}

fn by_id(c: &Connection, id: i64) -> StoreResult<Option<Takedown>> {
    Ok(
        c.prepare_cached(&format!("SELECT {COLUMNS} FROM takedowns WHERE id = ?1"))?
            .query_row([id], record)
            .optional()?,
    )
}

/// The takedown this transaction wrote.
fn recorded(c: &Connection, id: i64) -> StoreResult<Takedown> {
    by_id(c, id)?.ok_or_else(|| StoreError::NotFound(format!("takedown {id}")))
}

/// The links `matcher` covers: id, alias, taken down already.
fn matching(c: &Connection, matcher: &Matcher) -> StoreResult<Vec<(u64, Option<String>, bool)>> {
    let row = |r: &Row| -> rusqlite::Result<(u64, Option<String>, bool, String)> {
        Ok((r.get::<_, i64>(0)? as u64, r.get(1)?, r.get(2)?, r.get(3)?))
    };
    let rows: Vec<(u64, Option<String>, bool, String)> = match matcher {
        Matcher::Creator(who) => c
            .prepare(
                "SELECT id, alias, taken_down, url FROM links WHERE created_by = ?1 \
                 OR created_by IN (SELECT 'key:' || k.id FROM api_keys k \
                     JOIN users u ON u.id = k.user_id WHERE 'user:' || u.name = ?1)",
            )?
            .query_map([who], row)?
            .collect::<rusqlite::Result<_>>()?,
        Matcher::Urls {
            contains: Some(part),
            ..
        } => c
            .prepare(
                "SELECT id, alias, taken_down, url FROM links WHERE instr(lower(url), ?1) > 0",
            )?
            .query_map([part], row)?
            .collect::<rusqlite::Result<_>>()?,
        Matcher::Urls { contains: None, .. } => c
            .prepare("SELECT id, alias, taken_down, url FROM links")?
            .query_map([], row)?
            .collect::<rusqlite::Result<_>>()?,
    };
    let keep = |url: &str| match matcher {
        Matcher::Creator(_) => true,
        Matcher::Urls { test, .. } => test(url),
    };
    Ok(rows
        .into_iter()
        .filter(|(_, _, _, url)| keep(url))
        .map(|(id, alias, off, _)| (id, alias, off))
        .collect())
}

/// Takes link `id` down or lifts that and logs the change for the edge.
fn switch(c: &Connection, id: u64, alias: Option<&str>, off: bool, at: i64) -> StoreResult<()> {
    c.prepare_cached("UPDATE links SET taken_down = ?2, updated_at = ?3 WHERE id = ?1")?
        .execute(params![id as i64, off, at])?;
    let event = if off {
        WebhookEvent::Disabled
    } else {
        WebhookEvent::Updated
    };
    crate::store::sqlite::webhooks::link_event_by_id(c, event, id, at)?;
    changes::record(c, id, alias, alias)
}

fn take_down(c: &Connection, t: &NewTakedown) -> StoreResult<Option<TakenDown>> {
    if t.once {
        let last: Option<String> = c
            .prepare_cached("SELECT selector FROM takedowns WHERE kind = ?1 ORDER BY id DESC")?
            .query_row([t.kind], |r| r.get(0))
            .optional()?;
        if last.as_deref() == Some(t.selector.as_str()) || (last.is_none() && t.unless_first) {
            return Ok(None);
        }
    }
    let id: i64 = c
        .prepare_cached(
            "INSERT INTO takedowns (kind, selector, reason, created_by, created_at, switch_off) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6) RETURNING id",
        )?
        .query_row(
            params![t.kind, t.selector, t.reason, t.by, t.at, t.switch_off],
            |r| r.get(0),
        )?;
    let matched = matching(c, &t.matcher)?;
    let mut changed = Vec::new();
    let mut insert = c.prepare_cached(
        "INSERT INTO takedown_links (takedown_id, link_id, changed) VALUES (?1, ?2, ?3)",
    )?;
    for (link, alias, off) in &matched {
        insert.execute(params![id, *link as i64, !off && t.switch_off])?;
        if !off && t.switch_off {
            switch(c, *link, alias.as_deref(), true, t.at)?;
            changed.push((*link, alias.clone()));
        }
    }
    c.prepare_cached("UPDATE takedowns SET matched = ?2, disabled = ?3 WHERE id = ?1")?
        .execute(params![id, matched.len() as i64, changed.len() as i64])?;
    let record = recorded(c, id)?;
    Ok(Some(TakenDown { record, changed }))
}

fn undo(c: &Connection, id: i64, by: &str, at: i64) -> StoreResult<Undone> {
    let Some(found) = by_id(c, id)? else {
        return Ok(Undone::NotFound);
    };
    if found.undone_at.is_some() {
        return Ok(Undone::Already(found));
    }
    // Lifted: this takedown's links that no other switching takedown in
    // force covers (whoever took them down first).
    let back: Vec<ChangedLink> = c
        .prepare_cached(
            "SELECT l.id, l.alias FROM takedown_links t JOIN links l ON l.id = t.link_id \
             WHERE t.takedown_id = ?1 AND l.taken_down = 1 \
             AND NOT EXISTS (SELECT 1 FROM takedown_links o \
                 JOIN takedowns d ON d.id = o.takedown_id \
                 WHERE o.link_id = t.link_id AND o.takedown_id <> ?1 \
                 AND d.undone_at IS NULL AND d.switch_off = 1)",
        )?
        .query_map([id], |r| Ok((r.get::<_, i64>(0)? as u64, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    for (link, alias) in &back {
        switch(c, *link, alias.as_deref(), false, at)?;
    }
    c.prepare_cached(
        "UPDATE takedowns SET undone_at = ?2, undone_by = ?3, restored = ?4 WHERE id = ?1",
    )?
    .execute(params![id, at, by, back.len() as i64])?;
    let record = recorded(c, id)?;
    Ok(Undone::Done {
        record,
        changed: back,
    })
}

#[async_trait]
impl TakedownStore for SqliteStore {
    async fn take_down(&self, t: NewTakedown) -> StoreResult<Option<TakenDown>> {
        self.write_bulk(move |c| take_down(c, &t)).await
    }

    async fn undo_takedown(&self, id: i64, by: String, at: i64) -> StoreResult<Undone> {
        self.write_bulk(move |c| undo(c, id, &by, at)).await
    }

    async fn takedowns(&self, limit: u32) -> StoreResult<Vec<Takedown>> {
        self.read(move |c| {
            Ok(c.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM takedowns ORDER BY id DESC LIMIT ?1"
            ))?
            .query_map([limit], record)?
            .collect::<rusqlite::Result<_>>()?)
        })
        .await
    }

    async fn taken_down_hosts(&self) -> StoreResult<Vec<String>> {
        self.read(|c| {
            Ok(c.prepare_cached(
                "SELECT DISTINCT selector FROM takedowns \
                 WHERE kind = 'host' AND undone_at IS NULL AND switch_off = 1",
            )?
            .query_map([], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?)
        })
        .await
    }

    async fn takedown(&self, id: i64) -> StoreResult<Option<Takedown>> {
        self.read(move |c| by_id(c, id)).await
    }

    async fn takedown_links(
        &self,
        id: i64,
        after: u64,
        limit: u32,
    ) -> StoreResult<Vec<TakedownLink>> {
        self.read(move |c| {
            Ok(c.prepare_cached(
                "SELECT t.link_id, t.changed, l.alias, l.url FROM takedown_links t \
                 LEFT JOIN links l ON l.id = t.link_id \
                 WHERE t.takedown_id = ?1 AND t.link_id > ?2 ORDER BY t.link_id LIMIT ?3",
            )?
            .query_map(params![id, after as i64, limit], |r| {
                Ok(TakedownLink {
                    link_id: r.get::<_, i64>(0)? as u64,
                    switched_off: r.get(1)?,
                    alias: r.get(2)?,
                    url: r.get(3)?,
                })
            })?
            .collect::<rusqlite::Result<_>>()?)
        })
        .await
    }
}
