//! Link passwords: the write-only field of a create or an edit, its rules,
//! and its argon2id hash (made in the daemon's bounded argon2 pool, like
//! admin passwords). The hash is stored and sent to nobody: views, exports
//! and the edge only learn that a link is protected.

use serde::{Deserialize, Serialize};

use crate::store::links::invalid;
use crate::store::LinkError;
use crate::users::argon2_pool::Argon2Pool;

/// Longest link password, in bytes (argon2 hashes it whole).
pub const MAX_LINK_PASSWORD: usize = shortlink_core::ipc::MAX_PASSWORD;

/// A link password as given in a request; never printed, never returned.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct LinkPassword(String);

impl std::fmt::Debug for LinkPassword {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LinkPassword(..)")
    }
}

impl LinkPassword {
    /// A password from text (the CLI's file or prompt, the admin form).
    pub fn new(text: impl Into<String>) -> Self {
        Self(text.into())
    }

    /// The password itself, for hashing and checking.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The rules: 1 to [`MAX_LINK_PASSWORD`] bytes, no control characters
    /// (a form field or a file's line cannot carry them unmangled).
    pub fn check(&self) -> Result<(), LinkError> {
        if self.0.is_empty() {
            return Err(invalid(
                "password",
                "invalid_password",
                "password is empty; give one, or leave the field out (null on an edit removes it)",
            ));
        }
        if self.0.len() > MAX_LINK_PASSWORD {
            return Err(invalid(
                "password",
                "invalid_password",
                format!(
                    "password is {} bytes, longer than the maximum of {MAX_LINK_PASSWORD}",
                    self.0.len()
                ),
            ));
        }
        if self.0.chars().any(char::is_control) {
            return Err(invalid(
                "password",
                "invalid_password",
                "password holds a control character",
            ));
        }
        Ok(())
    }

    /// Its argon2id hash, made in the daemon's pool (the caller is
    /// authenticated, so it waits its turn rather than being refused).
    pub async fn hash(&self) -> Result<String, LinkError> {
        self.check()?;
        let text = self.0.clone();
        Argon2Pool::global()
            .run(move |memory| crate::users::hash_with(&text, memory))
            .await
            .map_err(|e| LinkError::Hashing(e.to_string()))?
            .map_err(|e| LinkError::Hashing(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_long_and_control_passwords_are_refused_naming_the_field() {
        for bad in [
            String::new(),
            "x".repeat(MAX_LINK_PASSWORD + 1),
            "a\nb".into(),
        ] {
            match LinkPassword::new(bad).check() {
                Err(LinkError::Invalid { field, code, .. }) => {
                    assert_eq!((field, code), ("password", "invalid_password"))
                }
                other => panic!("{other:?}"),
            }
        }
        LinkPassword::new("correct horse").check().unwrap();
        assert_eq!(
            format!("{:?}", LinkPassword::new("hunter2")),
            "LinkPassword(..)"
        );
    }

    #[tokio::test]
    async fn a_hash_verifies_the_password_and_not_another() {
        let h = LinkPassword::new("open sesame").hash().await.unwrap();
        assert!(h.starts_with("$argon2id$"), "{h}");
        assert!(crate::users::verify_password("open sesame", &h));
        assert!(!crate::users::verify_password("open sesame!", &h));
    }
}
