//! Listing links on PostgreSQL: the filters, sort orders and keyset pages
//! of `crate::store::sqlite::links::list`, in PostgreSQL's SQL. A page starts
//! after a position `(sort key, id)`; ties are broken by id in the sort's
//! direction; `never` expires sorts as the far future.

use deadpool_postgres::{GenericClient, Transaction};
use tokio_postgres::types::ToSql;

use super::rows::{columns, failed, from_row};
use crate::store::{Link, LinkState, ListQuery, ListSort, StoreResult};

/// [`Link::state`] in SQL at the Unix time `$6`: disabled, then expired,
/// then exhausted.
macro_rules! state_sql {
    () => {
        "CASE WHEN taken_down THEN 'taken_down' WHEN disabled THEN 'disabled' \
         WHEN expires_at IS NOT NULL AND expires_at <= $6::bigint THEN 'expired' \
         WHEN max_visits IS NOT NULL AND clicks - bot_clicks >= max_visits THEN 'exhausted' \
         ELSE 'active' END"
    };
}

/// The filter of a list and its count, over parameters `$1`..`$10` (see
/// [`Filter::params`]). `q` is a case-sensitive substring of the URL,
/// alias or title, as SQLite's `instr`; tags are the stored JSON array.
const MATCHING: &str = concat!(
    "($1::text IS NULL OR strpos(url, $1) > 0 OR strpos(alias, $1) > 0 OR strpos(title, $1) > 0 \
       OR id = $2::bigint) \
     AND ($3::text[] IS NULL OR CASE WHEN $4::boolean \
       THEN jsonb_exists_all(tags::jsonb, $3) ELSE jsonb_exists_any(tags::jsonb, $3) END) \
     AND ($5::text IS NULL OR $5 = ",
    state_sql!(),
    ") \
     AND ($7::bigint IS NULL OR created_at >= $7) \
     AND ($8::bigint IS NULL OR created_at < $8) \
     AND ($9::bigint IS NULL OR team_id = $9) \
     AND ($10::boolean IS NULL OR broken = $10)"
);

/// The values of [`MATCHING`]'s parameters.
struct Filter {
    q: Option<String>,
    code_id: Option<i64>,
    tags: Option<Vec<String>>,
    all_tags: bool,
    state: Option<&'static str>,
    now: i64,
    created_after: Option<i64>,
    created_before: Option<i64>,
    team: Option<i64>,
    broken: Option<bool>,
}

impl Filter {
    fn new(query: &ListQuery) -> Self {
        Self {
            q: query.q.clone(),
            code_id: query.stored_code_id(),
            tags: query.tag_set(),
            all_tags: query.all_tags,
            state: query.state.map(LinkState::as_str),
            now: query.now,
            created_after: query.created_after,
            created_before: query.created_before,
            team: query.team,
            broken: query.broken,
        }
    }

    /// `$1`..`$10`, in order.
    fn params(&self) -> Vec<&(dyn ToSql + Sync)> {
        vec![
            &self.q,
            &self.code_id,
            &self.tags,
            &self.all_tags,
            &self.state,
            &self.now,
            &self.created_after,
            &self.created_before,
            &self.team,
            &self.broken,
        ]
    }
}

/// The SQL expression of a sort key (as `ListSort::key` computes it).
fn key_sql(sort: ListSort) -> &'static str {
    match sort {
        ListSort::Created => "id",
        ListSort::Clicks => "clicks",
        ListSort::Expires => "coalesce(expires_at, 9223372036854775807)",
    }
}

/// A read-only transaction whose statements see one snapshot (a page and
/// its total agree).
pub(super) async fn read_tx(
    client: &mut deadpool_postgres::Client,
) -> StoreResult<Transaction<'_>> {
    client
        .build_transaction()
        .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .await
        .map_err(failed("starting a read transaction"))
}

/// One page of links in the query's order.
pub(super) async fn list(c: &impl GenericClient, query: &ListQuery) -> StoreResult<Vec<Link>> {
    let key = key_sql(query.sort);
    let (cmp, dir) = if query.ascending {
        (">", "ASC")
    } else {
        ("<", "DESC")
    };
    let filter = Filter::new(query);
    let mut params = filter.params();
    let limit = i64::from(query.limit);
    params.push(&limit);
    // An id past bigint is after every stored one.
    let after = query
        .after
        .map(|(k, id)| (k, i64::try_from(id).unwrap_or(i64::MAX)));
    let sql = match &after {
        None => format!(
            concat!(
                "SELECT ",
                columns!(),
                " FROM links WHERE {m} ORDER BY {key} {dir}, id {dir} LIMIT $11"
            ),
            m = MATCHING,
            key = key,
            dir = dir
        ),
        Some((k, id)) => {
            params.push(k);
            params.push(id);
            format!(
                concat!(
                    "SELECT ",
                    columns!(),
                    " FROM links WHERE {m} \
                     AND ({key} {cmp} $12::bigint OR ({key} = $12 AND id {cmp} $13::bigint)) \
                     ORDER BY {key} {dir}, id {dir} LIMIT $11"
                ),
                m = MATCHING,
                key = key,
                cmp = cmp,
                dir = dir
            )
        }
    };
    let st = c
        .prepare_cached(&sql)
        .await
        .map_err(failed("preparing a link list"))?;
    let rows = c
        .query(&st, &params)
        .await
        .map_err(failed("listing links"))?;
    rows.iter().map(from_row).collect()
}

/// How many links match the filter of `query` (all pages).
pub(super) async fn count_matching(c: &impl GenericClient, query: &ListQuery) -> StoreResult<u64> {
    let st = c
        .prepare_cached(&format!("SELECT count(*) FROM links WHERE {MATCHING}"))
        .await
        .map_err(failed("preparing a link count"))?;
    let filter = Filter::new(query);
    let row = c
        .query_one(&st, &filter.params())
        .await
        .map_err(failed("counting matching links"))?;
    Ok(row.get::<_, i64>(0) as u64)
}

/// How many links are in each state at `now`: `(state, count)`, only the
/// states that occur.
pub(super) async fn count_by_state(
    c: &impl GenericClient,
    now: i64,
) -> StoreResult<Vec<(String, u64)>> {
    // The state expression reads the time from $6; $1..$5 are unused here,
    // so it is given its own statement with one parameter.
    let sql = concat!(
        "SELECT ",
        state_sql!(),
        " AS state, count(*) FROM links GROUP BY 1"
    )
    .replace("$6", "$1");
    let st = c
        .prepare_cached(&sql)
        .await
        .map_err(failed("preparing a count by state"))?;
    let rows = c
        .query(&st, &[&now])
        .await
        .map_err(failed("counting links by state"))?;
    Ok(rows
        .iter()
        .map(|r| (r.get::<_, String>(0), r.get::<_, i64>(1) as u64))
        .collect())
}
