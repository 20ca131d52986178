//! The principal: who is calling, which scopes they hold, their role and
//! their team, decided once per request and checked by every operation.

use super::AuthError;
use crate::access::{scopes_from_stored, Role, Scope};
use crate::store::teams::DEFAULT_TEAM;

/// Who is calling and what they may do; put in request extensions by the
/// API's auth middleware (or by the control socket for the local CLI).
#[derive(Debug, Clone)]
pub struct Principal {
    /// `key:<id>`, `app:<app id>`, `user:<name>` or `cli`, for logs and
    /// `created_by`.
    pub who: String,
    bits: u8,
    /// The caller's role: caps the scopes and decides which teams it sees.
    pub role: Role,
    /// The caller's team: where its new links go, and the only team a
    /// non-admin sees.
    pub team_id: i64,
}

impl Principal {
    /// The owner of the control socket: every scope, an admin.
    pub fn local() -> Self {
        Self {
            who: "cli".into(),
            bits: 0xff,
            role: Role::Admin,
            team_id: DEFAULT_TEAM,
        }
    }

    /// A signed-in admin UI user, named after the user: every scope their
    /// role allows, in their team.
    pub fn user(name: &str, team_id: i64, role: Role) -> Self {
        Self {
            who: format!("user:{name}"),
            bits: 0xff,
            role,
            team_id,
        }
    }

    /// A verified key or app with its stored scope list, capped by the
    /// role of its user (or its own, for one made before teams).
    pub(super) fn from_stored(who: String, scopes: &str, team_id: i64, role: Role) -> Self {
        let bits = scopes_from_stored(scopes)
            .into_iter()
            .fold(0u8, |b, s| b | s.bit());
        Self {
            who,
            bits,
            role,
            team_id,
        }
    }

    /// True when the scope (or `admin`) was granted and the role allows it.
    pub fn has(&self, scope: Scope) -> bool {
        self.bits & (scope.bit() | Scope::Admin.bit()) != 0 && self.role.allows(scope)
    }

    /// The one team whose links, keys and stats this caller sees; `None`
    /// for an admin, who sees every team.
    pub fn team_filter(&self) -> Option<i64> {
        (self.role != Role::Admin).then_some(self.team_id)
    }

    /// True when this caller may see things of team `team_id`.
    pub fn sees_team(&self, team_id: i64) -> bool {
        self.team_filter().is_none_or(|t| t == team_id)
    }

    /// [`AuthError::InsufficientScope`] unless the scope was granted.
    pub fn require(&self, scope: Scope) -> Result<(), AuthError> {
        if self.has(scope) {
            Ok(())
        } else {
            Err(AuthError::InsufficientScope(scope))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::{parse_scopes, scopes_to_string};

    #[test]
    fn scopes_parse_and_admin_implies_all() {
        let s = parse_scopes(&["links:read, stats:read".into()]).unwrap();
        assert_eq!(s, vec![Scope::LinksRead, Scope::StatsRead]);
        assert!(parse_scopes(&["links:delete".into()])
            .unwrap_err()
            .to_string()
            .contains("links:delete"));
        let p = Principal::from_stored("key:1".into(), &scopes_to_string(&s), 1, Role::Admin);
        assert!(p.has(Scope::LinksRead));
        assert!(!p.has(Scope::LinksWrite));
        assert!(matches!(
            p.require(Scope::LinksWrite),
            Err(AuthError::InsufficientScope(Scope::LinksWrite))
        ));
        let admin = Principal::from_stored("key:2".into(), "admin", 1, Role::Admin);
        assert!(Scope::ALL.iter().all(|s| admin.has(*s)));
        let user = Principal::user("alice", 1, Role::Admin);
        assert_eq!(user.who, "user:alice");
        assert!(Scope::ALL.iter().all(|s| user.has(*s)));
    }

    #[test]
    fn a_key_never_exceeds_its_role_and_sees_only_its_team() {
        let viewer_key =
            Principal::from_stored("key:3".into(), "links:write,admin", 2, Role::Viewer);
        assert!(!viewer_key.has(Scope::LinksWrite));
        assert!(!viewer_key.has(Scope::Admin));
        assert!(viewer_key.has(Scope::LinksRead));
        assert_eq!(viewer_key.team_filter(), Some(2));
        assert!(viewer_key.sees_team(2) && !viewer_key.sees_team(1));
        let member = Principal::user("bob", 2, Role::Member);
        assert!(member.has(Scope::LinksWrite) && !member.has(Scope::Admin));
        let admin = Principal::user("carol", 2, Role::Admin);
        assert_eq!(admin.team_filter(), None);
        assert!(admin.sees_team(1));
    }
}
