//! The short names a row's link had where it came from (its alias, its
//! exported or foreign code), and how each keeps working here, so an old
//! short URL still reaches its link after an import:
//!
//! * a name our alias rules allow becomes the alias;
//! * a name that has the form of one of our generated codes (it passes
//!   the check character under this deployment's key, about one string
//!   in 62) cannot be an alias, since the edge takes it for a code: the
//!   link keeps the id that code stands for, without moving the id
//!   allocator (leases skip ids a link already has), so the name reaches
//!   the link as its generated code;
//! * a name that would pass the check only in the format's other version
//!   slot is kept as an alias all the same (the edge looks every string
//!   that fails the check up among the aliases);
//! * anything else (a character our aliases do not allow, a reserved
//!   name) is named in a note or the row's error.

use shortlink_core::alias::AliasError;

use super::super::rules::LinkRules;

/// What an old name becomes here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OldName {
    /// An alias, as any create could ask for.
    Alias(String),
    /// The generated code of this id: the link keeps the id.
    Code(u64),
    /// An alias only an import may keep: it would pass the check in the
    /// other version slot.
    LooseAlias(String),
    /// Not kept: why.
    Refused(String),
}

/// What `name` becomes under `rules`.
pub fn judge(rules: &LinkRules, name: &str) -> OldName {
    match rules.alias_problem(name) {
        None => OldName::Alias(name.to_string()),
        Some(AliasError::LooksLikeCode(_)) => match rules.codec.decode(name.as_bytes()) {
            // The ids PostgreSQL and SQLite store.
            Ok(id) if id <= i64::MAX as u64 => OldName::Code(id),
            Ok(id) => OldName::Refused(format!(
                "\"{name}\" has the form of a generated code here, for id {id}, \
                 beyond what the database stores"
            )),
            Err(_) => OldName::LooseAlias(name.to_string()),
        },
        Some(e) => OldName::Refused(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use shortlink_core::{Codec, DeploymentKey};

    fn rules() -> LinkRules {
        let codec = Codec::new(&DeploymentKey::from_bytes([3; 32]));
        LinkRules::new(&Config::default(), codec)
    }

    #[test]
    fn every_alias_shaped_name_is_kept_one_way_or_another() {
        let r = rules();
        let (mut alias, mut code, mut loose) = (0, 0, 0);
        let last: Vec<char> = ('0'..='9').chain('a'..='z').chain('A'..='Z').collect();
        for i in 0..20_000usize {
            let name = format!("Ab{:05}{}", i / 62, last[i % 62]);
            match judge(&r, &name) {
                OldName::Alias(a) => {
                    assert_eq!(a, name);
                    alias += 1;
                }
                OldName::Code(id) => {
                    // The name is that id's code: the edge reaches the link.
                    assert_eq!(r.codec.encode(id).as_str(), name);
                    code += 1;
                }
                OldName::LooseAlias(a) => {
                    assert_eq!(a, name);
                    assert!(r.codec.decode(name.as_bytes()).is_err());
                    loose += 1;
                }
                OldName::Refused(why) => panic!("{name}: {why}"),
            }
        }
        // About one in 62 each way.
        assert!(code > 200 && loose > 200, "{alias} {code} {loose}");
    }

    #[test]
    fn names_no_alias_may_have_are_refused_with_the_reason() {
        let r = rules();
        match judge(&r, "no/slash") {
            OldName::Refused(why) => assert!(why.contains("'/'"), "{why}"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(judge(&r, "summer-sale"), OldName::Alias(_)));
    }
}
