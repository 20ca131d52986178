//! Scopes: what an API key or app may do, and their stored form.

/// A permission an API key or app carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Create, edit and delete links.
    LinksWrite,
    /// Read links.
    LinksRead,
    /// Read click stats and metrics.
    StatsRead,
    /// Manage keys, apps and users; implies every other scope.
    Admin,
}

/// Why a scope list was refused; the message names the culprit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScopeError {
    /// A name that is not a scope.
    #[error("unknown scope \"{0}\" (known: links:write, links:read, stats:read, admin)")]
    Unknown(String),
    /// The list held no scope at all.
    #[error("at least one scope is needed")]
    Empty,
}

impl Scope {
    /// Every scope, in the order forms and lists show them.
    pub const ALL: [Scope; 4] = [
        Scope::LinksWrite,
        Scope::LinksRead,
        Scope::StatsRead,
        Scope::Admin,
    ];

    /// Wire name, as in requests, the CLI and the database.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::LinksWrite => "links:write",
            Scope::LinksRead => "links:read",
            Scope::StatsRead => "stats:read",
            Scope::Admin => "admin",
        }
    }

    /// Parses a wire name (surrounding blanks ignored).
    pub fn parse(s: &str) -> Option<Scope> {
        Scope::ALL.into_iter().find(|x| x.as_str() == s.trim())
    }

    /// This scope's bit in a [`crate::auth::Principal`]'s grant.
    pub(crate) fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

/// Parses scope lists whose items may themselves be comma-separated
/// (`["links:read, stats:read"]`); duplicates are dropped.
pub fn parse_scopes(list: &[String]) -> Result<Vec<Scope>, ScopeError> {
    let mut out = Vec::new();
    for s in list
        .iter()
        .flat_map(|s| s.split(','))
        .filter(|s| !s.trim().is_empty())
    {
        let scope = Scope::parse(s).ok_or_else(|| ScopeError::Unknown(s.trim().to_string()))?;
        if !out.contains(&scope) {
            out.push(scope);
        }
    }
    if out.is_empty() {
        return Err(ScopeError::Empty);
    }
    Ok(out)
}

/// Stored form of a scope list: wire names joined by commas, no spaces.
pub fn scopes_to_string(scopes: &[Scope]) -> String {
    scopes
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(",")
}

/// Reads a stored scope list back (names it does not know are skipped).
pub fn scopes_from_stored(stored: &str) -> Vec<Scope> {
    stored.split(',').filter_map(Scope::parse).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scope_lists_parse_and_round_trip() {
        let s = parse_scopes(&["links:read, stats:read".into(), "links:read".into()]).unwrap();
        assert_eq!(s, vec![Scope::LinksRead, Scope::StatsRead]);
        assert_eq!(scopes_to_string(&s), "links:read,stats:read");
        assert_eq!(scopes_from_stored("links:read,stats:read"), s);
        assert!(parse_scopes(&["links:delete".into()])
            .unwrap_err()
            .to_string()
            .contains("links:delete"));
        assert_eq!(parse_scopes(&[" , ".into()]), Err(ScopeError::Empty));
    }
}
