//! From what a client typed to a link id, and from a link to its public code.

use shortlink_core::alias::is_alias_shaped;
use shortlink_core::Codec;

use crate::store::{CodeRef, Link};

/// Classifies `text`: a generated code first (no I/O), else an alias.
pub fn resolve(codec: &Codec, text: &str) -> CodeRef {
    match codec.decode(text.as_bytes()) {
        Ok(id) if id <= i64::MAX as u64 => CodeRef::Id(id),
        Ok(_) => CodeRef::Invalid,
        Err(_) if is_alias_shaped(text.as_bytes()) => CodeRef::Alias(text.to_string()),
        Err(_) => CodeRef::Invalid,
    }
}

/// The generated code of a link (always reaches it).
pub fn generated(codec: &Codec, link: &Link) -> String {
    generated_for_id(codec, link.id)
}

/// The generated code of a link id, for callers that hold only the id (the
/// click fold's changed links).
pub fn generated_for_id(codec: &Codec, id: u64) -> String {
    codec.encode(id).as_str().to_string()
}

/// The code shown in API replies: the alias when set, else the generated code.
pub fn public(codec: &Codec, link: &Link) -> String {
    link.alias.clone().unwrap_or_else(|| generated(codec, link))
}

#[cfg(test)]
mod tests {
    use super::*;
    use shortlink_core::DeploymentKey;

    #[test]
    fn codes_and_aliases() {
        let codec = Codec::new(&DeploymentKey::from_bytes([3; 32]));
        let code = codec.encode(123_456).as_str().to_string();
        assert_eq!(resolve(&codec, &code), CodeRef::Id(123_456));
        assert_eq!(
            resolve(&codec, "my-launch"),
            CodeRef::Alias("my-launch".into())
        );
        assert_eq!(resolve(&codec, "a/b"), CodeRef::Invalid);
        let link = Link {
            id: 123_456,
            ..Link::default()
        };
        assert_eq!(public(&codec, &link), code);
        let aliased = Link {
            alias: Some("x_y".into()),
            ..link
        };
        assert_eq!(public(&codec, &aliased), "x_y");
    }
}
