//! [`ImportStore`] over PostgreSQL, with the semantics of the SQLite
//! implementation (`crate::store::backend::import`): the rows are written
//! in one transaction of their own; a row already stored (its exported
//! code or alias with the same URL, or a live link of the same URL and
//! options) is `Present`, so importing a file twice stores it once; a row
//! keeps its exported code's id when that id is free and no running
//! daemon's recorded lease holds it (`pg::ids::live_leases`; the importing
//! daemon took the kept ids out of its own first). The id allocator is
//! moved past every id kept in the same transaction
//! (`pg::ids::advance_past`), so no node leases a kept id from then on.
//!
//! Restored click totals are written as given: there is no pending-click
//! overlay on PostgreSQL (clicks are applied per batch,
//! `pg::clicks::record_batch`), so stored totals are current.

use std::collections::{HashMap, HashSet};

use async_trait::async_trait;
use deadpool_postgres::{GenericClient, Transaction};

use super::ids::LINK_IDS;
use super::links::{commit, counted, insert_new};
use super::name_locks;
use super::rows::{bigint, by_alias, by_dedupe_hash, by_id, failed};
use super::PgStore;
use crate::db::{ImportLink, ImportStore, Imported, Inserted, KeptId, NewLink};
use crate::pg::{changes, ids};
use crate::store::StoreResult;

/// The link a row was already imported as: one with the row's alias and
/// URL (also when disabled), else a live link made from the same URL and
/// options.
async fn already_stored(
    c: &impl GenericClient,
    new: &NewLink,
    now: i64,
) -> StoreResult<Option<u64>> {
    if let Some(alias) = &new.link.alias {
        if let Some(old) = by_alias(c, alias).await? {
            if old.url == new.link.url {
                return Ok(Some(old.id));
            }
        }
    }
    Ok(by_dedupe_hash(c, &new.dedupe_hash, now)
        .await?
        .map(|l| l.id))
}

/// Sets a link's click totals (an import restoring them).
async fn set_click_totals(
    c: &impl GenericClient,
    id: u64,
    clicks: i64,
    bot_clicks: i64,
) -> StoreResult<()> {
    let st = c
        .prepare_cached("UPDATE links SET clicks = $2, bot_clicks = $3 WHERE id = $1")
        .await
        .map_err(failed("preparing a click total restore"))?;
    c.execute(&st, &[&bigint(id)?, &clicks, &bot_clicks])
        .await
        .map_err(failed("restoring click totals"))?;
    Ok(())
}

/// What the rows did, and whether a change was logged.
struct Written {
    out: Vec<Imported>,
    logged: bool,
}

/// Stores the rows inside the import's transaction.
async fn write_rows(
    tx: &mut Transaction<'_>,
    rows: Vec<ImportLink>,
    now: i64,
) -> StoreResult<Written> {
    // A row found already stored is found by its alias or its URL, so the
    // URL is claimed whether or not the row deduplicates.
    let mut names = Vec::new();
    for r in &rows {
        names.extend(name_locks::of_new(&r.new));
        names.push(name_locks::Name::Url(&r.new.dedupe_hash));
    }
    name_locks::lock(&*tx, names).await?;
    let leased = if rows.iter().any(|r| r.keep_id.is_some()) {
        ids::live_leases(&*tx, LINK_IDS).await?
    } else {
        Vec::new()
    };
    let mut out = Vec::with_capacity(rows.len());
    let mut logged = false;
    let mut highest_kept: Option<u64> = None;
    // Links this call made: a later row equal to one of them is a link of
    // its own (a file may list a URL twice).
    let mut made: HashSet<u64> = HashSet::new();
    for row in rows {
        let ImportLink {
            new: mut n,
            keep_id,
            clicks,
        } = row;
        let mut kept = false;
        let mut moved = false;
        if let Some(k) = keep_id {
            match KeptId::of(&n.link.url, by_id(&*tx, k).await?.as_ref()) {
                // Another node may hand it out at any moment.
                KeptId::Free if leased.iter().any(|r| r.contains(&k)) => moved = true,
                KeptId::Free => {
                    n.link.id = k;
                    kept = true;
                }
                KeptId::Present => {
                    out.push(Imported::Present);
                    continue;
                }
                KeptId::Taken => moved = true,
            }
        }
        if !kept {
            if let Some(old) = already_stored(&*tx, &n, now).await? {
                if !made.contains(&old) {
                    out.push(Imported::Present);
                    continue;
                }
            }
        }
        n.dedupe = false;
        let id = n.link.id;
        made.insert(id);
        let outcome = insert_new(tx, n, now).await?;
        if let Inserted::New(link) | Inserted::Existing(link) = &outcome {
            if let Some((clicks, bots)) = clicks {
                set_click_totals(&*tx, id, clicks, bots).await?;
            }
            if link.alias.is_some() {
                // insert_new logged the alias.
                logged = true;
            } else if kept {
                // The code may be cached at the edge as missing.
                changes::append(&*tx, id, None, None).await?;
                logged = true;
            }
            if kept {
                highest_kept = highest_kept.max(Some(id));
            }
        }
        out.push(Imported::Written {
            outcome,
            kept,
            moved,
        });
    }
    if let Some(last) = highest_kept {
        // Last, so the allocator's row is locked only until the commit.
        ids::advance_past(&*tx, LINK_IDS, last).await?;
    }
    Ok(Written { out, logged })
}

#[async_trait]
impl ImportStore for PgStore {
    async fn import_links(&self, rows: Vec<ImportLink>, now: i64) -> StoreResult<Vec<Imported>> {
        let result: StoreResult<Vec<Imported>> = async {
            let mut client = self.pg().get().await?;
            let mut tx = client
                .transaction()
                .await
                .map_err(failed("starting an import"))?;
            let written = write_rows(&mut tx, rows, now).await?;
            commit(tx).await?;
            if written.logged {
                self.pg.wake(&client).await;
            }
            Ok(written.out)
        }
        .await;
        counted(self.stats(), result)
    }

    async fn aliases_taken(&self, aliases: Vec<String>) -> StoreResult<HashMap<String, String>> {
        let client = self.pg().get().await?;
        let st = client
            .prepare_cached("SELECT alias, url FROM links WHERE alias = ANY($1)")
            .await
            .map_err(failed("preparing an alias lookup"))?;
        let rows = client
            .query(&st, &[&aliases])
            .await
            .map_err(failed("looking up aliases"))?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    }
}
