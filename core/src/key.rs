//! The deployment key: 32 random bytes shared by the module and the daemon.
//!
//! Stored as 64 hex characters (surrounding whitespace allowed) in a key file
//! that both sides are pointed at. Every secret the codec uses is derived
//! from it, so two deployments never produce each other's codes.

use std::fmt;
use std::io::Write;
use std::path::Path;

use sha2::{Digest, Sha256};

/// Length of the key in bytes.
pub const KEY_LEN: usize = 32;

/// The secret every code is derived from.
#[derive(Clone, PartialEq, Eq)]
pub struct DeploymentKey([u8; KEY_LEN]);

/// Why a key could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The key file could not be read or created.
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// The text is not 64 hex characters.
    #[error("key must be 64 hex characters (32 bytes), found {found}")]
    Format { found: String },
    /// The operating system's random source failed.
    #[error("cannot generate a key: {0}")]
    Random(String),
}

impl DeploymentKey {
    /// A fresh key from the operating system's random source.
    pub fn generate() -> Result<Self, KeyError> {
        let mut bytes = [0u8; KEY_LEN];
        getrandom::getrandom(&mut bytes).map_err(|e| KeyError::Random(e.to_string()))?;
        Ok(Self(bytes))
    }

    /// A key from raw bytes (tests and fixed vectors).
    pub const fn from_bytes(bytes: [u8; KEY_LEN]) -> Self {
        Self(bytes)
    }

    /// Parses the key file format: 64 hex characters, whitespace around them ignored.
    pub fn from_hex(text: &str) -> Result<Self, KeyError> {
        let text = text.trim();
        let describe = || {
            if text.is_empty() {
                "an empty file".to_string()
            } else if text.len() != KEY_LEN * 2 {
                format!("{} characters", text.len())
            } else {
                "a character that is not a hex digit".to_string()
            }
        };
        if text.len() != KEY_LEN * 2 {
            return Err(KeyError::Format { found: describe() });
        }
        let mut bytes = [0u8; KEY_LEN];
        for (i, pair) in text.as_bytes().chunks_exact(2).enumerate() {
            match (hex_value(pair[0]), hex_value(pair[1])) {
                (Some(hi), Some(lo)) => bytes[i] = hi << 4 | lo,
                _ => return Err(KeyError::Format { found: describe() }),
            }
        }
        Ok(Self(bytes))
    }

    /// Reads a key file.
    pub fn load(path: &Path) -> Result<Self, KeyError> {
        let text = std::fs::read_to_string(path).map_err(|source| KeyError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Self::from_hex(&text)
    }

    /// Writes the key to a new file with mode 0600; refuses to overwrite one.
    pub fn write_new(&self, path: &Path) -> Result<(), KeyError> {
        let io = |source| KeyError::Io {
            path: path.display().to_string(),
            source,
        };
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let mut file = options.open(path).map_err(io)?;
        writeln!(file, "{}", self.to_hex()).map_err(io)?;
        file.sync_all().map_err(io)
    }

    /// The key file format.
    pub fn to_hex(&self) -> String {
        let mut out = String::with_capacity(KEY_LEN * 2);
        for b in self.0 {
            out.push_str(&format!("{b:02x}"));
        }
        out
    }

    /// A public hash of the key, compared in the module/daemon handshake.
    pub fn fingerprint(&self) -> Fingerprint {
        let digest = self.derive(b"fingerprint");
        let mut fp = [0u8; 8];
        fp.copy_from_slice(&digest[..8]);
        Fingerprint(fp)
    }

    /// A subkey for one purpose; purposes never share bytes.
    pub(crate) fn derive(&self, purpose: &[u8]) -> [u8; 32] {
        let mut h = Sha256::new();
        h.update(b"shortlink/v1/");
        h.update(purpose);
        h.update([0]);
        h.update(self.0);
        h.finalize().into()
    }
}

impl fmt::Debug for DeploymentKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print the secret, not even in debug output.
        write!(f, "DeploymentKey({})", self.fingerprint())
    }
}

/// Eight bytes of a hash of the key; safe to log and to send over IPC.
#[derive(Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Fingerprint(pub [u8; 8]);

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

fn hex_value(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trip_and_whitespace() {
        let key = DeploymentKey::generate().unwrap();
        let text = format!("  {}\n", key.to_hex());
        assert_eq!(DeploymentKey::from_hex(&text).unwrap(), key);
    }

    #[test]
    fn bad_key_text_is_named() {
        let short = DeploymentKey::from_hex("abcd").unwrap_err().to_string();
        assert!(short.contains("found 4 characters"), "{short}");
        let junk = "zz".repeat(32);
        let err = DeploymentKey::from_hex(&junk).unwrap_err().to_string();
        assert!(err.contains("not a hex digit"), "{err}");
        let empty = DeploymentKey::from_hex("\n").unwrap_err().to_string();
        assert!(empty.contains("empty file"), "{empty}");
    }

    #[test]
    fn write_new_is_private_and_refuses_to_overwrite() {
        let dir = std::env::temp_dir().join(format!("slkey-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("key");
        let _ = std::fs::remove_file(&path);
        let key = DeploymentKey::generate().unwrap();
        key.write_new(&path).unwrap();
        assert_eq!(DeploymentKey::load(&path).unwrap(), key);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert!(DeploymentKey::generate().unwrap().write_new(&path).is_err());
        assert_eq!(DeploymentKey::load(&path).unwrap(), key);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn fingerprints_differ_between_keys_and_hide_the_key() {
        let a = DeploymentKey::from_bytes([1; 32]);
        let b = DeploymentKey::from_bytes([2; 32]);
        assert_ne!(a.fingerprint(), b.fingerprint());
        assert_eq!(a.fingerprint().to_string().len(), 16);
        assert!(!format!("{a:?}").contains(&a.to_hex()));
    }
}
