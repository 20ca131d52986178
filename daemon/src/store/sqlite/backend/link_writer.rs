//! What a job that writes links (a batch, an import chunk, a create) holds
//! for all of them on the writer thread: the insert and the dedupe probe,
//! each prepared once (the probe when first needed: most creates never
//! ask for it), and the webhook subscriptions, read once per team.
//! Taking the two statements from the connection's statement cache for
//! every link (hashing their SQL text, the cache's LRU, returning them)
//! cost about 8 % of an import's instructions (bench/callgrind_bulk.py).

use rusqlite::{CachedStatement, Connection};

use crate::store::sqlite::links as table;
use crate::store::sqlite::webhooks::Listeners;
use crate::store::{Link, StoreResult, WebhookEvent};

pub(super) struct LinkWriter<'c> {
    pub(super) conn: &'c Connection,
    insert: CachedStatement<'c>,
    by_dedupe: Option<CachedStatement<'c>>,
    listeners: Listeners,
}

impl<'c> LinkWriter<'c> {
    /// For one job, inside its transaction: no webhook changes while it
    /// lives (see [`Listeners`]).
    pub(super) fn new(conn: &'c Connection) -> StoreResult<Self> {
        Ok(LinkWriter {
            conn,
            insert: conn.prepare_cached(table::INSERT)?,
            by_dedupe: None,
            listeners: Listeners::default(),
        })
    }

    /// [`table::insert`].
    pub(super) fn insert(&mut self, link: &Link, dedupe_hash: &[u8]) -> StoreResult<()> {
        table::insert_with(self.conn, &mut self.insert, link, Some(dedupe_hash))
    }

    /// [`table::by_dedupe_hash`].
    pub(super) fn by_dedupe_hash(&mut self, hash: &[u8], now: i64) -> StoreResult<Option<Link>> {
        let st = match self.by_dedupe.take() {
            Some(st) => self.by_dedupe.insert(st),
            None => self
                .by_dedupe
                .insert(self.conn.prepare_cached(table::BY_DEDUPE_HASH)?),
        };
        table::by_dedupe_hash_with(st, hash, now)
    }

    /// Queues the `link.created` deliveries of `link`.
    pub(super) fn created(&mut self, link: &Link, now: i64) -> StoreResult<()> {
        self.listeners
            .link_event(self.conn, WebhookEvent::Created, link, now)
    }
}
