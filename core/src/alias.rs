//! Custom aliases (vanity codes).
//!
//! The rule, which keeps aliases and generated codes apart for good:
//!
//! * an alias is 1 to 64 characters of `0-9A-Za-z`, `-` and `_`;
//! * an alias is refused when it would pass the check character of a
//!   generated code under the deployment key, in either format-version slot
//!   ([`Codec::could_be_code`]).
//!
//! So any path is at most one of the two: the edge decodes it first, and only
//! a string that fails to decode is looked for among the aliases. Aliases
//! that contain `-` or `_` can never be codes; about one alphanumeric alias of
//! a code-like length in 31 is refused and needs another spelling.

use crate::codec::Codec;

/// Longest alias.
pub const MAX_ALIAS_LEN: usize = 64;

/// Why an alias was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AliasError {
    #[error("alias is empty")]
    Empty,
    #[error("alias is {len} characters, longer than the maximum of {MAX_ALIAS_LEN}")]
    TooLong { len: usize },
    #[error(
        "alias may only contain 0-9, A-Z, a-z, '-' and '_'; found {found:?} at position {pos}"
    )]
    BadChar { pos: usize, found: char },
    #[error("alias \"{0}\" has the form of a generated code; choose another")]
    LooksLikeCode(String),
    #[error("alias \"{0}\" is reserved for paths the operator routes elsewhere")]
    Reserved(String),
}

/// Checks `alias` against the alias rule and the operator's reserved names
/// (compared without regard to case).
pub fn validate_alias(codec: &Codec, alias: &str, reserved: &[String]) -> Result<(), AliasError> {
    if alias.is_empty() {
        return Err(AliasError::Empty);
    }
    let len = alias.chars().count();
    if len > MAX_ALIAS_LEN {
        return Err(AliasError::TooLong { len });
    }
    if let Some((pos, found)) = alias
        .chars()
        .enumerate()
        .find(|(_, c)| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
    {
        return Err(AliasError::BadChar { pos, found });
    }
    if reserved.iter().any(|r| r.eq_ignore_ascii_case(alias)) {
        return Err(AliasError::Reserved(alias.to_string()));
    }
    if codec.could_be_code(alias.as_bytes()) {
        return Err(AliasError::LooksLikeCode(alias.to_string()));
    }
    Ok(())
}

/// True for bytes that can appear in an alias: the edge uses this to skip
/// the alias set for paths that cannot be one.
pub fn is_alias_shaped(bytes: &[u8]) -> bool {
    !bytes.is_empty()
        && bytes.len() <= MAX_ALIAS_LEN
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || *b == b'-' || *b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DeploymentKey;

    fn codec() -> Codec {
        Codec::new(&DeploymentKey::from_bytes([8; 32]))
    }

    #[test]
    fn accepts_ordinary_aliases() {
        let c = codec();
        for a in ["summer-sale", "x", "Black_Friday-2026", &"a".repeat(64)] {
            assert_eq!(validate_alias(&c, a, &[]), Ok(()), "{a}");
            assert!(is_alias_shaped(a.as_bytes()));
        }
    }

    #[test]
    fn refuses_with_a_reason() {
        let c = codec();
        let reserved = vec!["api".to_string(), "admin".to_string()];
        assert_eq!(validate_alias(&c, "", &reserved), Err(AliasError::Empty));
        assert_eq!(
            validate_alias(&c, &"a".repeat(65), &reserved),
            Err(AliasError::TooLong { len: 65 })
        );
        assert_eq!(
            validate_alias(&c, "a/b", &reserved),
            Err(AliasError::BadChar { pos: 1, found: '/' })
        );
        assert_eq!(
            validate_alias(&c, "ünï", &reserved),
            Err(AliasError::BadChar {
                pos: 0, found: 'ü'
            })
        );
        assert_eq!(
            validate_alias(&c, "API", &reserved),
            Err(AliasError::Reserved("API".into()))
        );
        let code = c.encode(4242);
        assert_eq!(
            validate_alias(&c, &code, &reserved),
            Err(AliasError::LooksLikeCode(code.to_string()))
        );
    }

    #[test]
    fn no_valid_alias_ever_decodes_as_a_code() {
        let c = codec();
        let mut accepted = 0;
        for i in 0..20_000u32 {
            let alias = format!("{:x}", i.wrapping_mul(2_654_435_761));
            if validate_alias(&c, &alias, &[]).is_ok() {
                accepted += 1;
                assert!(c.decode(alias.as_bytes()).is_err(), "{alias}");
            }
        }
        assert!(accepted > 18_000, "{accepted}");
    }
}
