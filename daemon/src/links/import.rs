//! `shortlinkd import`: many CSV rows in one transaction, each judged like
//! a create, the bad ones reported by line.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use super::error::LinkError;
use super::input::{parse_time, CreateLink, TargetsInput, TimeInput};
use super::ops::{insert_prepared, Links};
use super::rules::Prepared;
use crate::edge::{EdgeKeys, LinkChange};
use crate::store::links as table;
use crate::store::{unix_now, StoreResult};

/// Most rows in one import call.
pub const MAX_IMPORT: usize = 50_000;

/// One CSV row of `shortlinkd import`, as the CLI sends it:
/// `[line, url, alias, expires_at, tags, extra]` (`extra` may be left out).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ImportRow(
    pub u64,
    pub String,
    pub Option<String>,
    pub Option<String>,
    pub Option<Vec<String>>,
    #[serde(default)] pub ImportExtra,
);

/// The columns of an `export` file beyond the basic four, each judged like
/// the same field of a create.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportExtra {
    /// Redirect status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirect: Option<u16>,
    /// Visit limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_visits: Option<u64>,
    /// Device targets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub targets: Option<TargetsInput>,
    /// Stored switched off.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub disabled: bool,
    /// When the link was first made (Unix seconds or RFC 3339; not in the
    /// future); absent: now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
}

/// A refused import row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportError {
    /// The row's line in the file.
    pub line: u64,
    /// The field at fault, when one is.
    pub field: Option<String>,
    /// What is wrong with the row.
    pub message: String,
}

/// What one import call did.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ImportOutcome {
    /// Rows stored as new links.
    pub imported: usize,
    /// Rows skipped because a live link made from the same URL and options
    /// was already stored before this call (a re-import).
    #[serde(default)]
    pub present: usize,
    /// Rows refused, each with its line.
    pub errors: Vec<ImportError>,
}

impl Links<'_> {
    /// Imports many rows in one transaction: every row is validated like a
    /// create, a row equal (URL and options) to a live link stored before
    /// this call is skipped and counted as present, the good ones get ids from one block and are inserted with
    /// one prepared statement, the bad ones are reported by line. Returns
    /// after the commit. Only links with an alias are announced to the edge
    /// (a new generated code cannot be cached there as missing: it was
    /// never handed out).
    pub async fn import(
        &self,
        rows: Vec<ImportRow>,
        created_by: Option<&str>,
    ) -> Result<ImportOutcome, LinkError> {
        if rows.len() > MAX_IMPORT {
            return Err(LinkError::BatchTooLarge(rows.len()));
        }
        let now = unix_now();
        let mut outcome = ImportOutcome::default();
        let mut good: Vec<(u64, Prepared)> = Vec::with_capacity(rows.len());
        for ImportRow(line, url, alias, expires_at, tags, extra) in rows {
            let req = CreateLink {
                url,
                alias,
                expires_at: expires_at.map(TimeInput::Text),
                tags,
                redirect: extra.redirect,
                max_visits: extra.max_visits,
                targets: extra.targets,
                disabled: extra.disabled.then_some(true),
                ..CreateLink::default()
            };
            let created_at = extra.created_at.as_deref().map(|t| created_at(t, now));
            let prepared = self.rules.prepare(&req, created_by, now);
            match (prepared, created_at) {
                (Err(e), _) | (_, Some(Err(e))) => outcome.errors.push(import_error(line, e)),
                (Ok(mut p), t) => {
                    if let Some(Ok(t)) = t {
                        p.link.created_at = t;
                    }
                    good.push((line, p))
                }
            }
        }
        let tried = good.len();
        let ids = self.ids.take(tried).await?;
        let (refused, aliased, present) = self
            .store
            .write_bulk(move |c| {
                let mut refused = Vec::new();
                let mut aliased = Vec::new();
                // Links this call made: a later row equal to one of them
                // is a link of its own (a file may list a URL twice).
                let mut made: HashSet<u64> = HashSet::new();
                let mut present = 0usize;
                for ((line, mut p), id) in good.into_iter().zip(ids) {
                    if let Some(old) = already_stored(c, &p, now)? {
                        if !made.contains(&old) {
                            present += 1;
                            continue;
                        }
                    }
                    p.dedupe = false;
                    made.insert(id);
                    match insert_prepared(c, id, p, now)? {
                        Ok(created) => {
                            let link = created.link();
                            if let Some(a) = &link.alias {
                                aliased.push((link.id, a.clone()));
                            }
                        }
                        Err(e) => refused.push((line, e)),
                    }
                }
                Ok((refused, aliased, present))
            })
            .await?;
        outcome.present = present;
        outcome.imported = tried - refused.len() - present;
        for (line, e) in refused {
            outcome.errors.push(import_error(line, e));
        }
        outcome.errors.sort_by_key(|e| e.line);
        self.count_created(outcome.imported);
        self.edge
            .links_changed(aliased.iter().map(|(id, alias)| LinkChange {
                old: None,
                new: Some(EdgeKeys {
                    id: *id,
                    alias: Some(alias),
                }),
            }))
            .await;
        Ok(outcome)
    }
}

/// The link a row was already imported as: one with the row's alias and
/// URL (also when disabled), else a live link made from the same URL and
/// options.
fn already_stored(c: &rusqlite::Connection, p: &Prepared, now: i64) -> StoreResult<Option<u64>> {
    if let Some(alias) = &p.link.alias {
        if let Some(old) = table::by_alias(c, alias)? {
            if old.url == p.link.url {
                return Ok(Some(old.id));
            }
        }
    }
    Ok(table::by_dedupe_hash(c, &p.dedupe_hash, now)?.map(|l| l.id))
}

/// A row's creation time: Unix seconds or RFC 3339, not after `now`.
fn created_at(t: &str, now: i64) -> Result<i64, LinkError> {
    let bad = |message: String| LinkError::Invalid {
        field: "created_at",
        code: "invalid_created_at",
        message,
    };
    let t = parse_time(t).map_err(bad)?;
    if t > now {
        return Err(bad(format!("created_at {t} is in the future")));
    }
    Ok(t)
}

/// A refused row as the CLI reports it: its line, its field, the message.
fn import_error(line: u64, e: LinkError) -> ImportError {
    let field = match &e {
        LinkError::Invalid { field, .. } => Some(field.to_string()),
        LinkError::AliasTaken(_) => Some("alias".to_string()),
        _ => None,
    };
    let message = match &e {
        LinkError::Invalid { message, .. } => message.clone(),
        other => other.to_string(),
    };
    ImportError {
        line,
        field,
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::links::fixture::Parts;
    use crate::store::links as table;

    #[tokio::test]
    async fn import_commits_good_rows_and_names_bad_lines() {
        let dir = tempfile::tempdir().unwrap();
        let parts = Parts::open(dir.path());
        let links = parts.links();
        let row = |line, url: &str, alias: Option<&str>| {
            ImportRow(
                line,
                url.into(),
                alias.map(Into::into),
                None,
                None,
                ImportExtra::default(),
            )
        };
        let out = links
            .import(
                vec![
                    row(2, "https://e.com/1", Some("imp")),
                    row(3, "nope", None),
                    row(4, "https://e.com/2", Some("imp")),
                    row(5, "https://e.com/3", None),
                ],
                Some("cli"),
            )
            .await
            .unwrap();
        assert_eq!(out.imported, 2);
        let lines: Vec<(u64, Option<&str>)> = out
            .errors
            .iter()
            .map(|e| (e.line, e.field.as_deref()))
            .collect();
        assert_eq!(lines, vec![(3, Some("url")), (4, Some("alias"))]);
        assert_eq!(links.get("imp").await.unwrap().url, "https://e.com/1");
        let n = parts.store.read(table::count).await.unwrap();
        assert_eq!(n, 2);
        parts.store.close();
    }

    #[tokio::test]
    async fn a_second_import_counts_rows_already_present() {
        let dir = tempfile::tempdir().unwrap();
        let parts = Parts::open(dir.path());
        let links = parts.links();
        let rows = || {
            let off = ImportExtra {
                disabled: true,
                ..ImportExtra::default()
            };
            vec![
                ImportRow(2, "https://e.com/a".into(), None, None, None, off.clone()),
                ImportRow(
                    3,
                    "https://e.com/b".into(),
                    None,
                    None,
                    None,
                    Default::default(),
                ),
                ImportRow(
                    4,
                    "https://e.com/b".into(),
                    None,
                    None,
                    None,
                    Default::default(),
                ),
                ImportRow(
                    5,
                    "https://e.com/c".into(),
                    Some("imp-off".into()),
                    None,
                    None,
                    off,
                ),
            ]
        };
        let first = links.import(rows(), Some("cli")).await.unwrap();
        assert_eq!((first.imported, first.present), (4, 0), "{first:?}");
        let again = links.import(rows(), Some("cli")).await.unwrap();
        // The un-aliased disabled row cannot be recognised (dedupe finds
        // live links only); the others are present.
        assert_eq!((again.imported, again.present), (1, 3), "{again:?}");
        assert!(again.errors.is_empty(), "{again:?}");
        let n = parts.store.read(table::count).await.unwrap();
        assert_eq!(n, 5);
        parts.store.close();
    }
}
