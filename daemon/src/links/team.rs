//! Which team's links a call sees and where its new links go: the one
//! rule every link operation (API, admin UI, CLI) applies. A link of
//! another team answers "not found", never "forbidden", so its existence
//! is not revealed; aliases stay global (the edge serves them all).

use sha2::{Digest, Sha256};

use crate::auth::Principal;
use crate::store::teams::DEFAULT_TEAM;
use crate::store::Link;

/// The team side of a [`Links`] call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TeamScope {
    /// The only team whose links are seen; `None`: every team (an admin,
    /// the local CLI, the edge lookup).
    pub sees: Option<i64>,
    /// The team new links are created in.
    pub owner: i64,
}

impl TeamScope {
    /// Every team, new links in the default one.
    pub const ALL: TeamScope = TeamScope {
        sees: None,
        owner: DEFAULT_TEAM,
    };

    /// What `p` sees and where its links go.
    pub fn of(p: &Principal) -> Self {
        TeamScope {
            sees: p.team_filter(),
            owner: p.team_id,
        }
    }

    /// True when `link` is visible in this scope.
    pub fn sees_link(&self, link: &Link) -> bool {
        self.sees.is_none_or(|t| t == link.team_id)
    }

    /// The dedupe hash of a new link in the owner team: links of other
    /// teams never match (the default team's hash is the one stored before
    /// teams, so old links still dedupe).
    pub fn dedupe_hash(&self, hash: [u8; 32]) -> [u8; 32] {
        if self.owner == DEFAULT_TEAM {
            return hash;
        }
        let mut h = Sha256::new();
        h.update(hash);
        h.update(self.owner.to_be_bytes());
        h.finalize().into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::Role;

    #[test]
    fn members_see_their_team_and_admins_every_team() {
        let link = |team_id| Link {
            team_id,
            ..Link::default()
        };
        let member = TeamScope::of(&Principal::user("m", 2, Role::Member));
        assert!(member.sees_link(&link(2)));
        assert!(!member.sees_link(&link(1)));
        assert_eq!(member.owner, 2);
        let admin = TeamScope::of(&Principal::user("a", 2, Role::Admin));
        assert!(admin.sees_link(&link(1)) && admin.sees_link(&link(2)));
        assert_eq!(admin.owner, 2);
    }

    #[test]
    fn dedupe_hashes_differ_per_team_and_stay_for_the_default_one() {
        let h = [7u8; 32];
        assert_eq!(TeamScope::ALL.dedupe_hash(h), h);
        let two = TeamScope {
            sees: Some(2),
            owner: 2,
        };
        let three = TeamScope {
            sees: Some(3),
            owner: 3,
        };
        assert_ne!(two.dedupe_hash(h), h);
        assert_ne!(two.dedupe_hash(h), three.dedupe_hash(h));
    }
}
