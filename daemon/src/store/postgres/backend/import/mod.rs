//! [`ImportStore`] over PostgreSQL, with the semantics of the SQLite
//! implementation (`crate::store::sqlite::backend::import`): the rows are written
//! in one transaction of their own; a row already stored (its exported
//! code or alias with the same URL, or a live link of the same URL and
//! options) is `Present`, so importing a file twice stores it once; a row
//! keeps its exported code's id when that id is free and no running
//! daemon's recorded lease holds it (`postgres::ids::live_leases`; the importing
//! daemon took the kept ids out of its own first). The id allocator is
//! moved past every id kept in the same transaction
//! (`postgres::ids::advance_past`), so no node leases a kept id from then on.
//!
//! Restored click totals are written as given: there is no pending-click
//! overlay on PostgreSQL (clicks are applied per batch,
//! `postgres::clicks::record_batch`), so stored totals are current.

mod known;

use std::collections::HashMap;

use async_trait::async_trait;
use deadpool_postgres::{GenericClient, Transaction};

use super::bulk::{self, NewRow};
use super::ids::LINK_IDS;
use super::links::{commit, counted};
use super::name_locks;
use super::rows::failed;
use super::PgStore;
use crate::store::import::visible;
use crate::store::postgres::ids;
use crate::store::{ImportLink, ImportStore, Imported, Inserted, KeptId, StoreResult};
use known::Known;

/// What the rows did, and whether a change was logged.
struct Written {
    out: Vec<Imported>,
    logged: bool,
}

/// Stores the rows inside the import's transaction: each is judged in
/// order against what is stored and what the rows before it made
/// ([`Known`]), then every link is written at once ([`bulk::insert`]).
async fn write_rows(
    tx: &Transaction<'_>,
    rows: Vec<ImportLink>,
    now: i64,
    holder: i64,
) -> StoreResult<Written> {
    // A row found already stored is found by its alias or its URL, so the
    // URL is claimed whether or not the row deduplicates.
    bulk::generic_plans(tx).await?;
    let mut names = Vec::new();
    for r in &rows {
        names.extend(name_locks::of_new(&r.new));
        names.push(name_locks::Name::Url(&r.new.dedupe_hash));
    }
    name_locks::lock(tx, names).await?;
    let mut known = Known::read(tx, &rows, now, holder).await?;
    let mut out = Vec::with_capacity(rows.len());
    // Per row written: its link's place in `out`, hash, clicks and whether
    // it kept its code.
    let mut written = Vec::new();
    let mut highest_kept: Option<u64> = None;
    for row in rows {
        let ImportLink {
            new: mut n,
            keep_id,
            advance,
            clicks,
            sees,
        } = row;
        let mut kept = false;
        let mut moved = false;
        if let Some(k) = keep_id {
            match KeptId::at(&n.link.url, known.link_at(k), sees) {
                // Another node may hand it out at any moment.
                KeptId::Free if known.leased.iter().any(|r| r.contains(&k)) => moved = true,
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
        if !kept && known.already_stored(&n, sees).is_some() {
            out.push(Imported::Present);
            continue;
        }
        // As a create without dedupe (`links::insert_new`).
        let outcome = if let Some(i) = known.refused_target(&n) {
            Inserted::TargetAlias(i)
        } else if let Some(alias) = n.link.alias.as_ref().filter(|a| known.alias_taken(a)) {
            Inserted::AliasTaken(alias.clone())
        } else {
            let clicks = clicks.unwrap_or((0, 0));
            known.made(&n.link, &n.dedupe_hash, clicks, now);
            if kept && advance {
                highest_kept = highest_kept.max(Some(n.link.id));
            }
            written.push((out.len(), n.dedupe_hash, clicks, kept));
            Inserted::New(n.link)
        };
        out.push(Imported::Written {
            outcome,
            kept,
            moved,
        });
    }
    let new_rows = written
        .iter()
        .filter_map(|(at, hash, clicks, kept)| match &out[*at] {
            Imported::Written {
                outcome: Inserted::New(link),
                ..
            } => Some(NewRow {
                link,
                hash,
                clicks: *clicks,
                // The code may be cached at the edge as missing.
                logged: link.alias.is_some() || *kept,
            }),
            _ => None,
        })
        .collect::<Vec<_>>();
    bulk::insert(tx, &new_rows, now).await?;
    let logged = new_rows.iter().any(|r| r.logged);
    drop(new_rows);
    if let Some(last) = highest_kept {
        // Last, so the allocator's row is locked only until the commit.
        ids::advance_past(tx, LINK_IDS, last).await?;
    }
    Ok(Written { out, logged })
}

#[async_trait]
impl ImportStore for PgStore {
    async fn import_links(&self, rows: Vec<ImportLink>, now: i64) -> StoreResult<Vec<Imported>> {
        let result: StoreResult<Vec<Imported>> = async {
            let mut client = self.pg().get().await?;
            let tx = client
                .transaction()
                .await
                .map_err(failed("starting an import"))?;
            let written = write_rows(&tx, rows, now, self.holder).await?;
            commit(tx).await?;
            if written.logged {
                self.pg.wake(&client).await;
            }
            Ok(written.out)
        }
        .await;
        counted(self.stats(), result)
    }

    async fn aliases_taken(
        &self,
        aliases: Vec<String>,
        sees: Option<i64>,
    ) -> StoreResult<HashMap<String, Option<String>>> {
        let client = self.pg().get().await?;
        let st = client
            .prepare_cached("SELECT alias, url, team_id FROM links WHERE alias = ANY($1)")
            .await
            .map_err(failed("preparing an alias lookup"))?;
        let rows = client
            .query(&st, &[&aliases])
            .await
            .map_err(failed("looking up aliases"))?;
        Ok(rows
            .iter()
            .map(|r| (r.get(0), visible(sees, r.get(2)).then(|| r.get(1))))
            .collect())
    }
}
