//! The store interface: every operation the daemon asks of its database,
//! named by what it does, with plain Rust types in and out. SQLite
//! ([`sqlite`]) and PostgreSQL ([`postgres`]) implement it; callers hold a
//! [`Store`] and never see which (`app.rs` opens one at start-up).
//!
//! The files here are the interface and what both stores share: one trait
//! per concern with its types, the error, the write counters, the cache of
//! hot links, the click aggregate and the stats tallies. They import
//! neither store (but for the contract tests, which open both); the stores
//! import them and never each other. The types in and out of the traits are
//! re-exported here; what the two implementations share beyond them is
//! reached through its module (`clicks::Aggregate`,
//! `links::variants_to_stored`, `changes::KEEP`, `webhooks::KEEP_LOG`).
//!
//! `async_trait` boxes each call's future so the traits work as `dyn`
//! objects: the implementation is chosen at start-up, not at compile time.

mod cache;
pub mod changes;
mod checks;
pub mod clicks;
#[cfg(test)]
pub(crate) mod contract;
#[cfg(test)]
mod contract_recycle;
#[cfg(test)]
pub(crate) mod contract_teams;
#[cfg(test)]
mod contract_variants;
#[cfg(test)]
pub(crate) mod contract_webhooks;
mod credentials;
mod error;
mod ids;
pub mod import;
pub mod links;
pub mod postgres;
mod recycle;
pub mod sqlite;
mod stats;
mod takedowns;
pub mod teams;
mod users;
pub mod visits;
pub mod webhooks;

use std::sync::Arc;

use async_trait::async_trait;

pub use cache::LinkCache;
pub use changes::{Change, ChangeLog, Resume};
pub use checks::{CheckResult, CheckStore, CheckTarget, LinkCheck, Recorded};
pub use clicks::{ClickStore, FoldOutcome, RangeStats, SiteFilter, SiteStats};
pub use credentials::{ApiKey, App, CredentialStore};
pub use error::{StoreError, StoreResult};
pub use ids::IdStore;
pub use import::{ImportLink, ImportStore, Imported, KeptId};
pub use links::{
    CodeRef, Inserted, Link, LinkEdit, LinkError, LinkState, LinkStore, ListQuery, ListSort,
    NewLink, Page, Updated,
};
pub use recycle::{IdRange, IdRanges, Purged, RangeState, RecycleStore};
pub use stats::StoreStats;
pub use takedowns::{
    ChangedLink, Matcher, NewTakedown, Takedown, TakedownLink, TakedownStore, TakenDown, Undone,
};
pub use teams::{Owner, Team, TeamStore};
pub use users::{User, UserStore};
pub use visits::VisitStore;
pub use webhooks::{
    clicks_payload, events_from_stored, events_to_stored, link_payload, Attempt, ClickCount,
    Delivery, DeliveryStatus, DueDelivery, FairShare, NewWebhook, Swept, UnknownEvent, Webhook,
    WebhookEvent, WebhookStore,
};

/// Everything the daemon asks of a store, plus what every store shares.
#[async_trait]
pub trait Database:
    LinkStore
    + ImportStore
    + CredentialStore
    + UserStore
    + TeamStore
    + ClickStore
    + ChangeLog
    + IdStore
    + RecycleStore
    + TakedownStore
    + CheckStore
    + WebhookStore
    + VisitStore
{
    /// The cache of hot links in front of the store.
    fn cache(&self) -> &LinkCache;

    /// Write counters, and why the store cannot write now if it cannot.
    fn stats(&self) -> &StoreStats;

    /// Deletes click batch ids recorded before `batches_before` and
    /// signatures before `signatures_before`, in one write; how many of
    /// each.
    async fn prune(
        &self,
        batches_before: i64,
        signatures_before: i64,
    ) -> StoreResult<(usize, usize)>;

    /// Finishes queued writes and closes the store; later calls fail with
    /// `StoreError::Closed`. Blocks: call it off the async threads.
    fn close(&self);
}

/// The store the daemon holds; clone freely.
#[derive(Clone)]
pub struct Store(Arc<dyn Database>);

impl Store {
    /// Holds `db`.
    pub fn new(db: Arc<dyn Database>) -> Self {
        Self(db)
    }
}

impl std::ops::Deref for Store {
    type Target = dyn Database;

    fn deref(&self) -> &Self::Target {
        &*self.0
    }
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Store")
    }
}
