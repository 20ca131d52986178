//! Roles: what a user (and every key made for them) may do at most, and
//! which team's links they see. Scopes narrow a key further; a key never
//! exceeds its user's role.

use super::scope::Scope;

/// What a member of a team may do.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    serde::Serialize,
    serde::Deserialize,
    utoipa::ToSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Everything, in every team: users, teams, keys and all links.
    Admin,
    /// Create, edit and read the team's links and stats.
    Member,
    /// Read the team's links and stats.
    #[default]
    Viewer,
}

/// Why a role name was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown role \"{0}\" (known: admin, member, viewer)")]
pub struct RoleError(pub String);

impl Role {
    /// Every role, most powerful first, as forms list them.
    pub const ALL: [Role; 3] = [Role::Admin, Role::Member, Role::Viewer];

    /// Wire name, as in requests, the CLI and the database.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::Member => "member",
            Role::Viewer => "viewer",
        }
    }

    /// Parses a wire name (surrounding blanks ignored).
    pub fn parse(s: &str) -> Result<Role, RoleError> {
        Role::ALL
            .into_iter()
            .find(|r| r.as_str() == s.trim())
            .ok_or_else(|| RoleError(s.trim().to_string()))
    }

    /// A stored role; a value edited by hand that is none reads as the
    /// least one, so a bad row never grants more.
    pub fn from_stored(s: &str) -> Role {
        Role::parse(s).unwrap_or(Role::Viewer)
    }

    /// The role a credential made before teams gets from its scopes (the
    /// migrations map them the same way in SQL).
    pub fn from_scopes(scopes: &[Scope]) -> Role {
        if scopes.contains(&Scope::Admin) {
            Role::Admin
        } else if scopes.contains(&Scope::LinksWrite) {
            Role::Member
        } else {
            Role::Viewer
        }
    }

    /// True when this role permits what `scope` grants.
    pub fn allows(self, scope: Scope) -> bool {
        match self {
            Role::Admin => true,
            Role::Member => scope != Scope::Admin,
            Role::Viewer => matches!(scope, Scope::LinksRead | Scope::StatsRead),
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_parse_and_cap_scopes() {
        assert_eq!(Role::parse(" member "), Ok(Role::Member));
        assert_eq!(
            Role::parse("owner").unwrap_err().to_string(),
            "unknown role \"owner\" (known: admin, member, viewer)"
        );
        assert_eq!(Role::from_stored("root"), Role::Viewer);
        assert!(!Role::Viewer.allows(Scope::LinksWrite));
        assert!(Role::Viewer.allows(Scope::StatsRead));
        assert!(Role::Member.allows(Scope::LinksWrite));
        assert!(!Role::Member.allows(Scope::Admin));
        assert!(Scope::ALL.iter().all(|s| Role::Admin.allows(*s)));
        assert_eq!(Role::from_scopes(&[Scope::LinksRead]), Role::Viewer);
        assert_eq!(
            Role::from_scopes(&[Scope::LinksRead, Scope::LinksWrite]),
            Role::Member
        );
        assert_eq!(Role::from_scopes(&[Scope::Admin]), Role::Admin);
    }
}
