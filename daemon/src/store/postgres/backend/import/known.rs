//! What an import chunk's rows are judged against: the links stored
//! before the chunk that its rows name (their kept ids, aliases, alias
//! targets and dedupe hashes), read in one statement a kind and sent at
//! once, and the links the chunk made since. Each row sees the database
//! as if every earlier row had been written before it was looked at, as
//! the statement-per-row import (and SQLite's) does.

use std::collections::{HashMap, HashSet};
use std::ops::Range;

use deadpool_postgres::GenericClient;

use super::super::ids::LINK_IDS;
use super::super::rows::{bigint, failed};
use crate::store::import::visible;
use crate::store::postgres::ids;
use crate::store::{ImportLink, Link, NewLink, StoreResult};

/// The links a chunk's rows name, stored or made by the chunk.
pub(super) struct Known {
    /// The URL and team at each kept id asked for.
    urls: HashMap<u64, (String, i64)>,
    /// `(id, url, team)` of the link holding each alias asked for.
    aliases: HashMap<String, (u64, String, i64)>,
    /// The lowest id of a live link per dedupe hash.
    live: HashMap<[u8; 32], u64>,
    /// The links this chunk made.
    made: HashSet<u64>,
    /// The id ranges other daemons hold leased (read when a row keeps an id).
    pub leased: Vec<Range<u64>>,
}

impl Known {
    /// Reads what `rows` name; the caller holds their name locks.
    /// What the database holds for `rows`; `holder` is the importing
    /// daemon's (its own leases do not hold a kept id back).
    pub(super) async fn read(
        c: &impl GenericClient,
        rows: &[ImportLink],
        now: i64,
        holder: i64,
    ) -> StoreResult<Self> {
        let mut kept = Vec::new();
        let mut aliases: Vec<&str> = Vec::new();
        let mut hashes: HashSet<&[u8]> = HashSet::new();
        for r in rows {
            if let Some(k) = r.keep_id {
                kept.push(bigint(k)?);
            }
            aliases.extend(r.new.link.alias.as_deref());
            aliases.extend(r.new.alias_targets.iter().map(String::as_str));
            hashes.insert(&r.new.dedupe_hash);
        }
        let hashes: Vec<&[u8]> = hashes.into_iter().collect();
        let leases = async {
            if kept.is_empty() {
                return Ok(Vec::new());
            }
            Ok(ids::live_leases(c, LINK_IDS, holder).await?)
        };
        // Sent together: the client pipelines them.
        let (leased, urls, aliases, live) = tokio::try_join!(
            leases,
            urls_at(c, &kept),
            holders_of(c, &aliases),
            live_by_hash(c, &hashes, now),
        )?;
        Ok(Self {
            urls,
            aliases,
            live,
            made: HashSet::new(),
            leased,
        })
    }

    /// The URL and team of the link at `id`.
    pub(super) fn link_at(&self, id: u64) -> Option<(&str, i64)> {
        self.urls.get(&id).map(|(url, team)| (url.as_str(), *team))
    }

    /// The link a row was already imported as: one with the row's alias
    /// and URL (also when disabled), else a live link made from the same
    /// URL and options; `None` when that link is one this chunk made (a
    /// file may list a URL twice), or another team's than `sees`.
    pub(super) fn already_stored(&self, new: &NewLink, sees: Option<i64>) -> Option<u64> {
        let found = new
            .link
            .alias
            .as_ref()
            .and_then(|a| self.aliases.get(a))
            .filter(|(_, url, team)| *url == new.link.url && visible(sees, *team))
            .map(|(id, _, _)| *id)
            .or_else(|| self.live.get(&new.dedupe_hash).copied());
        found.filter(|id| !self.made.contains(id))
    }

    /// The first of the row's alias targets that is its own alias or an
    /// existing one.
    pub(super) fn refused_target(&self, new: &NewLink) -> Option<usize> {
        let own = new.link.alias.as_deref();
        new.alias_targets
            .iter()
            .position(|a| own == Some(a.as_str()) || self.aliases.contains_key(a))
    }

    /// Whether another link holds `alias`.
    pub(super) fn alias_taken(&self, alias: &str) -> bool {
        self.aliases.contains_key(alias)
    }

    /// Notes a link the chunk writes, with the click totals it starts with.
    pub(super) fn made(&mut self, link: &Link, hash: &[u8; 32], clicks: (i64, i64), now: i64) {
        self.made.insert(link.id);
        self.urls.insert(link.id, (link.url.clone(), link.team_id));
        if let Some(a) = &link.alias {
            self.aliases
                .insert(a.clone(), (link.id, link.url.clone(), link.team_id));
        }
        let live = !link.disabled
            && link.expires_at.is_none_or(|at| at > now)
            && link.max_visits.is_none_or(|max| clicks.0 - clicks.1 < max);
        if live {
            let lowest = self.live.entry(*hash).or_insert(link.id);
            *lowest = (*lowest).min(link.id);
        }
    }
}

/// The URL and team at each of `ids` that holds a link.
async fn urls_at(c: &impl GenericClient, ids: &[i64]) -> StoreResult<HashMap<u64, (String, i64)>> {
    if ids.is_empty() {
        return Ok(HashMap::new());
    }
    let st = c
        .prepare_cached("SELECT id, url, team_id FROM links WHERE id = ANY($1)")
        .await
        .map_err(failed("preparing a read of kept ids"))?;
    let rows = c
        .query(&st, &[&ids])
        .await
        .map_err(failed("reading the links at kept ids"))?;
    Ok(rows
        .iter()
        .map(|r| (r.get::<_, i64>(0) as u64, (r.get(1), r.get(2))))
        .collect())
}

/// `(id, url, team)` of the link holding each of `aliases` that exists.
async fn holders_of(
    c: &impl GenericClient,
    aliases: &[&str],
) -> StoreResult<HashMap<String, (u64, String, i64)>> {
    if aliases.is_empty() {
        return Ok(HashMap::new());
    }
    let st = c
        .prepare_cached("SELECT alias, id, url, team_id FROM links WHERE alias = ANY($1)")
        .await
        .map_err(failed("preparing a read of import aliases"))?;
    let rows = c
        .query(&st, &[&aliases])
        .await
        .map_err(failed("reading the links of import aliases"))?;
    Ok(rows
        .iter()
        .map(|r| (r.get(0), (r.get::<_, i64>(1) as u64, r.get(2), r.get(3))))
        .collect())
}

/// `(hash, lowest id)` of the live links with each of the hashes `$1`
/// at time `$2`.
const LIVE_BY_HASH: &str = "SELECT dedupe_hash, min(id) FROM links WHERE dedupe_hash = ANY($1) \
     AND NOT disabled AND NOT taken_down AND (expires_at IS NULL OR expires_at > $2) \
     AND (max_visits IS NULL OR clicks - bot_clicks < max_visits) \
     GROUP BY dedupe_hash";

/// The lowest id of a live link per hash of `hashes` (the rule of
/// `rows::by_dedupe_hash`).
async fn live_by_hash(
    c: &impl GenericClient,
    hashes: &[&[u8]],
    now: i64,
) -> StoreResult<HashMap<[u8; 32], u64>> {
    if hashes.is_empty() {
        return Ok(HashMap::new());
    }
    let st = c
        .prepare_cached(LIVE_BY_HASH)
        .await
        .map_err(failed("preparing a dedupe read of import rows"))?;
    let rows = c
        .query(&st, &[&hashes, &now])
        .await
        .map_err(failed("reading the live links of import rows"))?;
    let mut live = HashMap::with_capacity(rows.len());
    for r in &rows {
        // Only hashes asked for come back, all of 32 bytes.
        if let Ok(hash) = <[u8; 32]>::try_from(r.get::<_, &[u8]>(0)) {
            live.insert(hash, r.get::<_, i64>(1) as u64);
        }
    }
    Ok(live)
}

#[cfg(test)]
mod tests {
    use super::super::super::bulk::generic_plans;
    use super::LIVE_BY_HASH;
    use crate::store::postgres::backend::tests::pg_store;

    /// The plan PostgreSQL keeps for the import's dedupe read, made on an
    /// empty table (as the first chunk of an import into a new database
    /// does), looks hashes up in the index: a plan made there without
    /// `generic_plans` scans the table, and would go on scanning it as the
    /// import fills it. The settings end with the transaction.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_dedupe_read_probes_the_index_from_an_empty_table_on() {
        let (_cluster, store) = pg_store("bulk-plans").await;
        let mut client = store.pg().get().await.unwrap();
        let before = settings(&client).await;
        assert_eq!(before, ("on".to_string(), "auto".to_string()));

        let tx = client.transaction().await.unwrap();
        generic_plans(&tx).await.unwrap();
        tx.batch_execute(&format!("PREPARE live(bytea[], bigint) AS {LIVE_BY_HASH}"))
            .await
            .unwrap();
        // As many hashes as a chunk has: a custom plan sized from them
        // scans the table.
        tx.batch_execute(
            "CREATE FUNCTION pg_temp.chunk() RETURNS bytea[] LANGUAGE sql AS \
             'SELECT array_agg(sha256(int8send(i))) FROM generate_series(1, 20000) i'",
        )
        .await
        .unwrap();
        let plan: Vec<String> = tx
            .query("EXPLAIN EXECUTE live(pg_temp.chunk(), 0)", &[])
            .await
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        let plan = plan.join("\n");
        assert!(
            plan.contains("links_dedupe") && !plan.contains("Seq Scan"),
            "{plan}"
        );
        tx.batch_execute("DEALLOCATE live").await.unwrap();
        tx.commit().await.unwrap();

        assert_eq!(settings(&client).await, before);
    }

    /// `enable_seqscan` and `plan_cache_mode` on this connection.
    async fn settings(c: &tokio_postgres::Client) -> (String, String) {
        let row = c
            .query_one(
                "SELECT current_setting('enable_seqscan'), current_setting('plan_cache_mode')",
                &[],
            )
            .await
            .unwrap();
        (row.get(0), row.get(1))
    }
}
