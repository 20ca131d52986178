//! The link operations the API, the admin UI and the CLI share: create
//! (one or a batch), read, list, edit, delete. Requests are judged by
//! [`LinkRules`] before the write is handed to the writer thread; every
//! write that the edge must see ends with [`Edge`].

use std::sync::Arc;

use super::input::{CreateLink, UpdateLink, MAX_BATCH};
use super::loops::{alias_target_error, refuse_own_alias, AliasTarget};
use super::rules::{LinkRules, Prepared};
use super::team::TeamScope;
use crate::codes;
use crate::edge::{Edge, LinkChange};
use crate::ids::IdSegments;
use crate::metrics::Metrics;
use crate::store::{
    CodeRef, Inserted, Link, LinkEdit, LinkError, NewLink, Store, StoreError, Updated,
};
use crate::timestamp::unix_now;

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
    /// Which team's links are seen, and where new ones go.
    pub team: TeamScope,
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

impl<'a> Links<'a> {
    /// These operations as `p` may run them: only `p`'s team's links seen
    /// (unless `p` is an admin's), new links in `p`'s team.
    pub fn acting_as(self, p: &crate::auth::Principal) -> Links<'a> {
        Links {
            team: TeamScope::of(p),
            ..self
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
        let mut prepared = self.rules.prepare(req, created_by, now)?;
        if let Some(p) = &req.password {
            prepared.link.password_hash = Some(p.hash().await?);
        }
        let id = self.ids.next().await?;
        let (new, targets) = new_link(id, prepared, self.team);
        let inserted = self.store.insert_links(vec![new], now).await?;
        let inserted = inserted.into_iter().next().ok_or(StoreError::Closed)?;
        let created = created(inserted, &targets)?;
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
            return Err(LinkError::BatchTooLarge {
                got: items.len(),
                max: MAX_BATCH,
            });
        }
        let now = unix_now();
        let mut prepared: Vec<Result<Prepared, LinkError>> = items
            .iter()
            .map(|req| self.rules.prepare(req, created_by, now))
            .collect();
        for (p, req) in prepared.iter_mut().zip(items) {
            if let (Ok(ready), Some(password)) = (&mut *p, &req.password) {
                match password.hash().await {
                    Ok(h) => ready.link.password_hash = Some(h),
                    Err(e) => *p = Err(e),
                }
            }
        }
        let valid = prepared.iter().filter(|p| p.is_ok()).count();
        let ids = self.ids.take(valid).await?;
        let mut ids = ids.into_iter();
        let mut news = Vec::with_capacity(valid);
        let mut refused = Vec::with_capacity(prepared.len());
        for p in prepared {
            match p {
                Ok(p) => {
                    let id = ids.next().expect("one id per valid item");
                    news.push(new_link(id, p, self.team));
                    refused.push(None);
                }
                Err(e) => refused.push(Some(e)),
            }
        }
        let (news, targets): (Vec<NewLink>, Vec<Vec<AliasTarget>>) = news.into_iter().unzip();
        let mut written = self
            .store
            .insert_links(news, now)
            .await?
            .into_iter()
            .zip(targets);
        let results: Vec<Result<Created, LinkError>> = refused
            .into_iter()
            .map(|r| match r {
                Some(e) => Err(e),
                None => {
                    let (inserted, targets) = written.next().expect("one outcome per link");
                    created(inserted, &targets)
                }
            })
            .collect();
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
            CodeRef::Invalid => return Err(LinkError::NotFound(code.to_string())),
            by => by,
        };
        let link = self.store.find_link(by).await?;
        link.filter(|l| self.team.sees_link(l))
            .ok_or_else(|| LinkError::NotFound(code.to_string()))
    }

    /// Edits a link; the edge is told to drop it before this returns.
    pub async fn update(&self, code: &str, patch: UpdateLink) -> Result<Link, LinkError> {
        let id = self.resolve_id(code).await?;
        let now = unix_now();
        let mut checked = self.rules.check_patch(&patch, now);
        if let (false, Some(Some(p))) = (checked.is_refused(), &patch.password) {
            checked.set_password_hash(p.hash().await?);
        }
        let alias_targets = checked.take_alias_targets();
        let served = self.rules.served.clone();
        let targets = alias_targets.clone();
        let (team, missing) = (self.team, code.to_string());
        let edit = LinkEdit {
            // Judged on the stored row inside the write: a link of another
            // team is "not found" and left as it is.
            apply: Box::new(move |old: &Link| {
                if !team.sees_link(old) {
                    return Err(LinkError::NotFound(missing));
                }
                let mut new = old.clone();
                checked.apply(&mut new, now).map(|()| new)
            }),
            alias_targets: alias_targets.into_iter().map(|t| t.alias).collect(),
            check: Box::new(move |old: &Link, new: &Link| {
                if new.alias != old.alias {
                    refuse_own_alias(&served, new)
                } else {
                    None
                }
            }),
        };
        let (old, new) = match self.store.update_link(id, edit).await? {
            Updated::Done { old, new } => (old, new),
            Updated::NotFound => return Err(LinkError::NotFound(code.to_string())),
            Updated::Refused(e) => return Err(e),
            Updated::TargetAlias(i) => return Err(alias_target_error(&targets[i])),
            Updated::AliasTaken(alias) => return Err(LinkError::AliasTaken(alias)),
        };
        self.edge.link_changed(Some(&old), Some(&new)).await;
        Ok(new)
    }

    /// Deletes a link; the edge is told before this returns. A link's team
    /// never changes, so seeing it first and deleting it by id after is
    /// safe.
    pub async fn delete(&self, code: &str) -> Result<Link, LinkError> {
        let id = self.get(code).await?.id;
        let deleted = self
            .store
            .delete_link(id)
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
                let found = self.store.find_links(vec![CodeRef::Alias(alias)]).await?;
                found
                    .into_iter()
                    .flatten()
                    .next()
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

/// The store's insert of `prepared` under `id`, and the alias targets its
/// refusal may name.
/// The link goes into the scope's owner team.
pub(crate) fn new_link(
    id: u64,
    prepared: Prepared,
    team: TeamScope,
) -> (NewLink, Vec<AliasTarget>) {
    let mut link = prepared.link;
    link.id = id;
    link.team_id = team.owner;
    let new = NewLink {
        link,
        dedupe_hash: team.dedupe_hash(prepared.dedupe_hash),
        dedupe: prepared.dedupe,
        alias_targets: prepared
            .alias_targets
            .iter()
            .map(|t| t.alias.clone())
            .collect(),
    };
    (new, prepared.alias_targets)
}

/// What an insert's outcome means to the caller.
pub(crate) fn created(inserted: Inserted, targets: &[AliasTarget]) -> Result<Created, LinkError> {
    match inserted {
        Inserted::New(l) => Ok(Created::New(l)),
        Inserted::Existing(l) => Ok(Created::Existing(l)),
        Inserted::AliasTaken(alias) => Err(LinkError::AliasTaken(alias)),
        Inserted::TargetAlias(i) => Err(alias_target_error(&targets[i])),
    }
}
