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
    /// `(clicks, bot_clicks)` totals to restore.
    pub clicks: Option<(i64, i64)>,
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
    /// The meaning of the id for a row to `url`, `stored` the link at it.
    pub fn of(url: &str, stored: Option<&crate::store::Link>) -> Self {
        Self::at(url, stored.map(|old| old.url.as_str()))
    }

    /// The same, `stored_url` the URL of the link at the id.
    pub fn at(url: &str, stored_url: Option<&str>) -> Self {
        match stored_url {
            None => KeptId::Free,
            Some(old) if old == url => KeptId::Present,
            Some(_) => KeptId::Taken,
        }
    }
}

/// Imports: one big write that does not hold up the others for long.
#[async_trait]
pub trait ImportStore: Send + Sync {
    /// Writes `rows` in one transaction of their own (a bulk write); one
    /// outcome per row, in order. A link that keeps an exported code logs
    /// its change, so an edge holding the code as missing forgets it.
    async fn import_links(&self, rows: Vec<ImportLink>, now: i64) -> StoreResult<Vec<Imported>>;

    /// The URL of the link holding each of `aliases` that exists.
    async fn aliases_taken(&self, aliases: Vec<String>) -> StoreResult<HashMap<String, String>>;
}
