//! The link operations the API, the admin UI and the CLI share: create
//! (one or a batch), read, list, edit, delete. Requests are judged by
//! [`LinkRules`] before the write is handed to the writer thread; every
//! write that the edge must see ends with [`Edge`].

use std::sync::Arc;

use rusqlite::Connection;

use super::error::LinkError;
use super::input::{CreateLink, UpdateLink, MAX_BATCH};
use super::loops::{refuse_alias_targets, refuse_own_alias};
use super::rules::{LinkRules, Prepared};
use crate::codes::{self, CodeRef};
use crate::edge::{Edge, LinkChange};
use crate::ids::IdSegments;
use crate::metrics::Metrics;
use crate::store::links::{self as table, Link};
use crate::store::{unix_now, Store, StoreError, StoreResult};

/// What the link operations work with, borrowed from the daemon's state
/// for one call (see `App::links`).
#[derive(Debug, Clone, Copy)]
pub struct Links<'a> {
    /// The rules requests are judged by.
    pub rules: &'a LinkRules,
    /// Where links are stored.
    pub store: &'a Store,
    /// Where new links get their ids.
    pub ids: &'a Arc<IdSegments>,
    /// Told about every change the nginx workers must see.
    pub edge: Edge<'a>,
    /// Counts links created.
    pub metrics: &'a Metrics,
}

/// Result of a create.
#[derive(Debug, Clone)]
pub enum Created {
    /// A new link.
    New(Link),
    /// `dedupe` found this existing link.
    Existing(Link),
}

impl Created {
    /// The link either way.
    pub fn link(&self) -> &Link {
        match self {
            Created::New(l) | Created::Existing(l) => l,
        }
    }
}

impl Links<'_> {
    /// Creates one link.
    pub async fn create(
        &self,
        req: &CreateLink,
        created_by: Option<&str>,
    ) -> Result<Created, LinkError> {
        let now = unix_now();
        let prepared = self.rules.prepare(req, created_by, now)?;
        let id = self.ids.next().await?;
        let created = self
            .store
            .write(move |c| insert_prepared(c, id, prepared, now))
            .await??;
        if let Created::New(link) = &created {
            self.count_created(1);
            // A new link is likely to be visited soon.
            self.store.cache().put(Arc::new(link.clone()));
            self.edge.link_changed(None, Some(link)).await;
        }
        Ok(created)
    }

    /// Creates many links in one transaction; one result per item, in order.
    pub async fn create_batch(
        &self,
        items: &[CreateLink],
        created_by: Option<&str>,
    ) -> Result<Vec<Result<Created, LinkError>>, LinkError> {
        if items.len() > MAX_BATCH {
            return Err(LinkError::BatchTooLarge(items.len()));
        }
        let now = unix_now();
        let prepared: Vec<Result<Prepared, LinkError>> = items
            .iter()
            .map(|req| self.rules.prepare(req, created_by, now))
            .collect();
        let valid = prepared.iter().filter(|p| p.is_ok()).count();
        let ids = self.ids.take(valid).await?;
        let results = self
            .store
            .write(move |c| {
                let mut ids = ids.into_iter();
                let mut out = Vec::with_capacity(prepared.len());
                for p in prepared {
                    match p {
                        Ok(p) => {
                            let id = ids.next().expect("one id per valid item");
                            out.push(insert_prepared(c, id, p, now)?);
                        }
                        Err(e) => out.push(Err(e)),
                    }
                }
                Ok(out)
            })
            .await?;
        let new: Vec<LinkChange<'_>> = results
            .iter()
            .filter_map(|r| match r {
                Ok(Created::New(l)) => Some(LinkChange::new(None, Some(l))),
                _ => None,
            })
            .collect();
        self.count_created(new.len());
        self.edge.links_changed(new).await;
        Ok(results)
    }

    /// The current link behind a code or alias, fresh from the database,
    /// with every acknowledged click in its totals (folded or not).
    pub async fn get(&self, code: &str) -> Result<Link, LinkError> {
        let by = match codes::resolve(&self.rules.codec, code) {
            CodeRef::Id(id) => Ok(id),
            CodeRef::Alias(alias) => Err(alias),
            CodeRef::Invalid => return Err(LinkError::NotFound(code.to_string())),
        };
        let link = self
            .store
            .read_counted(move |c, clicks| {
                let link = match &by {
                    Ok(id) => table::by_id(c, *id)?,
                    Err(alias) => table::by_alias(c, alias)?,
                };
                Ok(link.map(|mut l| {
                    clicks.apply(&mut l);
                    l
                }))
            })
            .await?;
        link.ok_or_else(|| LinkError::NotFound(code.to_string()))
    }

    /// Edits a link; the edge is told to drop it before this returns.
    pub async fn update(&self, code: &str, patch: UpdateLink) -> Result<Link, LinkError> {
        let id = self.resolve_id(code).await?;
        let now = unix_now();
        let mut checked = self.rules.check_patch(&patch, now);
        let alias_targets = checked.take_alias_targets();
        let served = self.rules.served.clone();
        let code_owned = code.to_string();
        let pending = Arc::clone(self.store.pending_clicks());
        let (old, new) = self
            .store
            .write(move |c| {
                let Some(old) = table::by_id(c, id)? else {
                    return Ok(Err(LinkError::NotFound(code_owned)));
                };
                let mut new = old.clone();
                if let Err(e) = checked.apply(&mut new, now) {
                    return Ok(Err(e));
                }
                let refused = match refuse_alias_targets(c, &alias_targets, new.alias.as_deref())? {
                    Some(e) => Some(e),
                    None if new.alias != old.alias => refuse_own_alias(&served, &new),
                    None => None,
                };
                if let Some(e) = refused {
                    return Ok(Err(e));
                }
                match table::update(c, &new, old.alias.as_deref()) {
                    Ok(()) => {
                        // The reply shows every acknowledged click.
                        crate::store::clicks::with_overlay(c, &pending, |_, clicks| {
                            clicks.apply(&mut new);
                            Ok(())
                        })?;
                        Ok(Ok((old, new)))
                    }
                    Err(StoreError::Conflict(_)) => Ok(Err(LinkError::AliasTaken(
                        new.alias.clone().unwrap_or_default(),
                    ))),
                    Err(e) => Err(e),
                }
            })
            .await??;
        self.edge.link_changed(Some(&old), Some(&new)).await;
        Ok(new)
    }

    /// Deletes a link; the edge is told before this returns.
    pub async fn delete(&self, code: &str) -> Result<Link, LinkError> {
        let id = self.resolve_id(code).await?;
        let deleted = self
            .store
            .write(move |c| table::delete(c, id))
            .await?
            .ok_or_else(|| LinkError::NotFound(code.to_string()))?;
        self.edge.link_changed(Some(&deleted), None).await;
        Ok(deleted)
    }

    /// Finds the id behind a code or alias (database, not cache).
    async fn resolve_id(&self, code: &str) -> Result<u64, LinkError> {
        match codes::resolve(&self.rules.codec, code) {
            CodeRef::Id(id) => Ok(id),
            CodeRef::Alias(alias) => {
                let found = self.store.read(move |c| table::by_alias(c, &alias)).await?;
                found
                    .map(|l| l.id)
                    .ok_or_else(|| LinkError::NotFound(code.to_string()))
            }
            CodeRef::Invalid => Err(LinkError::NotFound(code.to_string())),
        }
    }

    /// Counts `n` new links for `/metrics`.
    pub(crate) fn count_created(&self, n: usize) {
        self.metrics.links_created.inc_by(n as u64);
    }
}

/// Inserts one prepared link inside the caller's transaction. An alias
/// conflict rolls back only this item.
pub(crate) fn insert_prepared(
    conn: &Connection,
    id: u64,
    prepared: Prepared,
    now: i64,
) -> StoreResult<Result<Created, LinkError>> {
    if prepared.dedupe {
        if let Some(existing) = table::by_dedupe_hash(conn, &prepared.dedupe_hash, now)? {
            return Ok(Ok(Created::Existing(existing)));
        }
    }
    let mut link = prepared.link;
    link.id = id;
    if let Some(e) = refuse_alias_targets(conn, &prepared.alias_targets, link.alias.as_deref())? {
        return Ok(Err(e));
    }
    if link.alias.is_none() {
        // Only an alias can conflict; anything else fails the whole job.
        table::insert(conn, &link, Some(&prepared.dedupe_hash))?;
        return Ok(Ok(Created::New(link)));
    }
    conn.execute_batch("SAVEPOINT item")?;
    match table::insert(conn, &link, Some(&prepared.dedupe_hash)) {
        Ok(()) => {
            conn.execute_batch("RELEASE item")?;
            Ok(Ok(Created::New(link)))
        }
        Err(e) => {
            conn.execute_batch("ROLLBACK TO item; RELEASE item")?;
            match e {
                StoreError::Conflict(_) => Ok(Err(LinkError::AliasTaken(
                    link.alias.clone().unwrap_or_default(),
                ))),
                e => Err(e),
            }
        }
    }
}
