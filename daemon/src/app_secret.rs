//! App signing secrets: made, sealed for the database and keyed into HMAC
//! here and only here.
//!
//! HMAC needs the secret itself, so the database cannot keep a hash of it
//! as it does for API keys. It keeps the secret sealed instead
//! ([`SecretSeal`]): ChaCha20-Poly1305 under a subkey of the deployment
//! key, a random nonce per secret, the app id as associated data (a sealed
//! secret moved to another app's row does not open). A copy of the
//! database alone hands out no secret; the store seals on insert and opens
//! on read (`store::sqlite::keys`), so the rest of the daemon sees clear
//! secrets.

use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce};
use hmac::{Hmac, Mac};
use sha2::Sha256;
use shortlink_core::DeploymentKey;

/// Random bytes in a secret (shown as twice as many hex digits).
const SECRET_BYTES: usize = 32;
/// Random bytes in an app id.
const APP_ID_BYTES: usize = 8;

/// The HMAC key an app signs its requests with.
#[derive(Clone, PartialEq, Eq)]
pub struct AppSecret(String);

impl std::fmt::Debug for AppSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AppSecret(..)")
    }
}

impl AppSecret {
    /// A new random secret (hex).
    pub fn generate() -> Self {
        let mut bytes = [0u8; SECRET_BYTES];
        getrandom::getrandom(&mut bytes).expect("OS random source");
        Self(hex::encode(bytes))
    }

    /// A secret as its holder knows it (what a client signs with).
    pub fn from_clear(secret: &str) -> Self {
        Self(secret.to_string())
    }

    /// The secret in clear, to show its creator once.
    pub fn reveal(&self) -> &str {
        &self.0
    }

    /// What the store is handed for this secret (the store seals it with
    /// [`SecretSeal`] in the same statement that writes it).
    pub fn to_stored(&self) -> String {
        self.0.clone()
    }

    /// The secret back from what the store hands out (opened already).
    pub fn from_stored(stored: &str) -> Self {
        Self(stored.to_string())
    }

    fn mac(&self, message: &str) -> Hmac<Sha256> {
        let mut mac =
            <Hmac<Sha256> as Mac>::new_from_slice(self.0.as_bytes()).expect("any key length");
        mac.update(message.as_bytes());
        mac
    }

    /// Hex HMAC-SHA256 of `message` under this secret.
    pub fn sign(&self, message: &str) -> String {
        hex::encode(self.mac(message).finalize().into_bytes())
    }

    /// True when `presented` is the HMAC of `message` (constant time).
    pub fn verifies(&self, message: &str, presented: &[u8]) -> bool {
        self.mac(message).verify_slice(presented).is_ok()
    }
}

/// Marks a sealed secret in the database (version 1 of the format:
/// hex of nonce, ciphertext and tag follows).
pub const SEALED_PREFIX: &str = "sealed1:";
/// Bytes of a ChaCha20-Poly1305 nonce.
const NONCE_BYTES: usize = 12;
/// What the seal's subkey is derived for.
const SEAL_PURPOSE: &[u8] = b"shortlink/v1/app-secret-seal";

/// Why a stored secret could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum SealError {
    /// The value is not a sealed secret at all (stored in clear, say).
    #[error("the stored secret of {0} is not sealed")]
    NotSealed(String),
    /// It was sealed under another deployment key, for another app, or
    /// changed since.
    #[error(
        "the stored secret of {0} does not open with this deployment key \
         (sealed under another key, or altered)"
    )]
    WrongKey(String),
}

/// Seals app secrets for the database and opens them again.
#[derive(Clone)]
pub struct SecretSeal {
    cipher: ChaCha20Poly1305,
}

impl std::fmt::Debug for SecretSeal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretSeal(..)")
    }
}

impl SecretSeal {
    /// The seal of this deployment: its key is HMAC-SHA256 keyed with the
    /// deployment key over [`SEAL_PURPOSE`], used for nothing else.
    pub fn new(key: &DeploymentKey) -> Self {
        let bytes = hex::decode(key.to_hex()).expect("a key's hex form decodes");
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&bytes).expect("any key length");
        mac.update(SEAL_PURPOSE);
        let subkey = mac.finalize().into_bytes();
        Self {
            cipher: ChaCha20Poly1305::new(Key::from_slice(&subkey)),
        }
    }

    /// True when `stored` has the sealed form (says nothing of the key).
    pub fn is_sealed(stored: &str) -> bool {
        stored.starts_with(SEALED_PREFIX)
    }

    /// `secret` sealed for the row of `app_id`.
    pub fn seal(&self, app_id: &str, secret: &str) -> String {
        let mut nonce = [0u8; NONCE_BYTES];
        getrandom::getrandom(&mut nonce).expect("OS random source");
        let sealed = self
            .cipher
            .encrypt(
                Nonce::from_slice(&nonce),
                Payload {
                    msg: secret.as_bytes(),
                    aad: app_id.as_bytes(),
                },
            )
            .expect("ChaCha20-Poly1305 seals any message this short");
        format!(
            "{SEALED_PREFIX}{}{}",
            hex::encode(nonce),
            hex::encode(sealed)
        )
    }

    /// The secret of `app_id` from its sealed form.
    pub fn open(&self, app_id: &str, stored: &str) -> Result<String, SealError> {
        let body = stored
            .strip_prefix(SEALED_PREFIX)
            .ok_or_else(|| SealError::NotSealed(app_id.to_string()))?;
        let wrong = || SealError::WrongKey(app_id.to_string());
        let bytes = hex::decode(body).map_err(|_| wrong())?;
        if bytes.len() < NONCE_BYTES {
            return Err(wrong());
        }
        let (nonce, sealed) = bytes.split_at(NONCE_BYTES);
        let clear = self
            .cipher
            .decrypt(
                Nonce::from_slice(nonce),
                Payload {
                    msg: sealed,
                    aad: app_id.as_bytes(),
                },
            )
            .map_err(|_| wrong())?;
        String::from_utf8(clear).map_err(|_| wrong())
    }
}

/// A new public app id, `app_` and 16 hex digits.
pub fn new_app_id() -> String {
    let mut bytes = [0u8; APP_ID_BYTES];
    getrandom::getrandom(&mut bytes).expect("OS random source");
    format!("app_{}", hex::encode(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_sign_verify_and_round_trip() {
        let s = AppSecret::generate();
        assert_eq!(s.reveal().len(), 2 * SECRET_BYTES);
        assert_ne!(s, AppSecret::generate());
        assert_eq!(AppSecret::from_stored(&s.to_stored()), s);
        let sig = s.sign("m");
        assert_eq!(sig.len(), 64);
        assert!(s.verifies("m", &hex::decode(&sig).unwrap()));
        assert!(!s.verifies("n", &hex::decode(&sig).unwrap()));
        assert!(!format!("{s:?}").contains(s.reveal()), "never logged");
        let id = new_app_id();
        assert!(id.starts_with("app_") && id.len() == 4 + 2 * APP_ID_BYTES);
    }

    #[test]
    fn sealed_secrets_open_only_with_the_key_for_their_app() {
        let key = DeploymentKey::generate().unwrap();
        let seal = SecretSeal::new(&key);
        let secret = AppSecret::generate();
        let sealed = seal.seal("app_1", secret.reveal());
        assert!(SecretSeal::is_sealed(&sealed));
        assert!(!sealed.contains(secret.reveal()));
        assert_ne!(sealed, seal.seal("app_1", secret.reveal()), "fresh nonce");
        assert_eq!(seal.open("app_1", &sealed).unwrap(), secret.reveal());
        // Same key from its file form: same seal.
        let again = SecretSeal::new(&DeploymentKey::from_hex(&key.to_hex()).unwrap());
        assert_eq!(again.open("app_1", &sealed).unwrap(), secret.reveal());

        let other = SecretSeal::new(&DeploymentKey::generate().unwrap());
        assert!(matches!(
            other.open("app_1", &sealed),
            Err(SealError::WrongKey(_))
        ));
        assert!(matches!(
            seal.open("app_2", &sealed),
            Err(SealError::WrongKey(_))
        ));
        let mut altered = sealed.clone().into_bytes();
        let last = altered.len() - 1;
        altered[last] = if altered[last] == b'0' { b'1' } else { b'0' };
        let altered = String::from_utf8(altered).unwrap();
        assert!(seal.open("app_1", &altered).is_err());
        assert!(matches!(
            seal.open("app_1", secret.reveal()),
            Err(SealError::NotSealed(_))
        ));
        for bad in ["sealed1:", "sealed1:zz", "sealed1:00"] {
            assert!(seal.open("app_1", bad).is_err(), "{bad}");
        }
        assert!(!format!("{seal:?}").contains(&key.to_hex()));
    }
}
