//! Which database this is, and under which deployment key it was made.
//!
//! The first daemon to open a fresh database records a random store id
//! (positions in the change log mean nothing in another database) and the
//! fingerprint of its deployment key. Every later daemon checks that its
//! key has the same fingerprint: nodes with different keys would seal app
//! secrets the others cannot open and hand the edge data under a key it
//! does not trust, so a mismatch stops the daemon naming both fingerprints.

use shortlink_core::Fingerprint;

use super::{Pg, PgError};

/// What the database says about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreIdentity {
    /// Random id chosen at creation; tells one database from another.
    pub store_id: u64,
    /// Fingerprint of the deployment key the database was created under.
    pub fingerprint: String,
}

/// Records the identity if the database has none yet (concurrent first
/// starts agree: one insert wins), then checks `key` against it.
pub async fn claim(pg: &Pg, key: Fingerprint) -> Result<StoreIdentity, PgError> {
    let client = pg.get().await?;
    let mine = key.to_string();
    let store_id = random_store_id()?;
    let insert = client
        .prepare_cached(
            "INSERT INTO store_meta (id, store_id, key_fingerprint, created_at) \
             VALUES (1, $1, $2, extract(epoch FROM now())::bigint) \
             ON CONFLICT (id) DO NOTHING",
        )
        .await
        .map_err(PgError::query("preparing the store identity"))?;
    client
        .execute(&insert, &[&(store_id as i64), &mine])
        .await
        .map_err(PgError::query("recording the store identity"))?;
    let row = client
        .query_one(
            "SELECT store_id, key_fingerprint FROM store_meta WHERE id = 1",
            &[],
        )
        .await
        .map_err(PgError::query("reading the store identity"))?;
    let found = StoreIdentity {
        store_id: row.get::<_, i64>(0) as u64,
        fingerprint: row.get(1),
    };
    if found.fingerprint != mine {
        return Err(PgError::KeyMismatch {
            database: found.fingerprint,
            key: mine,
        });
    }
    Ok(found)
}

/// A random positive 63-bit id (it is stored as bigint).
fn random_store_id() -> Result<u64, PgError> {
    let mut bytes = [0u8; 8];
    getrandom::getrandom(&mut bytes)
        .map_err(|e| PgError::Invalid(format!("no randomness for the store id: {e}")))?;
    Ok(u64::from_le_bytes(bytes) >> 1)
}
