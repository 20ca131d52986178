//! Names two nodes may claim at the same instant: an alias (made by one
//! link, or named as a target another link may not point at) and a target
//! URL under dedupe (its hash). Neither can be locked as a row, which may
//! not exist yet, so a write takes a transaction-scoped advisory lock per
//! name before it reads or writes any of them, all at once and in key
//! order:
//!
//! * two nodes creating one URL with dedupe store it once (the second
//!   waits for the first's commit, then its read sees the link);
//! * a link whose target is our own short URL `/x` and a link aliased `x`
//!   made at once on two nodes: one of them is refused;
//! * two batches inserting the same aliases in opposite orders queue
//!   instead of deadlocking on the alias index.
//!
//! A key is one of [`KEYS`] buckets chosen by SHA-256 of the name, in the
//! two-key advisory lock space under [`CLASS`], apart from the one-key
//! locks of migrations and change-log versions. Two names sharing a bucket
//! only wait for each other. The buckets bound what one write holds: each
//! advisory lock takes a slot of PostgreSQL's shared lock table (about
//! `max_locks_per_transaction` × `max_connections`, 6,400 by default), and
//! an import chunk of 10,000 rows with a key per name ran out of it ("out
//! of shared memory"). A bulk write holds at most [`KEYS`], and so queues
//! behind (and holds back) every small write in flight, for its commit's
//! length.

use deadpool_postgres::GenericClient;
use sha2::{Digest, Sha256};

use super::rows::failed;
use crate::store::{NewLink, StoreResult};

/// The first key of every name lock ("sln" and a version byte).
const CLASS: i32 = 0x736c_6e02;

/// Buckets names are locked by: the most advisory locks one write holds.
pub(super) const KEYS: u32 = 256;

/// A name a write claims.
#[derive(Debug, Clone, Copy)]
pub(super) enum Name<'a> {
    /// An alias, made or named as a target.
    Alias(&'a str),
    /// A target URL, by its dedupe hash.
    Url(&'a [u8; 32]),
}

/// The names inserting `new` claims: its alias, the aliases it must not
/// target, and its URL when it is deduplicated.
pub(super) fn of_new(new: &NewLink) -> impl Iterator<Item = Name<'_>> {
    let alias = new.link.alias.as_deref().map(Name::Alias);
    let targets = new.alias_targets.iter().map(|t| Name::Alias(t));
    let url = new.dedupe.then_some(Name::Url(&new.dedupe_hash));
    alias.into_iter().chain(targets).chain(url)
}

fn key(name: Name<'_>) -> i32 {
    let mut h = Sha256::new();
    match name {
        Name::Alias(a) => {
            h.update(b"alias\0");
            h.update(a.as_bytes());
        }
        Name::Url(hash) => {
            h.update(b"url\0");
            h.update(hash);
        }
    }
    let d = h.finalize();
    (u32::from_be_bytes([d[0], d[1], d[2], d[3]]) % KEYS) as i32
}

/// Takes the locks of `names` in the caller's transaction, in key order;
/// they are released at its commit or rollback.
pub(super) async fn lock<'a>(
    tx: &impl GenericClient,
    names: impl IntoIterator<Item = Name<'a>>,
) -> StoreResult<()> {
    let mut keys: Vec<i32> = names.into_iter().map(key).collect();
    if keys.is_empty() {
        return Ok(());
    }
    keys.sort_unstable();
    keys.dedup();
    tx.execute(
        "SELECT pg_advisory_xact_lock($1, k) FROM unnest($2::int4[]) WITH ORDINALITY AS u(k, n) \
         ORDER BY n",
        &[&CLASS, &keys],
    )
    .await
    .map_err(failed("locking the aliases and URLs of a write"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_stable_and_kinds_apart() {
        assert_eq!(key(Name::Alias("promo")), key(Name::Alias("promo")));
        let hash = [7u8; 32];
        assert_eq!(key(Name::Url(&hash)), key(Name::Url(&[7u8; 32])));
    }

    #[test]
    fn names_spread_over_every_bucket_and_no_further() {
        let names: Vec<String> = (0..20_000).map(|i| format!("alias-{i}")).collect();
        let mut keys: Vec<i32> = names.iter().map(|n| key(Name::Alias(n))).collect();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), KEYS as usize);
        assert!(keys.iter().all(|&k| (0..KEYS as i32).contains(&k)));
    }
}
