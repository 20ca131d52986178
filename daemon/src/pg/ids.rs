//! Id leasing on PostgreSQL: each daemon takes ranges ("segments") of ids
//! from the `id_alloc` row of a name and hands them out from memory.
//!
//! A lease is one statement: an upsert that moves `next` by `size` and
//! returns the range it moved over. PostgreSQL locks the row for the
//! update, so concurrent leases from every node queue on it and each gets
//! its own range; none fails on a conflict, none retries.

use std::ops::Range;

use deadpool_postgres::GenericClient;

use super::PgError;

/// Leases `size` ids of `name` at or above `floor` (a larger minimum code
/// length moves the floor up; `next` never goes back).
pub async fn lease(
    client: &impl GenericClient,
    name: &str,
    floor: u64,
    size: u64,
) -> Result<Range<u64>, PgError> {
    let (floor, size) = (as_bigint(floor, "floor")?, as_bigint(size, "size")?);
    if size == 0 {
        return Err(PgError::Invalid("an id lease needs at least one id".into()));
    }
    let st = client
        .prepare_cached(
            "INSERT INTO id_alloc AS a (name, next) VALUES ($1::text, $2::bigint + $3::bigint) \
             ON CONFLICT (name) DO UPDATE SET next = greatest(a.next, $2::bigint) + $3::bigint \
             RETURNING next - $3::bigint, next",
        )
        .await
        .map_err(PgError::query("preparing an id lease"))?;
    let row = client
        .query_one(&st, &[&name, &floor, &size])
        .await
        .map_err(PgError::query("leasing ids"))?;
    Ok(row.get::<_, i64>(0) as u64..row.get::<_, i64>(1) as u64)
}

/// Moves the next lease of `name` past `last` (ids an import kept), never back.
pub async fn advance_past(
    client: &impl GenericClient,
    name: &str,
    last: u64,
) -> Result<(), PgError> {
    let next = as_bigint(last.saturating_add(1), "id")?;
    let st = client
        .prepare_cached(
            "INSERT INTO id_alloc AS a (name, next) VALUES ($1, $2) \
             ON CONFLICT (name) DO UPDATE SET next = greatest(a.next, $2)",
        )
        .await
        .map_err(PgError::query("preparing an id advance"))?;
    client
        .execute(&st, &[&name, &next])
        .await
        .map_err(PgError::query("advancing the id allocator"))?;
    Ok(())
}

fn as_bigint(value: u64, what: &str) -> Result<i64, PgError> {
    i64::try_from(value)
        .map_err(|_| PgError::Invalid(format!("id {what} {value} is past PostgreSQL's bigint")))
}
