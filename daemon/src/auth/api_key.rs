//! API keys: `slk_<12 hex prefix><40 hex secret>`. The prefix finds the
//! row; only the SHA-256 of the whole key is stored, and compared in
//! constant time.

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::{AuthCache, AuthError, Principal};
use crate::store::Store;

/// What every key starts with, so a leaked one is easy to recognise.
const MARK: &str = "slk_";
/// Hex digits of the public prefix.
const PREFIX_LEN: usize = 12;
/// Hex digits after the prefix.
const SECRET_LEN: usize = 40;

/// A key just made: the secret for its creator, the rest for the store.
#[derive(Debug)]
pub struct NewApiKey {
    /// The whole key, shown once and never stored.
    pub secret: String,
    /// The public prefix the row is found by.
    pub prefix: String,
    /// SHA-256 of the whole key, what the store keeps.
    pub hash: Vec<u8>,
}

impl NewApiKey {
    /// A new random key.
    pub fn generate() -> Self {
        let mut bytes = [0u8; (PREFIX_LEN + SECRET_LEN) / 2];
        getrandom::getrandom(&mut bytes).expect("OS random source");
        let prefix = hex::encode(&bytes[..PREFIX_LEN / 2]);
        let secret = format!("{MARK}{prefix}{}", hex::encode(&bytes[PREFIX_LEN / 2..]));
        let hash = Sha256::digest(secret.as_bytes()).to_vec();
        Self {
            secret,
            prefix,
            hash,
        }
    }
}

/// The public prefix of a presented key, when it has a key's shape.
pub fn key_prefix(presented: &str) -> Option<&str> {
    let rest = presented.trim().strip_prefix(MARK)?;
    if rest.len() != PREFIX_LEN + SECRET_LEN || !rest.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    Some(&rest[..PREFIX_LEN])
}

/// The principal of a presented `X-Api-Key`.
pub async fn verify_key(
    store: &Store,
    cache: &AuthCache,
    presented: &str,
) -> Result<Principal, AuthError> {
    let prefix = key_prefix(presented)
        .ok_or(AuthError::InvalidApiKey)?
        .to_string();
    let key = match cache.key(&prefix) {
        Some(k) => k,
        None => {
            let found = store.key_by_prefix(prefix.clone()).await?;
            let k = found.ok_or(AuthError::InvalidApiKey)?;
            cache.keep_key(&prefix, k.clone());
            k
        }
    };
    let hash = Sha256::digest(presented.trim().as_bytes());
    if !bool::from(hash.as_slice().ct_eq(&key.hash)) {
        return Err(AuthError::InvalidApiKey);
    }
    if key.revoked_at.is_some() {
        return Err(AuthError::RevokedApiKey(key.name));
    }
    // Checked on every use, cached key or not.
    if let Some(at) = key
        .expires_at
        .filter(|&at| at <= crate::timestamp::unix_now())
    {
        return Err(AuthError::ExpiredApiKey(key.name, at));
    }
    Ok(Principal::from_stored(
        format!("key:{}", key.id),
        &key.scopes,
        key.team_id,
        key.role,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_have_the_documented_shape() {
        let NewApiKey {
            secret,
            prefix,
            hash,
        } = NewApiKey::generate();
        assert!(secret.starts_with(&format!("slk_{prefix}")));
        assert_eq!(secret.len(), 4 + 52);
        assert_eq!(hash, Sha256::digest(secret.as_bytes()).to_vec());
        assert_eq!(key_prefix(&secret), Some(prefix.as_str()));
        assert_eq!(key_prefix(&format!(" {secret} ")), Some(prefix.as_str()));
    }

    #[test]
    fn only_key_shaped_strings_have_a_prefix() {
        let good = format!("slk_0123456789ab{}", "f".repeat(40));
        assert_eq!(key_prefix(&good), Some("0123456789ab"));
        assert_eq!(key_prefix("nonsense"), None);
        assert_eq!(key_prefix(&good[..good.len() - 1]), None);
        assert_eq!(key_prefix(&format!("{good}0")), None);
        assert_eq!(key_prefix(&good.replace("ab", "zz")), None);
        assert_eq!(key_prefix(&good.replace("slk_", "xyz_")), None);
    }
}
