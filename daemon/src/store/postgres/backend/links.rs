//! [`LinkStore`] over PostgreSQL, with the semantics of the SQLite
//! implementation (`crate::store::sqlite::backend::links`): each write is one
//! transaction; an aliased item of a batch is tried under a savepoint so a
//! taken alias refuses that item alone; every change the edges must hear
//! about is appended to the shared change log (`postgres::changes::append`) in
//! the write's transaction, and followers are woken
//! (`postgres::changes::notify`) after the commit.
//!
//! There is no pending-click overlay here: clicks of links with a visit
//! limit or renew-on-access are counted in their batch's transaction, the
//! others wait in `click_log`, and the reads that show clicks (a link by
//! code, lists, edits, pages for export) fold the log first
//! (`PgStore::fold_log`), so they answer every acknowledged click as
//! stored. Lookups for the edge (`find_links`) read the tables alone.
//!
//! A create that claims no name (no alias, alias target or dedupe) is
//! written without those steps (`plain`): one statement for one link, one
//! statement for single creates that arrive together (`create_groups`),
//! one bulk insert for a batch's many.
//!
//! Several nodes write at once: an edit locks its link's row (`FOR
//! UPDATE`) before applying, and every write locks the aliases and
//! deduplicated URLs it claims (`name_locks`) before reading them, so two
//! nodes racing for one name are served one after the other.

use async_trait::async_trait;
use deadpool_postgres::{GenericClient, Transaction};
use shortlink_core::check_mode::CheckMode;
use tokio_postgres::error::SqlState;

use super::new_link::{insert_columns, Values};
use super::rows::{bigint, by_alias, by_code, by_codes, by_dedupe_hash, columns, failed, from_row};
use super::{list, name_locks, plain, webhooks, PgStore};
use crate::store::links::{country_targets_to_stored, variants_to_stored};
use crate::store::postgres::{changes, PgError};
use crate::store::{
    CodeRef, Inserted, Link, LinkEdit, LinkStore, ListQuery, NewLink, Page, StoreError,
    StoreResult, StoreStats, Updated, WebhookEvent,
};

/// The unique index on `links.alias` (see `postgres/schema_v1.sql`).
const ALIAS_INDEX: &str = "links_alias_key";

/// The first of `aliases` that is `own_alias` or an existing alias.
async fn refused_alias_target(
    c: &impl GenericClient,
    aliases: &[String],
    own_alias: Option<&str>,
) -> StoreResult<Option<usize>> {
    for (i, a) in aliases.iter().enumerate() {
        if own_alias == Some(a.as_str()) || by_alias(c, a).await?.is_some() {
            return Ok(Some(i));
        }
    }
    Ok(None)
}

/// Whether `e` is the alias index refusing a second link with one alias.
fn is_alias_conflict(e: &tokio_postgres::Error) -> bool {
    e.as_db_error().is_some_and(|d| {
        *d.code() == SqlState::UNIQUE_VIOLATION && d.constraint() == Some(ALIAS_INDEX)
    })
}

/// Runs the insert of `link`; the driver's error is kept for the caller to
/// judge (an alias conflict is not a failure of the batch).
async fn insert_row(
    c: &impl GenericClient,
    link: &Link,
    hash: &[u8],
) -> StoreResult<Result<(), tokio_postgres::Error>> {
    let st = c
        .prepare_cached(concat!(
            "INSERT INTO links (",
            insert_columns!(),
            ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, \
             $17, $18, $19, $20, $21, $22, $23, $24)"
        ))
        .await
        .map_err(failed("preparing a link insert"))?;
    let values = Values::new(link, hash)?;
    Ok(c.execute(&st, &values.params()).await.map(drop))
}

/// Inserts one link inside the caller's transaction; a taken alias rolls
/// back only this item (a savepoint). A stored alias is logged: the edge
/// may hold it as missing, and adds it to its alias set.
pub(super) async fn insert_new(
    tx: &mut Transaction<'_>,
    new: NewLink,
    now: i64,
) -> StoreResult<Inserted> {
    if new.dedupe {
        if let Some(existing) = by_dedupe_hash(&*tx, &new.dedupe_hash, now).await? {
            return Ok(Inserted::Existing(existing));
        }
    }
    let link = new.link;
    if let Some(i) = refused_alias_target(&*tx, &new.alias_targets, link.alias.as_deref()).await? {
        return Ok(Inserted::TargetAlias(i));
    }
    let Some(alias) = link.alias.clone() else {
        // Only an alias can conflict; anything else fails the whole write.
        insert_row(&*tx, &link, &new.dedupe_hash)
            .await?
            .map_err(failed("inserting a link"))?;
        webhooks::link_event(&*tx, WebhookEvent::Created, &link, now).await?;
        return Ok(Inserted::New(link));
    };
    let item = tx
        .savepoint("item")
        .await
        .map_err(failed("opening a savepoint for an aliased link"))?;
    match insert_row(&item, &link, &new.dedupe_hash).await? {
        Ok(()) => {
            changes::append(&item, link.id, None, Some(&alias)).await?;
            webhooks::link_event(&item, WebhookEvent::Created, &link, now).await?;
            item.commit()
                .await
                .map_err(failed("releasing an aliased link's savepoint"))?;
            Ok(Inserted::New(link))
        }
        Err(e) => {
            item.rollback()
                .await
                .map_err(failed("rolling back an aliased link's savepoint"))?;
            if is_alias_conflict(&e) {
                Ok(Inserted::AliasTaken(alias))
            } else {
                Err(failed("inserting an aliased link")(e))
            }
        }
    }
}

/// Notes a write in the store's counters: one transaction and one write
/// when it succeeded (refusals included), a write error when it failed.
pub(super) fn counted<T>(stats: &StoreStats, result: StoreResult<T>) -> StoreResult<T> {
    use std::sync::atomic::Ordering::Relaxed;
    if result.is_ok() {
        stats.transactions.fetch_add(1, Relaxed);
        stats.writes.fetch_add(1, Relaxed);
    } else {
        stats.write_errors.fetch_add(1, Relaxed);
    }
    result
}

/// Commits a write.
pub(super) async fn commit(tx: Transaction<'_>) -> StoreResult<()> {
    tx.commit()
        .await
        .map_err(|e| StoreError::Commit(PgError::query("committing a link write")(e).to_string()))
}

/// Applies `edit` to link `id` inside `tx`: load (row locked), apply,
/// alias targets, check, update, log.
async fn update_in(tx: &Transaction<'_>, id: u64, edit: LinkEdit) -> StoreResult<Updated> {
    let st = tx
        .prepare_cached(concat!(
            "SELECT ",
            columns!(),
            " FROM links WHERE id = $1 FOR UPDATE"
        ))
        .await
        .map_err(failed("preparing a link read for an edit"))?;
    let row = tx
        .query_opt(&st, &[&bigint(id)?])
        .await
        .map_err(failed("reading a link to edit"))?;
    let Some(old) = row.as_ref().map(from_row).transpose()? else {
        return Ok(Updated::NotFound);
    };
    let new = match (edit.apply)(&old) {
        Ok(new) => new,
        Err(e) => return Ok(Updated::Refused(e)),
    };
    // After the row lock: an edit holds one row, then its names.
    let names = new.alias.iter().chain(&edit.alias_targets);
    name_locks::lock(tx, names.map(|a| name_locks::Name::Alias(a))).await?;
    if let Some(i) = refused_alias_target(tx, &edit.alias_targets, new.alias.as_deref()).await? {
        return Ok(Updated::TargetAlias(i));
    }
    if let Some(e) = (edit.check)(&old, &new) {
        return Ok(Updated::Refused(e));
    }
    let st = tx
        .prepare_cached(concat!(
            "UPDATE links SET alias = $2, url = $3, updated_at = $4, expires_at = $5, \
             renew_ttl = $6, max_visits = $7, redirect = $8, target_desktop = $9, \
             target_mobile = $10, target_ios = $11, target_android = $12, disabled = $13, \
             tags = $14, forward_query = $15, country_targets = $16, password_hash = $17, \
             variants = $18, check_mode = $19::text, title = $20, dedupe_hash = NULL, \
             broken = CASE WHEN $19::text IN ('off', 'report') THEN false ELSE broken END \
             WHERE id = $1 RETURNING ",
            columns!()
        ))
        .await
        .map_err(failed("preparing a link update"))?;
    let redirect = new.redirect.map(i32::from);
    let tags = serde_json::to_string(&new.tags).unwrap_or_else(|_| "[]".into());
    let stored = tx
        .query_one(
            &st,
            &[
                &bigint(id)?,
                &new.alias,
                &new.url,
                &new.updated_at,
                &new.expires_at,
                &new.renew_ttl,
                &new.max_visits,
                &redirect,
                &new.targets.desktop,
                &new.targets.mobile,
                &new.targets.ios,
                &new.targets.android,
                &new.disabled,
                &tags,
                &new.forward_query,
                &country_targets_to_stored(&new.country_targets),
                &new.password_hash,
                &variants_to_stored(&new.variants),
                &new.check.map(CheckMode::as_str),
                &new.title,
            ],
        )
        .await;
    let stored = match stored {
        Ok(row) => from_row(&row)?,
        Err(e) if is_alias_conflict(&e) => {
            return Ok(Updated::AliasTaken(new.alias.unwrap_or_default()))
        }
        Err(e) => return Err(failed("updating a link")(e)),
    };
    changes::append(tx, id, old.alias.as_deref(), stored.alias.as_deref()).await?;
    let event = WebhookEvent::of_edit(&old, &stored);
    webhooks::link_event(tx, event, &stored, crate::timestamp::unix_now()).await?;
    Ok(Updated::Done { old, new: stored })
}

#[async_trait]
impl LinkStore for PgStore {
    async fn insert_links(&self, mut links: Vec<NewLink>, now: i64) -> StoreResult<Vec<Inserted>> {
        if plain::all_plain(&links) && links.len() == 1 {
            // Counted by its group.
            if let Some(new) = links.pop() {
                let inserted = self.creates.create(&self.pg, &self.stats, new, now).await?;
                return Ok(vec![inserted]);
            }
        }
        let result: StoreResult<Vec<Inserted>> = async {
            let mut client = self.pg().get().await?;
            if plain::all_plain(&links) {
                let tx = client
                    .transaction()
                    .await
                    .map_err(failed("starting a link insert"))?;
                plain::insert_many(&tx, &links, now).await?;
                commit(tx).await?;
                return Ok(links.into_iter().map(|n| Inserted::New(n.link)).collect());
            }
            let mut tx = client
                .transaction()
                .await
                .map_err(failed("starting a link insert"))?;
            name_locks::lock(&tx, links.iter().flat_map(name_locks::of_new)).await?;
            let mut out = Vec::with_capacity(links.len());
            let mut logged = false;
            for new in links {
                let inserted = insert_new(&mut tx, new, now).await?;
                logged |= matches!(&inserted, Inserted::New(l) if l.alias.is_some());
                out.push(inserted);
            }
            commit(tx).await?;
            if logged {
                self.pg.wake(&client).await;
            }
            Ok(out)
        }
        .await;
        counted(self.stats(), result)
    }

    async fn update_link(&self, id: u64, edit: LinkEdit) -> StoreResult<Updated> {
        let result: StoreResult<Updated> = async {
            // The reply shows every acknowledged click.
            self.fold_log().await?;
            let mut client = self.pg().get().await?;
            let tx = client
                .transaction()
                .await
                .map_err(failed("starting a link edit"))?;
            let updated = update_in(&tx, id, edit).await?;
            if matches!(updated, Updated::Done { .. }) {
                commit(tx).await?;
                self.pg.wake(&client).await;
            } else {
                tx.rollback()
                    .await
                    .map_err(failed("rolling back a refused link edit"))?;
            }
            Ok(updated)
        }
        .await;
        counted(self.stats(), result)
    }

    async fn delete_link(&self, id: u64) -> StoreResult<Option<Link>> {
        let result: StoreResult<Option<Link>> = async {
            let mut client = self.pg().get().await?;
            let tx = client
                .transaction()
                .await
                .map_err(failed("starting a link delete"))?;
            let st = tx
                .prepare_cached(concat!(
                    "DELETE FROM links WHERE id = $1 RETURNING ",
                    columns!()
                ))
                .await
                .map_err(failed("preparing a link delete"))?;
            let row = tx
                .query_opt(&st, &[&bigint(id)?])
                .await
                .map_err(failed("deleting a link"))?;
            let Some(link) = row.as_ref().map(from_row).transpose()? else {
                return Ok(None); // nothing written: the transaction rolls back
            };
            crate::store::postgres::recycle::tombstone(
                &tx,
                bigint(id)?,
                crate::timestamp::unix_now(),
            )
            .await?;
            changes::append(&tx, id, link.alias.as_deref(), None).await?;
            let now = crate::timestamp::unix_now();
            webhooks::link_event(&tx, WebhookEvent::Deleted, &link, now).await?;
            commit(tx).await?;
            self.pg.wake(&client).await;
            Ok(Some(link))
        }
        .await;
        counted(self.stats(), result)
    }

    async fn find_link(&self, code: CodeRef) -> StoreResult<Option<Link>> {
        // Every acknowledged click in the totals (lookups, `find_links`,
        // read the tables alone).
        self.fold_log().await?;
        let client = self.pg().get().await?;
        by_code(&client, &code).await
    }

    async fn find_links(&self, codes: Vec<CodeRef>) -> StoreResult<Vec<Option<Link>>> {
        let client = self.pg().get().await?;
        by_codes(&client, &codes).await
    }

    async fn list_links(&self, query: ListQuery) -> StoreResult<Page> {
        self.fold_log().await?;
        let mut client = self.pg().get().await?;
        let tx = list::read_tx(&mut client).await?;
        let links = list::list(&tx, &query).await?;
        let next = (links.len() == query.limit as usize)
            .then(|| links.last().map(|l| (query.sort.key(l), l.id)))
            .flatten();
        let total = list::count_matching(&tx, &query).await?;
        tx.commit().await.map_err(failed("ending a link list"))?;
        Ok(Page { links, total, next })
    }

    async fn links_page(&self, query: ListQuery) -> StoreResult<Vec<Link>> {
        self.fold_log().await?;
        let client = self.pg().get().await?;
        list::list(&client, &query).await
    }

    async fn count_links(&self) -> StoreResult<u64> {
        let client = self.pg().get().await?;
        let row = client
            .query_one("SELECT count(*) FROM links", &[])
            .await
            .map_err(failed("counting links"))?;
        Ok(row.get::<_, i64>(0) as u64)
    }

    async fn count_links_by_state(&self, now: i64) -> StoreResult<Vec<(String, u64)>> {
        let client = self.pg().get().await?;
        list::count_by_state(&client, now).await
    }
}
