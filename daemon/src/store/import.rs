//! Bulk import of links: many rows in one transaction of their own.

use std::collections::HashMap;

use async_trait::async_trait;

use super::links::{Inserted, NewLink};
use crate::store::StoreResult;

/// One row of an import, judged by the link rules already.
#[derive(Debug, Clone)]
pub struct ImportLink {
    /// The link, with a fresh id (used unless `keep_id` is free).
    pub new: NewLink,
    /// The id of the row's exported generated code, kept when free.
    pub keep_id: Option<u64>,
    /// A kept id moves the id allocator past it (false for an id that may
    /// lie anywhere, a code-shaped name's: leases skip it as used).
    pub advance: bool,
    /// `(clicks, bot_clicks)` totals to restore.
    pub clicks: Option<(i64, i64)>,
    /// The only team whose links the importer sees (`None`: every team).
    /// Another team's link is never "present" for a row: it is a name or
    /// a code taken, whatever its URL, so an import tells nothing of it.
    pub sees: Option<i64>,
}

/// What became of one [`ImportLink`] (kept in a list as long as the
/// rows: a box per row would cost more than the empty `Present`).
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)]
pub enum Imported {
    /// Stored before this import: its code or alias with the same URL, or
    /// a live link of the same URL and options.
    Present,
    /// Inserted (or refused) like a create.
    Written {
        /// As for a create.
        outcome: Inserted,
        /// The link kept its exported code.
        kept: bool,
        /// The exported code belongs to another link here: a new one was
        /// given.
        moved: bool,
    },
}

/// What the id an exported code stands for means for an import row, given
/// the link stored at that id: the one rule every store applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeptId {
    /// No link has it: the row keeps its code.
    Free,
    /// The same link (same URL) is there: the row is already present.
    Present,
    /// Another link has it: the row gets a new code (`moved`).
    Taken,
}

impl KeptId {
    /// The meaning of the id for a row to `url` by an importer who sees
    /// `sees`, `stored` the link at it.
    pub fn of(url: &str, stored: Option<&crate::store::Link>, sees: Option<i64>) -> Self {
        Self::at(url, stored.map(|old| (old.url.as_str(), old.team_id)), sees)
    }

    /// The same, `stored` the URL and team of the link at the id.
    pub fn at(url: &str, stored: Option<(&str, i64)>, sees: Option<i64>) -> Self {
        match stored {
            None => KeptId::Free,
            Some((old, team)) if old == url && visible(sees, team) => KeptId::Present,
            Some(_) => KeptId::Taken,
        }
    }
}

/// Whether an importer who sees `sees` sees a link of `team`.
pub fn visible(sees: Option<i64>, team: i64) -> bool {
    sees.is_none_or(|t| t == team)
}

/// Imports: one big write that does not hold up the others for long.
#[async_trait]
pub trait ImportStore: Send + Sync {
    /// Writes `rows` in one transaction of their own (a bulk write); one
    /// outcome per row, in order. A link that keeps an exported code logs
    /// its change, so an edge holding the code as missing forgets it.
    async fn import_links(&self, rows: Vec<ImportLink>, now: i64) -> StoreResult<Vec<Imported>>;

    /// For each of `aliases` that exists: the URL of the link holding it
    /// when the caller sees it (`sees`), `None` when it is another team's.
    async fn aliases_taken(
        &self,
        aliases: Vec<String>,
        sees: Option<i64>,
    ) -> StoreResult<HashMap<String, Option<String>>>;
}
