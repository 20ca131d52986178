//! [`ImportStore`] over SQLite: the rows go as one bulk job (a transaction
//! of its own on the writer thread, with a page cache sized for it).

use std::collections::{HashMap, HashSet};

use async_trait::async_trait;
use rusqlite::Connection;

use super::link_writer::LinkWriter;
use super::links::insert_new;
use crate::store::import::visible;
use crate::store::sqlite::{changes, links as table, SqliteStore};
use crate::store::{ImportLink, ImportStore, Imported, Inserted, KeptId, NewLink, StoreResult};

/// The link a row was already imported as: one with the row's alias and
/// URL (also when disabled), else a live link made from the same URL and
/// options.
fn already_stored(
    w: &mut LinkWriter,
    new: &NewLink,
    now: i64,
    sees: Option<i64>,
) -> StoreResult<Option<u64>> {
    if let Some(alias) = &new.link.alias {
        if let Some(old) = table::by_alias(w.conn, alias)? {
            if old.url == new.link.url && visible(sees, old.team_id) {
                return Ok(Some(old.id));
            }
        }
    }
    Ok(w.by_dedupe_hash(&new.dedupe_hash, now)?.map(|l| l.id))
}

/// Stores the rows inside the import's transaction.
fn write_rows(c: &Connection, rows: Vec<ImportLink>, now: i64) -> StoreResult<Vec<Imported>> {
    let mut out = Vec::with_capacity(rows.len());
    // Links this call made: a later row equal to one of them is a link of
    // its own (a file may list a URL twice).
    let mut made: HashSet<u64, foldhash::fast::RandomState> = HashSet::default();
    let mut w = LinkWriter::new(c)?;
    for row in rows {
        let ImportLink {
            new: mut n,
            keep_id,
            advance: _,
            clicks,
            sees,
        } = row;
        let mut kept = false;
        let mut moved = false;
        if let Some(k) = keep_id {
            match KeptId::of(&n.link.url, table::by_id(c, k)?.as_ref(), sees) {
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
            if let Some(old) = already_stored(&mut w, &n, now, sees)? {
                if !made.contains(&old) {
                    out.push(Imported::Present);
                    continue;
                }
            }
        }
        n.dedupe = false;
        let id = n.link.id;
        made.insert(id);
        let outcome = insert_new(&mut w, n, now)?;
        if let Inserted::New(link) | Inserted::Existing(link) = &outcome {
            if let Some((clicks, bots)) = clicks {
                table::set_click_totals(c, id, clicks, bots)?;
            }
            if kept && link.alias.is_none() {
                // The code may be cached at the edge as missing.
                changes::record(c, id, None, None)?;
            }
        }
        out.push(Imported::Written {
            outcome,
            kept,
            moved,
        });
    }
    Ok(out)
}

#[async_trait]
impl ImportStore for SqliteStore {
    async fn import_links(&self, rows: Vec<ImportLink>, now: i64) -> StoreResult<Vec<Imported>> {
        self.write_bulk(move |c| write_rows(c, rows, now)).await
    }

    async fn aliases_taken(
        &self,
        aliases: Vec<String>,
        sees: Option<i64>,
    ) -> StoreResult<HashMap<String, Option<String>>> {
        self.read(move |c| {
            let mut taken = HashMap::new();
            for a in aliases {
                if let Some(l) = table::by_alias(c, &a)? {
                    taken.insert(a, visible(sees, l.team_id).then_some(l.url));
                }
            }
            Ok(taken)
        })
        .await
    }
}
