//! Links: what clients send ([`input`]), the rules it must pass
//! ([`rules`], [`patch`]), the operations the API, the admin UI and the CLI
//! share ([`ops`], [`import`]), what the API shows ([`view`]) and what the
//! edge gets for a code ([`lookup`]).
//!
//! Validation needs only [`LinkRules`], built once at startup; operations
//! work on [`Links`], borrowed from the daemon's state (`App::links`).

pub mod blocked;
pub mod csv_format;
pub mod gate;
pub mod import;
pub mod input;
pub mod list;
pub mod lookup;
pub mod loops;
pub mod ops;
pub mod password;
pub mod patch;
pub mod rules;
pub mod team;
pub mod title;
pub mod view;

pub use import::{ImportError, ImportExtra, ImportOutcome, ImportRow, MAX_IMPORT};
pub use input::MAX_VISITS;
pub use input::{
    parse_time, CreateLink, RenewInput, TargetsInput, TimeInput, UpdateLink, VariantInput,
    MAX_BATCH,
};
pub use list::Page;
pub use lookup::{edge_result, EdgeMisses};
pub use loops::ServedBases;
pub use ops::{Created, Links};
pub use password::LinkPassword;
pub use patch::CheckedPatch;
pub use rules::{LinkRules, Prepared, MAX_TAGS, MAX_TAG_LEN};
pub use view::LinkView;

/// The pieces [`Links`] borrows, opened on a temporary directory, for the
/// unit tests of this module.
#[cfg(test)]
pub(crate) mod fixture {
    use std::path::Path;
    use std::sync::Arc;

    use shortlink_core::{Codec, DeploymentKey};

    use super::{LinkRules, Links};
    use crate::config::Config;
    use crate::edge::Edge;
    use crate::events::EventHub;
    use crate::ids::IdSegments;
    use crate::metrics::Metrics;
    use crate::store::sqlite::SqliteStore;
    use crate::store::Store;

    /// What `App` holds for the link operations.
    pub struct Parts {
        pub store: Store,
        pub ids: Arc<IdSegments>,
        pub rules: LinkRules,
        pub hub: EventHub,
        pub metrics: Metrics,
    }

    impl Parts {
        /// A fresh database in `dir` and the default configuration.
        pub fn open(dir: &Path) -> Self {
            let config = Config::default();
            let store = Store::from(SqliteStore::open(&dir.join("links.db"), 2, 100).unwrap());
            let floor = Codec::first_id_of_length(config.min_length);
            let ids = IdSegments::new(store.clone(), floor, 100, 2);
            let codec = Codec::new(&DeploymentKey::from_bytes([7; 32]));
            Self {
                rules: LinkRules::new(&config, codec),
                store,
                ids,
                hub: EventHub::default(),
                metrics: Metrics::default(),
            }
        }

        /// The operations over these pieces.
        pub fn links(&self) -> Links<'_> {
            Links {
                rules: &self.rules,
                store: &self.store,
                ids: &self.ids,
                edge: Edge::new(&self.rules.codec, &self.store, &self.hub),
                metrics: &self.metrics,
                team: super::team::TeamScope::ALL,
            }
        }
    }
}
