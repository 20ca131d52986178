//! Passwords: Argon2id hashing and checking, the one place either happens.
//! Both are slow and memory-hungry on purpose, so they run in the bounded
//! [`Argon2Pool`], on memory its workers keep, never on a block allocated
//! per call.

use argon2::password_hash::{Output, ParamsString, PasswordHash, SaltString};
use argon2::{Algorithm, Argon2, Block, Params, Version};
use sha2::{Digest, Sha256};

use super::argon2_pool::{Argon2Pool, Memory, PoolError};
use super::UserError;

/// Most argon2 memory one job may use (64 MiB), whatever a stored hash asks
/// for: a hash edited in the database must not make the daemon allocate more.
const MAX_BLOCKS: usize = 64 * 1024;

/// What a check of an unknown user name runs against, so a wrong name costs
/// the same argon2 work as a wrong password (same parameters as
/// [`Params::DEFAULT`], checked by a test; its password is not known).
const DUMMY_HASH: &str = "$argon2id$v=19$m=19456,t=2,p=1$\
                          c2hvcnRsaW5rIGR1bW15IHNhbHQ$\
                          Z4j1z9OeO7Ymj2qYtq8wQhW2WZ5WnmZPvS0x1bCQkfg";

/// Why a password could not be checked.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// Too many checks are running or waiting; try again shortly.
    #[error(transparent)]
    Busy(PoolError),
    /// The stored hash is broken or the work failed.
    #[error(transparent)]
    User(#[from] UserError),
}

fn hashing(e: impl std::fmt::Display) -> UserError {
    UserError::Hashing(e.to_string())
}

/// The first `count` blocks of `memory`, grown when a job needs more.
fn blocks(memory: &mut Memory, count: usize) -> Result<&mut [Block], UserError> {
    if count > MAX_BLOCKS {
        return Err(UserError::Hashing(format!(
            "the stored password hash asks for {count} KiB of memory, more than the {MAX_BLOCKS} KiB allowed"
        )));
    }
    if memory.len() < count {
        memory.resize(count, Block::default());
    }
    Ok(&mut memory[..count])
}

/// Argon2id PHC string of `password` with a fresh random salt, computed in
/// `memory`.
pub fn hash_with(password: &str, memory: &mut Memory) -> Result<String, UserError> {
    let mut salt_bytes = [0u8; 16];
    getrandom::getrandom(&mut salt_bytes).map_err(hashing)?;
    let salt = SaltString::encode_b64(&salt_bytes).map_err(hashing)?;
    let params = Params::DEFAULT;
    let mut out = [0u8; Params::DEFAULT_OUTPUT_LEN];
    let blocks = blocks(memory, params.block_count())?;
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params.clone())
        .hash_password_into_with_memory(password.as_bytes(), &salt_bytes, &mut out, blocks)
        .map_err(hashing)?;
    let phc = PasswordHash {
        algorithm: Algorithm::Argon2id.ident(),
        version: Some(Version::V0x13.into()),
        params: ParamsString::try_from(&params).map_err(hashing)?,
        salt: Some(salt.as_salt()),
        hash: Some(Output::new(&out).map_err(hashing)?),
    };
    Ok(phc.to_string())
}

/// True when `password` matches the PHC string `hash`, computed in `memory`
/// with the hash's own algorithm, version and parameters.
pub fn verify_with(password: &str, hash: &str, memory: &mut Memory) -> Result<bool, UserError> {
    let broken = |e: &dyn std::fmt::Display| {
        UserError::Hashing(format!("the stored password hash is not valid: {e}"))
    };
    let parsed = PasswordHash::new(hash).map_err(|e| broken(&e))?;
    let algorithm = Algorithm::try_from(parsed.algorithm).map_err(|e| broken(&e))?;
    let version = match parsed.version {
        Some(v) => Version::try_from(v).map_err(|e| broken(&e))?,
        None => Version::default(),
    };
    let params = Params::try_from(&parsed).map_err(|e| broken(&e))?;
    let expected = parsed.hash.ok_or_else(|| broken(&"it has no hash"))?;
    let salt = parsed.salt.ok_or_else(|| broken(&"it has no salt"))?;
    let mut salt_buf = [0u8; 64];
    let salt = salt.decode_b64(&mut salt_buf).map_err(|e| broken(&e))?;
    let mut out = [0u8; Output::MAX_LENGTH];
    let out = &mut out[..expected.len()];
    let blocks = blocks(memory, params.block_count())?;
    Argon2::new(algorithm, version, params)
        .hash_password_into_with_memory(password.as_bytes(), salt, out, blocks)
        .map_err(hashing)?;
    // `Output`'s equality is constant-time.
    Ok(Output::new(out).map_err(hashing)? == expected)
}

/// True when `password` matches `hash`; false also for a broken hash. For
/// tools and tests only: it allocates its own argon2 memory, where the
/// daemon checks in the pool.
pub fn verify_password(password: &str, hash: &str) -> bool {
    verify_with(password, hash, &mut Memory::new()).unwrap_or(false)
}

/// What identifies the password a session was opened with: a digest of
/// the stored hash (a new password always gets a new salt, so a new hash).
pub fn account_version(password_hash: &str) -> String {
    hex::encode(Sha256::digest(password_hash.as_bytes()))
}

/// A hash of `password` made in the pool, waiting for a worker as long as
/// it takes (the callers are authenticated).
pub(super) async fn hash(password: String) -> Result<String, UserError> {
    Argon2Pool::global()
        .run(move |memory| hash_with(&password, memory))
        .await
        .map_err(hashing)?
}

/// Checks `password` against `hash` in the pool, or refuses at once when
/// it is full. With no stored hash (no such user) it checks the dummy one
/// and answers false, taking as long.
pub(super) async fn verify(password: String, hash: Option<String>) -> Result<bool, CheckError> {
    let checked = Argon2Pool::global()
        .try_run(move |memory| match hash {
            Some(h) => verify_with(&password, &h, memory),
            None => verify_with(&password, DUMMY_HASH, memory).map(|_| false),
        })
        .await;
    match checked {
        Ok(result) => Ok(result?),
        Err(PoolError::Busy) => Err(CheckError::Busy(PoolError::Busy)),
        Err(e) => Err(UserError::Hashing(e.to_string()).into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use argon2::{PasswordHasher, PasswordVerifier};

    #[test]
    fn hashes_verify_and_agree_with_the_argon2_crate() {
        let mut memory = Memory::new();
        let h = hash_with("correct horse", &mut memory).unwrap();
        assert!(h.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"), "{h}");
        assert!(verify_with("correct horse", &h, &mut memory).unwrap());
        assert!(!verify_with("wrong horse", &h, &mut memory).unwrap());
        // Ours verify with the crate's own checker, and hashes stored by
        // earlier versions (made by the crate) verify with ours.
        let parsed = PasswordHash::new(&h).unwrap();
        assert!(Argon2::default()
            .verify_password(b"correct horse", &parsed)
            .is_ok());
        let salt = SaltString::encode_b64(b"sixteen byte slt").unwrap();
        let old = Argon2::default()
            .hash_password(b"older password", &salt)
            .unwrap()
            .to_string();
        assert!(verify_with("older password", &old, &mut memory).unwrap());
        assert!(!verify_with("older passwort", &old, &mut memory).unwrap());
        assert_eq!(
            memory.len(),
            Params::DEFAULT.block_count(),
            "one block, reused"
        );
    }

    #[test]
    fn broken_hashes_are_errors_that_say_so() {
        let mut memory = Memory::new();
        for bad in ["not a hash", "$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ"] {
            let e = verify_with("x", bad, &mut memory).unwrap_err();
            assert!(e.to_string().contains("not valid"), "{e}");
        }
        let greedy = "$argon2id$v=19$m=4194304,t=2,p=1$c2FsdHNhbHRzYWx0$\
                      Z4j1z9OeO7Ymj2qYtq8wQhW2WZ5WnmZPvS0x1bCQkfg";
        let e = verify_with("x", greedy, &mut memory).unwrap_err();
        assert!(e.to_string().contains("KiB of memory"), "{e}");
        assert!(memory.is_empty(), "nothing allocated for it");
    }

    #[test]
    fn the_dummy_hash_costs_what_a_real_one_does() {
        let dummy = PasswordHash::new(DUMMY_HASH).unwrap();
        let real = hash_with("any password", &mut Memory::new()).unwrap();
        let real = PasswordHash::new(&real).unwrap();
        assert_eq!(dummy.algorithm, real.algorithm);
        assert_eq!(dummy.version, real.version);
        assert_eq!(dummy.params, real.params);
        assert_eq!(dummy.hash.unwrap().len(), real.hash.unwrap().len());
    }

    #[test]
    fn account_versions_follow_the_password_hash() {
        let mut memory = Memory::new();
        let a = hash_with("password one", &mut memory).unwrap();
        let b = hash_with("password one", &mut memory).unwrap();
        assert_eq!(account_version(&a), account_version(&a));
        assert_ne!(
            account_version(&a),
            account_version(&b),
            "new salt, new version"
        );
    }

    #[tokio::test]
    async fn checks_in_the_pool_and_without_a_user() {
        let h = hash("correct horse".into()).await.unwrap();
        assert!(verify("correct horse".into(), Some(h.clone()))
            .await
            .unwrap());
        assert!(!verify("wrong horse".into(), Some(h)).await.unwrap());
        assert!(!verify("correct horse".into(), None).await.unwrap());
    }
}
