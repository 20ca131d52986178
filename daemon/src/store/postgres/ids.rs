//! Id leasing on PostgreSQL: each daemon takes ranges ("segments") of ids
//! from the `id_alloc` row of a name and hands them out from memory.
//!
//! A lease is one statement: an upsert that moves `next` by `size` and
//! returns the range it moved over. PostgreSQL locks the row for the
//! update, so concurrent leases from every node queue on it and each gets
//! its own range; none fails on a conflict, none retries.
//!
//! The same statement records the range in `id_ranges` with the time, for
//! recycling (`postgres::recycle`), and in `id_leases` under the daemon's
//! holder number, until the daemon reports it used up with a later lease.
//! An import that keeps exported ids checks them there ([`live_leases`]): an id
//! inside another node's live lease gets a new code instead, so that node
//! never hands out an id an import took. A daemon that stops leaves its
//! records behind; they only cost an import the exported code of an id in
//! them, never a collision.

use std::ops::Range;

use deadpool_postgres::GenericClient;

use super::PgError;

/// Leases `size` ids of `name` at or above `floor` (a larger minimum code
/// length moves the floor up; `next` never goes back) for `holder`, and
/// records the range in `id_leases` in the same statement, forgetting the
/// holder's leases that end at one of `used_up`.
pub async fn lease(
    client: &impl GenericClient,
    name: &str,
    floor: u64,
    size: u64,
    holder: i64,
    used_up: &[u64],
) -> Result<Range<u64>, PgError> {
    let (floor, size) = (as_bigint(floor, "floor")?, as_bigint(size, "size")?);
    if size == 0 {
        return Err(PgError::Invalid("an id lease needs at least one id".into()));
    }
    let used_up = used_up
        .iter()
        .map(|&stop| as_bigint(stop, "lease end"))
        .collect::<Result<Vec<_>, _>>()?;
    let st = client
        .prepare_cached(
            "WITH moved AS ( \
                 INSERT INTO id_alloc AS a (name, next) VALUES ($1::text, $2::bigint + $3::bigint) \
                 ON CONFLICT (name) DO UPDATE SET next = greatest(a.next, $2::bigint) + $3::bigint \
                 RETURNING next - $3::bigint AS start, next AS stop), \
             recorded AS ( \
                 INSERT INTO id_leases (name, holder, start, stop) \
                 SELECT $1::text, $4::bigint, start, stop FROM moved), \
             forgotten AS ( \
                 DELETE FROM id_leases \
                 WHERE name = $1::text AND holder = $4::bigint AND stop = ANY($5::bigint[])), \
             ranged AS ( \
                 INSERT INTO id_ranges (start, stop, leased_at) \
                 SELECT start, stop, $6::bigint FROM moved) \
             SELECT start, stop FROM moved",
        )
        .await
        .map_err(PgError::query("preparing an id lease"))?;
    let row = client
        .query_one(
            &st,
            &[
                &name,
                &floor,
                &size,
                &holder,
                &used_up,
                &crate::timestamp::unix_now(),
            ],
        )
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

/// Takes the ids up to `last` out of `holder`'s recorded leases (its own
/// import dropped them from its memory): a lease wholly below is forgotten,
/// one across it starts after it.
pub async fn trim_leases(
    client: &impl GenericClient,
    name: &str,
    holder: i64,
    last: u64,
) -> Result<(), PgError> {
    let after = as_bigint(last.saturating_add(1), "id")?;
    let st = client
        .prepare_cached(
            "WITH forgotten AS ( \
                 DELETE FROM id_leases WHERE name = $1 AND holder = $2 AND stop <= $3) \
             UPDATE id_leases SET start = $3 \
             WHERE name = $1 AND holder = $2 AND start < $3 AND stop > $3",
        )
        .await
        .map_err(PgError::query("preparing a lease trim"))?;
    client
        .execute(&st, &[&name, &holder, &after])
        .await
        .map_err(PgError::query("trimming the recorded id leases"))?;
    Ok(())
}

/// The ranges running daemons hold leased under `name` (a few per daemon):
/// an id in one may be handed out to a new link at any moment, so an
/// import must not keep it. Read once per import: leases taken after the
/// import reserved its ids start above them.
/// `except` is the importing daemon's own holder number: it took the kept
/// ids out of its own memory (`IdSegments::reserve_through`, `exclude`).
pub async fn live_leases(
    client: &impl GenericClient,
    name: &str,
    except: i64,
) -> Result<Vec<Range<u64>>, PgError> {
    let st = client
        .prepare_cached("SELECT start, stop FROM id_leases WHERE name = $1 AND holder <> $2")
        .await
        .map_err(PgError::query("preparing a lease read"))?;
    let rows = client
        .query(&st, &[&name, &except])
        .await
        .map_err(PgError::query("reading the recorded id leases"))?;
    Ok(rows
        .iter()
        .map(|r| r.get::<_, i64>(0) as u64..r.get::<_, i64>(1) as u64)
        .collect())
}

/// The ids in `range` a link has.
pub async fn used_in(client: &impl GenericClient, range: &Range<u64>) -> Result<Vec<u64>, PgError> {
    let clamp = |id: u64| i64::try_from(id).unwrap_or(i64::MAX);
    let st = client
        .prepare_cached("SELECT id FROM links WHERE id >= $1 AND id < $2")
        .await
        .map_err(PgError::query("preparing a used-id read"))?;
    let rows = client
        .query(&st, &[&clamp(range.start), &clamp(range.end)])
        .await
        .map_err(PgError::query("reading the ids in a lease"))?;
    Ok(rows.iter().map(|r| r.get::<_, i64>(0) as u64).collect())
}

/// Takes back the unused tails of `holder`'s leases of `name` (a clean
/// shutdown), in the caller's transaction: a range that ends where the
/// next lease would start moves `next` back to its start, and its
/// `id_leases` and `id_ranges` records are cut there; once a range was
/// passed by another lease (any node's), it and the ranges below it stay
/// lost. How many ids came back.
pub async fn give_back(
    client: &impl GenericClient,
    name: &str,
    holder: i64,
    unused: &[Range<u64>],
) -> Result<u64, PgError> {
    let mut ranges: Vec<&Range<u64>> = unused.iter().filter(|r| r.start < r.end).collect();
    ranges.sort_by_key(|r| std::cmp::Reverse(r.end));
    let st = client
        .prepare_cached(
            "WITH moved AS ( \
                 UPDATE id_alloc SET next = $3 WHERE name = $1 AND next = $4 RETURNING next), \
             leases_gone AS ( \
                 DELETE FROM id_leases WHERE name = $1 AND holder = $2 AND stop = $4 \
                     AND start >= $3 AND EXISTS (SELECT 1 FROM moved)), \
             leases_cut AS ( \
                 UPDATE id_leases SET stop = $3 WHERE name = $1 AND holder = $2 AND stop = $4 \
                     AND start < $3 AND EXISTS (SELECT 1 FROM moved)), \
             ranges_gone AS ( \
                 DELETE FROM id_ranges WHERE stop = $4 AND start >= $3 \
                     AND EXISTS (SELECT 1 FROM moved)), \
             ranges_cut AS ( \
                 UPDATE id_ranges SET stop = $3 WHERE stop = $4 AND start < $3 \
                     AND EXISTS (SELECT 1 FROM moved)) \
             SELECT count(*) FROM moved",
        )
        .await
        .map_err(PgError::query("preparing an id hand-back"))?;
    let mut taken = 0;
    for r in ranges {
        let (start, stop) = (as_bigint(r.start, "start")?, as_bigint(r.end, "end")?);
        let moved: i64 = client
            .query_one(&st, &[&name, &holder, &start, &stop])
            .await
            .map_err(PgError::query("handing ids back"))?
            .get(0);
        if moved == 0 {
            break;
        }
        taken += r.end - r.start;
    }
    Ok(taken)
}

fn as_bigint(value: u64, what: &str) -> Result<i64, PgError> {
    i64::try_from(value)
        .map_err(|_| PgError::Invalid(format!("id {what} {value} is past PostgreSQL's bigint")))
}
