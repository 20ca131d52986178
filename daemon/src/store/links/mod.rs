//! Links: create, read, edit, delete, list and count them.

mod error;
mod link;
mod list;

use async_trait::async_trait;

pub(crate) use error::invalid;
pub use error::LinkError;
pub use link::{
    country_targets_from_stored, country_targets_to_stored, variants_from_stored,
    variants_to_stored, Link, LinkState,
};
pub use list::{ListQuery, ListSort};

use crate::store::StoreResult;

/// What a code or alias string refers to: the key a link is looked up by
/// (`crate::codes::resolve` reads it from what a client typed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CodeRef {
    /// A generated code: the id it decodes to.
    Id(u64),
    /// Not a generated code, but shaped like an alias.
    Alias(String),
    /// Neither: nothing can match.
    Invalid,
}

/// A link to insert, judged by the link rules already.
#[derive(Debug, Clone)]
pub struct NewLink {
    /// The link, its id filled in.
    pub link: Link,
    /// Hash of the normalized URL and options (stored for `dedupe`).
    pub dedupe_hash: [u8; 32],
    /// Answer an existing live link with the same hash instead.
    pub dedupe: bool,
    /// Aliases the link's targets lead to: the insert is refused when one
    /// exists or is the link's own alias.
    pub alias_targets: Vec<String>,
}

/// What became of one [`NewLink`].
#[derive(Debug, Clone)]
pub enum Inserted {
    /// Stored.
    New(Link),
    /// `dedupe` found this live link; nothing was stored.
    Existing(Link),
    /// The alias belongs to another link; nothing was stored.
    AliasTaken(String),
    /// `alias_targets[i]` is an existing alias or the link's own: nothing
    /// was stored.
    TargetAlias(usize),
}

/// Makes the edited link from the stored one, or says why not.
pub type ApplyEdit = Box<dyn FnOnce(&Link) -> Result<Link, LinkError> + Send>;

/// A last refusal from the old and the edited link.
pub type CheckEdit = Box<dyn FnOnce(&Link, &Link) -> Option<LinkError> + Send>;

/// An edit of one link, run inside the write that stores it.
pub struct LinkEdit {
    /// The edited link from the stored one, or why the edit is refused.
    pub apply: ApplyEdit,
    /// Aliases the edited targets lead to, refused like
    /// [`NewLink::alias_targets`].
    pub alias_targets: Vec<String>,
    /// Run after the alias targets passed: a last refusal from the old and
    /// the edited link.
    pub check: CheckEdit,
}

/// What became of a [`LinkEdit`] (made once per edit and moved once: the
/// size of `Done` costs nothing worth a box).
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub enum Updated {
    /// No link has that id.
    NotFound,
    /// `apply` or `check` refused it; nothing was stored.
    Refused(LinkError),
    /// `alias_targets[i]` is refused (see [`Inserted::TargetAlias`]).
    TargetAlias(usize),
    /// The new alias belongs to another link.
    AliasTaken(String),
    /// Stored: the link before, and after (every acknowledged click in its
    /// totals).
    Done {
        /// As it was stored.
        old: Link,
        /// As it is stored now.
        new: Link,
    },
}

/// One page of links and how many match in all.
#[derive(Debug, Clone)]
pub struct Page {
    /// Up to `limit` links, in the query's order.
    pub links: Vec<Link>,
    /// Matching links across every page.
    pub total: u64,
    /// Where the next page starts when this one is full: the last link's
    /// `(sort key, id)` by the stored counts.
    pub next: Option<(i64, u64)>,
}

/// The links table and everything written with it.
#[async_trait]
pub trait LinkStore: Send + Sync {
    /// Inserts links in one transaction (grouped with other writes), each
    /// refused alone; one outcome per link, in order. Each new link's
    /// change is logged in the same transaction.
    async fn insert_links(&self, links: Vec<NewLink>, now: i64) -> StoreResult<Vec<Inserted>>;

    /// Edits link `id` in one transaction; the change is logged with it.
    async fn update_link(&self, id: u64, edit: LinkEdit) -> StoreResult<Updated>;

    /// Deletes link `id` (and its clicks); the deleted link, if there was
    /// one. The change is logged in the same transaction.
    async fn delete_link(&self, id: u64) -> StoreResult<Option<Link>>;

    /// The link behind `code` with every acknowledged click in its totals
    /// (folded or not).
    async fn find_link(&self, code: CodeRef) -> StoreResult<Option<Link>>;

    /// The links behind `codes` as stored (totals of folded clicks), read
    /// in one read transaction: a burst of edge misses costs one read.
    async fn find_links(&self, codes: Vec<CodeRef>) -> StoreResult<Vec<Option<Link>>>;

    /// [`LinkStore::find_links`] done on the caller's thread, without
    /// waiting for anything but the reads (SQLite's inline readers), or
    /// `None` when this store cannot now: then use `find_links`.
    fn find_links_now(&self, _codes: &[CodeRef]) -> Option<Vec<Option<Link>>> {
        None
    }

    /// One page of `query`, every acknowledged click in the totals, and
    /// how many links match in all.
    async fn list_links(&self, query: ListQuery) -> StoreResult<Page>;

    /// One page of `query` (clicks included) without the total: exports.
    async fn links_page(&self, query: ListQuery) -> StoreResult<Vec<Link>>;

    /// Every stored link.
    async fn count_links(&self) -> StoreResult<u64>;

    /// Links by state (`active`, `expired`, ...) at `now`.
    async fn count_links_by_state(&self, now: i64) -> StoreResult<Vec<(String, u64)>>;
}
