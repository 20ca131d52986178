//! App signing secrets: made, stored and keyed into HMAC here and only
//! here, so how a secret is kept at rest can change in this one file.

use hmac::{Hmac, Mac};
use sha2::Sha256;

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

    /// What the database keeps for this secret: today the hex itself.
    pub fn to_stored(&self) -> String {
        self.0.clone()
    }

    /// The secret back from what the database keeps.
    pub fn from_stored(stored: &str) -> Self {
        Self(stored.to_string())
    }

    fn mac(&self, message: &str) -> Hmac<Sha256> {
        let mut mac = Hmac::<Sha256>::new_from_slice(self.0.as_bytes()).expect("any key length");
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
}
