//! [`LinkStore`] over SQLite: inserts and edits are jobs on the writer
//! thread (grouped with other writes, each rolled back alone to its
//! savepoint), reads go to a reader thread, and the pending clicks are laid
//! over what is read.

use std::sync::Arc;

use async_trait::async_trait;
use rusqlite::Connection;

use super::link_writer::LinkWriter;
use crate::store::sqlite::clicks::with_overlay;
use crate::store::sqlite::snapshot::ReadSnapshot;
use crate::store::sqlite::{links as table, webhooks, SqliteStore};
use crate::store::{
    CodeRef, Inserted, Link, LinkEdit, LinkStore, ListQuery, ListSort, NewLink, Page, StoreError,
    StoreResult, Updated, WebhookEvent,
};
use crate::timestamp::unix_now;

/// Batches of at least this many links go to the bulk connection (a
/// transaction of their own, with a page cache that holds what they dirty)
/// instead of the grouped writes' small cache, which a batch of thousands
/// would spill to the WAL before its commit.
const BULK_FROM: usize = 64;

/// The first of `aliases` that is `own_alias` or an existing alias; run
/// in the write's transaction.
pub(super) fn refused_alias_target(
    conn: &Connection,
    aliases: &[String],
    own_alias: Option<&str>,
) -> StoreResult<Option<usize>> {
    for (i, a) in aliases.iter().enumerate() {
        if own_alias == Some(a.as_str()) || table::by_alias(conn, a)?.is_some() {
            return Ok(Some(i));
        }
    }
    Ok(None)
}

/// Inserts one link inside the caller's transaction, with its
/// `link.created` deliveries. An alias conflict rolls back only this item.
pub(super) fn insert_new(w: &mut LinkWriter, new: NewLink, now: i64) -> StoreResult<Inserted> {
    let inserted = insert_row(w, new, now)?;
    if let Inserted::New(link) = &inserted {
        w.created(link, now)?;
    }
    Ok(inserted)
}

fn insert_row(w: &mut LinkWriter, new: NewLink, now: i64) -> StoreResult<Inserted> {
    if new.dedupe {
        if let Some(existing) = w.by_dedupe_hash(&new.dedupe_hash, now)? {
            return Ok(Inserted::Existing(existing));
        }
    }
    let link = new.link;
    if let Some(i) = refused_alias_target(w.conn, &new.alias_targets, link.alias.as_deref())? {
        return Ok(Inserted::TargetAlias(i));
    }
    if link.alias.is_none() {
        // Only an alias can conflict; anything else fails the whole job.
        w.insert(&link, &new.dedupe_hash)?;
        return Ok(Inserted::New(link));
    }
    w.conn.execute_batch("SAVEPOINT item")?;
    match w.insert(&link, &new.dedupe_hash) {
        Ok(()) => {
            w.conn.execute_batch("RELEASE item")?;
            Ok(Inserted::New(link))
        }
        Err(e) => {
            w.conn.execute_batch("ROLLBACK TO item; RELEASE item")?;
            match e {
                StoreError::Conflict(_) => Ok(Inserted::AliasTaken(link.alias.unwrap_or_default())),
                e => Err(e),
            }
        }
    }
}

/// Applies `edit` to link `id` inside the writer's transaction.
fn update_in(
    c: &Connection,
    pending: &crate::store::sqlite::clicks::PendingClicks,
    id: u64,
    edit: LinkEdit,
) -> StoreResult<Updated> {
    let Some(old) = table::by_id(c, id)? else {
        return Ok(Updated::NotFound);
    };
    let mut new = match (edit.apply)(&old) {
        Ok(new) => new,
        Err(e) => return Ok(Updated::Refused(e)),
    };
    if let Some(i) = refused_alias_target(c, &edit.alias_targets, new.alias.as_deref())? {
        return Ok(Updated::TargetAlias(i));
    }
    if let Some(e) = (edit.check)(&old, &new) {
        return Ok(Updated::Refused(e));
    }
    match table::update(c, &new, old.alias.as_deref()) {
        Ok(()) => {
            // The reply shows every acknowledged click.
            with_overlay(c, pending, |_, clicks| {
                clicks.apply(&mut new);
                Ok(())
            })?;
            webhooks::link_event(c, WebhookEvent::of_edit(&old, &new), &new, unix_now())?;
            Ok(Updated::Done { old, new })
        }
        Err(StoreError::Conflict(_)) => Ok(Updated::AliasTaken(new.alias.unwrap_or_default())),
        Err(e) => Err(e),
    }
}

impl SqliteStore {
    /// Before a page ordered by clicks: the pending clicks folded into the
    /// totals the order reads, so it is the order of the counts the page
    /// shows (pending ones included), as on PostgreSQL. Nothing pending,
    /// nothing to do; a fold empties what is pending, so lists that follow
    /// one another cost one fold.
    async fn fold_for_order(&self, query: &ListQuery) -> StoreResult<()> {
        if query.sort == ListSort::Clicks && self.pending_clicks().backlog().0 > 0 {
            self.fold_clicks().await?;
        }
        Ok(())
    }
}

#[async_trait]
impl LinkStore for SqliteStore {
    async fn insert_links(&self, links: Vec<NewLink>, now: i64) -> StoreResult<Vec<Inserted>> {
        let bulk = links.len() >= BULK_FROM;
        let job = move |c: &Connection| {
            let mut out = Vec::with_capacity(links.len());
            let mut w = LinkWriter::new(c)?;
            for new in links {
                out.push(insert_new(&mut w, new, now)?);
            }
            Ok(out)
        };
        if bulk {
            self.write_bulk(job).await
        } else {
            self.write(job).await
        }
    }

    async fn update_link(&self, id: u64, edit: LinkEdit) -> StoreResult<Updated> {
        let pending = Arc::clone(self.pending_clicks());
        self.write(move |c| update_in(c, &pending, id, edit)).await
    }

    async fn delete_link(&self, id: u64) -> StoreResult<Option<Link>> {
        self.write(move |c| {
            let gone = table::delete(c, id)?;
            if let Some(link) = &gone {
                webhooks::link_event(c, WebhookEvent::Deleted, link, unix_now())?;
            }
            Ok(gone)
        })
        .await
    }

    async fn find_link(&self, code: CodeRef) -> StoreResult<Option<Link>> {
        self.read_counted(move |c, clicks| {
            let link = match &code {
                CodeRef::Id(id) => table::by_id(c, *id)?,
                CodeRef::Alias(alias) => table::by_alias(c, alias)?,
                CodeRef::Invalid => None,
            };
            Ok(link.map(|mut l| {
                clicks.apply(&mut l);
                l
            }))
        })
        .await
    }

    async fn find_links(&self, codes: Vec<CodeRef>) -> StoreResult<Vec<Option<Link>>> {
        // One job on one reader thread inside one read transaction: a burst
        // of misses costs one thread hop and one set of SQLite locks.
        self.read(move |c| read_links(c, &codes)).await
    }

    fn find_links_now(&self, codes: &[CodeRef]) -> Option<Vec<Option<Link>>> {
        self.read_now(|c| read_links(c, codes))
    }

    async fn list_links(&self, query: ListQuery) -> StoreResult<Page> {
        self.fold_for_order(&query).await?;
        self.read_counted(move |c, clicks| {
            let mut links = table::list(c, &query)?;
            let next = (links.len() == query.limit as usize)
                .then(|| links.last().map(|l| (query.sort.key(l), l.id)))
                .flatten();
            links.iter_mut().for_each(|l| clicks.apply(l));
            let total = table::count_matching(c, &query)?;
            Ok(Page { links, total, next })
        })
        .await
    }

    async fn links_page(&self, query: ListQuery) -> StoreResult<Vec<Link>> {
        self.fold_for_order(&query).await?;
        self.read_counted(move |c, clicks| {
            let mut links = table::list(c, &query)?;
            links.iter_mut().for_each(|l| clicks.apply(l));
            Ok(links)
        })
        .await
    }

    async fn count_links(&self) -> StoreResult<u64> {
        self.read(table::count).await
    }

    async fn count_links_by_state(&self, now: i64) -> StoreResult<Vec<(String, u64)>> {
        self.read(move |c| table::count_by_state(c, now)).await
    }
}

/// The links behind `codes`, each statement fetched from the connection's
/// cache once for them all. Several reads share one read transaction: one
/// read lock instead of one per statement (a single read is its own).
fn read_links(c: &Connection, codes: &[CodeRef]) -> StoreResult<Vec<Option<Link>>> {
    let _snapshot = match codes.len() {
        0 | 1 => None,
        _ => Some(ReadSnapshot::begin(c)?),
    };
    let mut by_id = c.prepare_cached(table::BY_ID)?;
    let mut by_alias = None;
    let mut out = Vec::with_capacity(codes.len());
    for r in codes {
        out.push(match r {
            CodeRef::Id(id) => table::by_id_with(&mut by_id, *id)?,
            CodeRef::Alias(alias) => {
                let stmt = match &mut by_alias {
                    Some(stmt) => stmt,
                    None => by_alias.insert(c.prepare_cached(table::BY_ALIAS)?),
                };
                table::by_alias_with(stmt, alias)?
            }
            CodeRef::Invalid => None,
        });
    }
    Ok(out)
}
