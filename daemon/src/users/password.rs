//! Passwords: Argon2id hashing and checking, the one place either happens.
//! Both are slow on purpose, so the async callers run them on the blocking
//! pool; a bound on how many run at once belongs here too.

use std::sync::OnceLock;

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use sha2::{Digest, Sha256};

use super::UserError;

/// Argon2id PHC string of `password`, with a fresh random salt.
pub fn hash_password(password: &str) -> Result<String, UserError> {
    let failed = |e: &dyn std::fmt::Display| UserError::Hashing(e.to_string());
    let mut bytes = [0u8; 16];
    getrandom::getrandom(&mut bytes).map_err(|e| failed(&e))?;
    let salt = SaltString::encode_b64(&bytes).map_err(|e| failed(&e))?;
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| failed(&e))
}

/// True when `password` matches the stored hash.
pub fn verify_password(password: &str, hash: &str) -> bool {
    PasswordHash::new(hash)
        .map(|h| {
            Argon2::default()
                .verify_password(password.as_bytes(), &h)
                .is_ok()
        })
        .unwrap_or(false)
}

/// What identifies the password a session was opened with: a digest of
/// the stored hash (a new password always gets a new salt, so a new hash).
pub fn account_version(password_hash: &str) -> String {
    hex::encode(Sha256::digest(password_hash.as_bytes()))
}

/// A hash to verify against when the user does not exist, so a wrong name
/// takes as long as a wrong password.
fn dummy_hash() -> &'static str {
    static HASH: OnceLock<String> = OnceLock::new();
    HASH.get_or_init(|| hash_password("no such user, no such password").unwrap_or_default())
}

/// [`hash_password`] off the async threads.
pub(super) async fn hash(password: String) -> Result<String, UserError> {
    tokio::task::spawn_blocking(move || hash_password(&password))
        .await
        .map_err(|e| UserError::Hashing(e.to_string()))?
}

/// [`verify_password`] off the async threads; with no stored hash (no
/// such user) it checks a dummy one and answers false, taking as long.
pub(super) async fn verify(password: String, hash: Option<String>) -> Result<bool, UserError> {
    tokio::task::spawn_blocking(move || match hash {
        Some(h) => verify_password(&password, &h),
        None => {
            verify_password(&password, dummy_hash());
            false
        }
    })
    .await
    .map_err(|e| UserError::Hashing(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_verify() {
        let h = hash_password("correct horse").unwrap();
        assert!(h.starts_with("$argon2id$"));
        assert!(verify_password("correct horse", &h));
        assert!(!verify_password("wrong horse", &h));
        assert!(!verify_password("correct horse", "not a hash"));
    }

    #[test]
    fn account_versions_follow_the_password_hash() {
        let a = hash_password("password one").unwrap();
        let b = hash_password("password one").unwrap();
        assert_eq!(account_version(&a), account_version(&a));
        assert_ne!(
            account_version(&a),
            account_version(&b),
            "new salt, new version"
        );
    }

    #[tokio::test]
    async fn checks_off_thread_and_without_a_user() {
        let h = hash("correct horse".into()).await.unwrap();
        assert!(verify("correct horse".into(), Some(h.clone()))
            .await
            .unwrap());
        assert!(!verify("wrong horse".into(), Some(h)).await.unwrap());
        assert!(!verify("no such user, no such password".into(), None)
            .await
            .unwrap());
    }
}
