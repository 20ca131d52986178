//! Takedowns: every link to a host, or made by one key or user, switched
//! off in one write, with the record (who, when, why) that undoes it.

use std::sync::Arc;

use async_trait::async_trait;

use crate::store::StoreResult;

/// Which links a takedown covers.
#[derive(Clone)]
pub enum Matcher {
    /// Links whose `created_by` is this principal (`key:3`, `user:alice`,
    /// `app:…`, `cli`); for `user:NAME`, also the links of that user's
    /// keys.
    Creator(String),
    /// Links whose stored URL passes `test`. `contains` (lower case), when
    /// given, is a substring every such URL holds, so the store reads only
    /// those rows.
    Urls {
        contains: Option<String>,
        test: Arc<dyn Fn(&str) -> bool + Send + Sync>,
    },
}

impl std::fmt::Debug for Matcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Matcher::Creator(c) => write!(f, "Creator({c:?})"),
            Matcher::Urls { contains, .. } => write!(f, "Urls(contains {contains:?})"),
        }
    }
}

/// A takedown to make.
#[derive(Debug, Clone)]
pub struct NewTakedown {
    /// `host`, `creator` or `config` (the allow/block lists changed).
    pub kind: &'static str,
    /// What was taken down, as people read it: the host, the creator, or
    /// the lists.
    pub selector: String,
    /// Why, as given.
    pub reason: String,
    /// Who asked (`created_by` form).
    pub by: String,
    /// Unix seconds.
    pub at: i64,
    /// The links it covers.
    pub matcher: Matcher,
    /// Switch them off; else only record them (a flag).
    pub switch_off: bool,
    /// Skip it (`None`) when the newest takedown of this kind has the same
    /// selector: the lists were applied already, perhaps by another node.
    pub once: bool,
    /// With `once`: skip it too when no takedown of this kind exists yet
    /// (lists that refuse nothing need no record until they follow others).
    pub unless_first: bool,
}

/// A takedown as recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Takedown {
    pub id: i64,
    pub kind: String,
    pub selector: String,
    pub reason: String,
    pub created_by: String,
    pub created_at: i64,
    /// Links that matched (switched off before or not).
    pub matched: u64,
    /// Links this takedown switched off.
    pub disabled: u64,
    /// When and by whom it was undone.
    pub undone_at: Option<i64>,
    pub undone_by: Option<String>,
    /// Links the undo switched back on.
    pub restored: Option<u64>,
}

/// A link whose state a takedown or its undo changed: how the edge knows
/// it.
pub type ChangedLink = (u64, Option<String>);

/// One link a takedown matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TakedownLink {
    pub link_id: u64,
    /// The takedown switched it off (else it only recorded it: off
    /// before, or a flag).
    pub switched_off: bool,
    /// The link as stored now; `None` once deleted.
    pub alias: Option<String>,
    pub url: Option<String>,
}

/// What [`TakedownStore::take_down`] did.
#[derive(Debug, Clone)]
pub struct TakenDown {
    pub record: Takedown,
    /// The links switched off (the edge must drop them).
    pub changed: Vec<ChangedLink>,
}

/// What [`TakedownStore::undo_takedown`] did.
#[derive(Debug, Clone)]
pub enum Undone {
    /// No takedown has that id.
    NotFound,
    /// It was undone before; nothing changed.
    Already(Takedown),
    /// Undone now.
    Done {
        record: Takedown,
        /// The links switched back on.
        changed: Vec<ChangedLink>,
    },
}

/// Takedowns and their undo.
#[async_trait]
pub trait TakedownStore: Send + Sync {
    /// In one transaction: records the takedown, lists every link it
    /// matches and switches off those still on, logging each change for the
    /// edge. `None` when `once` found it applied already.
    async fn take_down(&self, t: NewTakedown) -> StoreResult<Option<TakenDown>>;

    /// In one transaction: switches back on the links of takedown `id`
    /// that a takedown switched off (this one, or one undone before), that
    /// are still off and that no other takedown in force covers, and
    /// records who undid it.
    async fn undo_takedown(&self, id: i64, by: String, at: i64) -> StoreResult<Undone>;

    /// The newest takedowns first, at most `limit`.
    async fn takedowns(&self, limit: u32) -> StoreResult<Vec<Takedown>>;

    /// The hosts of the host takedowns in force (their selectors, in
    /// normal form): new links to them are refused.
    async fn taken_down_hosts(&self) -> StoreResult<Vec<String>>;

    /// One takedown.
    async fn takedown(&self, id: i64) -> StoreResult<Option<Takedown>>;

    /// The links takedown `id` matched, by link id after `after`, at most
    /// `limit`.
    async fn takedown_links(
        &self,
        id: i64,
        after: u64,
        limit: u32,
    ) -> StoreResult<Vec<TakedownLink>>;
}
