//! The principal: who is calling and which scopes they hold, decided once
//! per request and checked by every operation.

use super::scope::{scopes_from_stored, Scope};
use super::AuthError;

/// Who is calling and what they may do; put in request extensions by the
/// API's auth middleware (or by the control socket for the local CLI).
#[derive(Debug, Clone)]
pub struct Principal {
    /// `key:<id>`, `app:<app id>`, `user:<name>` or `cli`, for logs and
    /// `created_by`.
    pub who: String,
    bits: u8,
}

impl Principal {
    /// The owner of the control socket: every scope.
    pub fn local() -> Self {
        Self {
            who: "cli".into(),
            bits: 0xff,
        }
    }

    /// A signed-in admin UI user: every scope, named after the user.
    pub fn admin_user(name: &str) -> Self {
        Self {
            who: format!("user:{name}"),
            bits: 0xff,
        }
    }

    /// A verified key or app with its stored scope list.
    pub(super) fn from_stored(who: String, scopes: &str) -> Self {
        let bits = scopes_from_stored(scopes)
            .into_iter()
            .fold(0u8, |b, s| b | s.bit());
        Self { who, bits }
    }

    /// True when the scope (or `admin`) was granted.
    pub fn has(&self, scope: Scope) -> bool {
        self.bits & (scope.bit() | Scope::Admin.bit()) != 0
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
    use super::super::scope::{parse_scopes, scopes_to_string};
    use super::*;

    #[test]
    fn scopes_parse_and_admin_implies_all() {
        let s = parse_scopes(&["links:read, stats:read".into()]).unwrap();
        assert_eq!(s, vec![Scope::LinksRead, Scope::StatsRead]);
        assert!(parse_scopes(&["links:delete".into()])
            .unwrap_err()
            .to_string()
            .contains("links:delete"));
        let p = Principal::from_stored("key:1".into(), &scopes_to_string(&s));
        assert!(p.has(Scope::LinksRead));
        assert!(!p.has(Scope::LinksWrite));
        assert!(matches!(
            p.require(Scope::LinksWrite),
            Err(AuthError::InsufficientScope(Scope::LinksWrite))
        ));
        let admin = Principal::from_stored("key:2".into(), "admin");
        assert!(Scope::ALL.iter().all(|s| admin.has(*s)));
        let user = Principal::admin_user("alice");
        assert_eq!(user.who, "user:alice");
        assert!(Scope::ALL.iter().all(|s| user.has(*s)));
    }
}
