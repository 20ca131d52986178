//! Reading rows of the `links` table on PostgreSQL: the columns, a row as
//! a [`Link`], and the lookups every link write and read shares.

use deadpool_postgres::GenericClient;
use shortlink_core::check_mode::CheckMode;
use shortlink_core::ipc::DeviceTargets;
use tokio_postgres::types::ToSql;
use tokio_postgres::Row;

use crate::store::links::{country_targets_from_stored, variants_from_stored};
use crate::store::postgres::PgError;
use crate::store::{CodeRef, Link, StoreError, StoreResult};

/// The columns [`from_row`] reads, as a literal for `concat!`.
macro_rules! columns {
    () => {
        "id, alias, url, created_at, updated_at, expires_at, renew_ttl, max_visits, \
         redirect, target_desktop, target_mobile, target_ios, target_android, disabled, tags, \
         created_by, clicks, bot_clicks, forward_query, country_targets, password_hash, \
         variants, team_id, broken, check_mode, taken_down, title"
    };
}
pub(super) use columns;

/// Wraps a driver error with what was being done.
pub(super) fn failed(doing: &'static str) -> impl FnOnce(tokio_postgres::Error) -> StoreError {
    move |e| PgError::query(doing)(e).into()
}

/// A link id as PostgreSQL's bigint.
pub(super) fn bigint(id: u64) -> StoreResult<i64> {
    i64::try_from(id).map_err(|_| PgError::Invalid(format!("link id {id} is past bigint")).into())
}

/// The link in a row of [`columns!`].
pub(super) fn from_row(row: &Row) -> StoreResult<Link> {
    let id: i64 = row.get(0);
    let redirect = match row.get::<_, Option<i32>>(8) {
        None => None,
        Some(r) => Some(
            u16::try_from(r)
                .map_err(|_| StoreError::Corrupt(format!("link {id} has redirect status {r}")))?,
        ),
    };
    let tags: String = row.get(14);
    let tags = if tags == "[]" {
        Vec::new()
    } else {
        serde_json::from_str(&tags)
            .map_err(|e| StoreError::Corrupt(format!("link {id} has tags {tags:?}: {e}")))?
    };
    Ok(Link {
        id: id as u64,
        alias: row.get(1),
        url: row.get(2),
        created_at: row.get(3),
        updated_at: row.get(4),
        expires_at: row.get(5),
        renew_ttl: row.get(6),
        max_visits: row.get(7),
        redirect,
        targets: DeviceTargets {
            desktop: row.get(9),
            mobile: row.get(10),
            ios: row.get(11),
            android: row.get(12),
        },
        disabled: row.get(13),
        tags,
        created_by: row.get(15),
        clicks: row.get(16),
        bot_clicks: row.get(17),
        forward_query: row.get(18),
        country_targets: country_targets_from_stored(row.get::<_, Option<&str>>(19)),
        password_hash: row.get(20),
        variants: variants_from_stored(row.get::<_, Option<&str>>(21)),
        team_id: row.get(22),
        broken: row.get(23),
        check: match row.get::<_, Option<&str>>(24) {
            None => None,
            Some(m) => Some(
                CheckMode::parse(m)
                    .map_err(|e| StoreError::Corrupt(format!("link {id} has {e}")))?,
            ),
        },
        taken_down: row.get(25),
        title: row.get(26),
    })
}

/// The link with this id.
pub(super) async fn by_id(c: &impl GenericClient, id: u64) -> StoreResult<Option<Link>> {
    let st = c
        .prepare_cached(concat!("SELECT ", columns!(), " FROM links WHERE id = $1"))
        .await
        .map_err(failed("preparing a link read by id"))?;
    let row = c
        .query_opt(&st, &[&bigint(id)?])
        .await
        .map_err(failed("reading a link by id"))?;
    row.as_ref().map(from_row).transpose()
}

/// The link with this alias (exact, case-sensitive).
pub(super) async fn by_alias(c: &impl GenericClient, alias: &str) -> StoreResult<Option<Link>> {
    let st = c
        .prepare_cached(concat!(
            "SELECT ",
            columns!(),
            " FROM links WHERE alias = $1"
        ))
        .await
        .map_err(failed("preparing a link read by alias"))?;
    let row = c
        .query_opt(&st, &[&alias])
        .await
        .map_err(failed("reading a link by alias"))?;
    row.as_ref().map(from_row).transpose()
}

/// The link behind `code`.
pub(super) async fn by_code(c: &impl GenericClient, code: &CodeRef) -> StoreResult<Option<Link>> {
    match code {
        CodeRef::Id(id) => by_id(c, *id).await,
        CodeRef::Alias(alias) => by_alias(c, alias).await,
        CodeRef::Invalid => Ok(None),
    }
}

/// Codes per statement of [`by_codes`].
const CODES_PER_READ: usize = 16;

/// `$1, …, $16`: [`CODES_PER_READ`] parameters.
macro_rules! read_params {
    () => {
        "($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)"
    };
}

/// The links behind `codes`, in their order: read by id and by alias,
/// [`CODES_PER_READ`] codes to a statement, every statement of a burst
/// sent at once on the connection (a burst of edge misses, up to
/// `ipc::LOOKUP_BATCH` codes, waits for about one round trip, not one per
/// statement).
///
/// Each statement takes exactly [`CODES_PER_READ`] parameters, the codes
/// repeated to fill them (an index scan reads a repeated key once).
/// Its cost then never depends on how many codes a burst carried, so
/// PostgreSQL runs it on the generic plan it made once per connection. An
/// array (`id = ANY($1)`) looks cheaper to plan afresh for a short array
/// than on the generic plan's guess of ten, so PostgreSQL planned every
/// lookup again: more than half of the statement's time, and PostgreSQL's
/// CPU per miss fell from about 40 to 20 µs without it
/// (`bench/pgstatements.py --scenario miss`).
pub(super) async fn by_codes(
    c: &impl GenericClient,
    codes: &[CodeRef],
) -> StoreResult<Vec<Option<Link>>> {
    let mut ids = Vec::new();
    let mut aliases: Vec<&str> = Vec::new();
    for code in codes {
        match code {
            CodeRef::Id(id) => ids.push(bigint(*id)?),
            CodeRef::Alias(alias) => aliases.push(alias),
            CodeRef::Invalid => {}
        }
    }
    let (by_id, by_alias) = tokio::try_join!(
        read_keyed(
            c,
            concat!(
                "SELECT ",
                columns!(),
                " FROM links WHERE id IN ",
                read_params!()
            ),
            &ids,
        ),
        read_keyed(
            c,
            concat!(
                "SELECT ",
                columns!(),
                " FROM links WHERE alias IN ",
                read_params!()
            ),
            &aliases,
        ),
    )?;
    let found: Vec<Link> = by_id.into_iter().chain(by_alias).collect();
    Ok(codes
        .iter()
        .map(|code| {
            found
                .iter()
                .find(|l| match code {
                    CodeRef::Id(id) => l.id == *id,
                    CodeRef::Alias(alias) => l.alias.as_deref() == Some(alias.as_str()),
                    CodeRef::Invalid => false,
                })
                .cloned()
        })
        .collect())
}

/// The links `sql` (a statement of [`read_params!`]) reads for `keys`,
/// [`CODES_PER_READ`] to a run; nothing for no keys. The runs are sent
/// together on the connection (pipelined), so a burst of any size waits
/// for about one round trip, not one per run.
async fn read_keyed<T: ToSql + Sync>(
    c: &impl GenericClient,
    sql: &str,
    keys: &[T],
) -> StoreResult<Vec<Link>> {
    if keys.is_empty() {
        return Ok(Vec::new());
    }
    let st = c
        .prepare_cached(sql)
        .await
        .map_err(failed("preparing a link read by codes"))?;
    let params: Vec<Vec<&(dyn ToSql + Sync)>> = keys.chunks(CODES_PER_READ).map(padded).collect();
    let runs = futures_util::future::try_join_all(params.iter().map(|p| c.query(&st, p)))
        .await
        .map_err(failed("reading links by code"))?;
    runs.iter().flatten().map(from_row).collect()
}

/// A chunk of at most [`CODES_PER_READ`] keys as that many parameters,
/// its keys repeated in turn to fill them.
fn padded<T: ToSql + Sync>(chunk: &[T]) -> Vec<&(dyn ToSql + Sync)> {
    chunk
        .iter()
        .cycle()
        .take(CODES_PER_READ)
        .map(|k| k as &(dyn ToSql + Sync))
        .collect()
}

/// A live link created from the same request (for `dedupe: true`).
pub(super) async fn by_dedupe_hash(
    c: &impl GenericClient,
    hash: &[u8],
    now: i64,
) -> StoreResult<Option<Link>> {
    let st = c
        .prepare_cached(concat!(
            "SELECT ",
            columns!(),
            " FROM links WHERE dedupe_hash = $1 AND NOT disabled AND NOT taken_down \
             AND (expires_at IS NULL OR expires_at > $2) \
             AND (max_visits IS NULL OR clicks - bot_clicks < max_visits) ORDER BY id LIMIT 1"
        ))
        .await
        .map_err(failed("preparing a dedupe lookup"))?;
    let row = c
        .query_opt(&st, &[&hash, &now])
        .await
        .map_err(failed("looking up a link by dedupe hash"))?;
    row.as_ref().map(from_row).transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lookups of any number of codes run on the generic plan made once
    /// per connection: PostgreSQL makes a custom plan for a prepared
    /// statement's first five runs, then keeps one only while it looks
    /// cheaper than the generic plan (as it always did for an array of
    /// ids, so every lookup was planned again).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn lookups_are_planned_once_per_connection() {
        let (_cluster, store) = crate::store::postgres::backend::tests::pg_store("plans").await;
        let client = store.pg().get().await.unwrap();
        // Enough links for the plans' costs to depend on how many are read.
        client
            .batch_execute(
                "INSERT INTO links (id, alias, url, created_at, updated_at) \
                 SELECT g, 'a' || g, 'https://example.com/' || g, 0, 0 \
                 FROM generate_series(1, 20000) g; ANALYZE links",
            )
            .await
            .unwrap();
        for n in 0..20u64 {
            let codes: Vec<CodeRef> = (0..n % 5 + 1)
                .map(|i| match i % 2 {
                    0 => CodeRef::Id(n + i + 1),
                    _ => CodeRef::Alias(format!("a{}", n + 1)),
                })
                .collect();
            let found = by_codes(&client, &codes).await.unwrap();
            assert!(found.iter().all(Option::is_some), "{codes:?}");
        }
        let plans = client
            .query(
                "SELECT generic_plans, custom_plans, statement FROM pg_prepared_statements \
                 WHERE statement LIKE 'SELECT id, alias, url, %'",
                &[],
            )
            .await
            .unwrap();
        let texts: Vec<String> = plans.iter().map(|r| r.get::<_, String>(2)).collect();
        assert_eq!(plans.len(), 2, "{texts:?}");
        for row in plans {
            let (generic, custom): (i64, i64) = (row.get(0), row.get(1));
            assert!(
                custom <= 5 && generic >= 5,
                "generic {generic}, custom {custom}"
            );
        }
    }
}
