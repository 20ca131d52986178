//! An edit judged before the write: [`LinkRules::check_patch`] runs every
//! rule on the caller's task, and the writer thread only applies the
//! result to the stored link with [`CheckedPatch::apply`].
//!
//! Two checks depend on the stored link and so are settled by `apply`: a
//! refused alias only matters when it is not the link's current alias (a
//! kept alias is not judged again), and `renew_on_access: true` without a
//! new lifetime takes the link's remaining one. The error reported is the
//! one of the first bad field, in the order of [`UpdateLink`]'s fields.

use shortlink_core::check_mode::{may_fall_back, CheckMode};
use shortlink_core::country::CountryTargets;
use shortlink_core::ipc::DeviceTargets;
use shortlink_core::variants::Variant;

use super::input::{RenewInput, UpdateLink};
use super::loops::AliasTarget;
use super::rules::{
    both_expiries, check_expires_at, check_max_visits, check_redirect, check_tags, check_ttl,
    renew_needs_lifetime, LinkRules,
};
use crate::store::{Link, LinkError};

/// What an edit does to renew-on-access.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Renew {
    /// Stop renewing.
    Stop,
    /// Renew by this lifetime, given with the edit.
    Lifetime(i64),
    /// Renew by what is left of the stored link's lifetime.
    Remaining,
    /// Renew by this many seconds, giving a permanent link that expiry.
    Seconds(i64),
}

/// An edit whose fields passed the rules; `None` leaves a field alone.
#[derive(Debug, Default)]
pub struct CheckedPatch {
    url: Option<String>,
    alias: Option<Option<String>>,
    /// Why the new alias was refused; reported only if it is not the link's
    /// current alias.
    alias_refused: Option<LinkError>,
    /// `Some(None)` makes the link permanent (and stops renewing).
    expires_at: Option<Option<i64>>,
    renew: Option<Renew>,
    max_visits: Option<Option<i64>>,
    redirect: Option<Option<u16>>,
    targets: Option<DeviceTargets>,
    tags: Option<Vec<String>>,
    disabled: Option<bool>,
    /// `Some(None)` leaves the choice to the location again.
    forward_query: Option<Option<bool>>,
    /// `Some(None)` leaves the checker to the site's settings again.
    check: Option<Option<CheckMode>>,
    /// `Some(None)` removes the title.
    title: Option<Option<String>>,
    /// Replaces the country targets (empty: removes them).
    country_targets: Option<CountryTargets>,
    /// A new password hash (`Some(None)` removes the password); hashed
    /// by [`CheckedPatch::set_password_hash`] after the rules pass.
    password_hash: Option<Option<String>>,
    /// Replaces the A/B variants (empty: removes them).
    variants: Option<Vec<Variant>>,
    /// New targets that are short URLs if their alias exists: the write
    /// checks (see [`CheckedPatch::take_alias_targets`]).
    alias_targets: Vec<AliasTarget>,
    /// The first field refused; the fields after it were not judged. It is
    /// reported after the link-dependent checks of the fields before it.
    refused: Option<LinkError>,
}

impl CheckedPatch {
    /// Whether the edit passed the rules so far (a new password is only
    /// hashed for an edit that did).
    pub fn is_refused(&self) -> bool {
        self.refused.is_some()
    }

    /// The hash of the edit's new password.
    pub fn set_password_hash(&mut self, hash: String) {
        self.password_hash = Some(Some(hash));
    }
}

impl LinkRules {
    /// Judges an edit at `now`; what depends on the stored link is left to
    /// [`CheckedPatch::apply`].
    pub fn check_patch(&self, patch: &UpdateLink, now: i64) -> CheckedPatch {
        let mut out = CheckedPatch::default();
        if let Err(e) = self.check_fields(patch, now, &mut out) {
            out.refused = Some(e);
        }
        out
    }

    fn check_fields(
        &self,
        patch: &UpdateLink,
        now: i64,
        out: &mut CheckedPatch,
    ) -> Result<(), LinkError> {
        if let Some(url) = &patch.url {
            out.url = Some(self.check_target("url", url, &mut out.alias_targets)?);
        }
        if let Some(alias) = &patch.alias {
            if let Some(a) = alias {
                out.alias_refused = self.check_alias(a).err();
            }
            out.alias = Some(alias.clone());
        }
        out.expires_at = match (&patch.expires_at, patch.ttl) {
            (Some(_), Some(_)) => return Err(both_expiries()),
            (Some(Some(t)), None) => Some(Some(check_expires_at(t, now)?)),
            (Some(None), None) => Some(None),
            (None, Some(ttl)) => Some(Some(now + check_ttl("ttl", ttl)?)),
            (None, None) => None,
        };
        out.renew = match &patch.renew_on_access {
            None => None,
            Some(RenewInput::Flag(false)) => Some(Renew::Stop),
            Some(RenewInput::Flag(true)) => Some(match (patch.ttl, out.expires_at) {
                (Some(ttl), _) => Renew::Lifetime(ttl as i64),
                // A new expiry is in the future (checked above).
                (None, Some(Some(e))) => Renew::Lifetime(e - now),
                (None, Some(None)) => return Err(renew_needs_lifetime()),
                (None, None) => Renew::Remaining,
            }),
            Some(RenewInput::Seconds(s)) => Some(Renew::Seconds(check_ttl("renew_on_access", *s)?)),
        };
        if let Some(mv) = patch.max_visits {
            out.max_visits = Some(mv.map(check_max_visits).transpose()?);
        }
        if let Some(r) = patch.redirect {
            out.redirect = Some(check_redirect(r)?);
        }
        if let Some(t) = &patch.targets {
            out.targets = Some(match t {
                Some(t) => self.check_targets(t, &mut out.alias_targets)?,
                None => DeviceTargets::default(),
            });
        }
        if let Some(tags) = &patch.tags {
            out.tags = Some(check_tags(tags)?);
        }
        out.disabled = patch.disabled;
        out.forward_query = patch.forward_query;
        out.check = patch.check;
        if let Some(t) = &patch.title {
            out.title = Some(super::title::check_title(t.as_deref())?);
        }
        if let Some(t) = &patch.country_targets {
            out.country_targets = Some(match t {
                Some(t) => self.check_country_targets(t, &mut out.alias_targets)?,
                None => Vec::new(),
            });
        }
        match &patch.password {
            Some(Some(p)) => p.check()?,
            Some(None) => out.password_hash = Some(None),
            None => {}
        }
        if let Some(v) = &patch.variants {
            out.variants = Some(match v {
                Some(v) => self.check_variants(v, &mut out.alias_targets)?,
                None => Vec::new(),
            });
        }
        Ok(())
    }
}

impl CheckedPatch {
    /// The new targets the write must look up as aliases before it stores
    /// the edit.
    pub fn take_alias_targets(&mut self) -> Vec<AliasTarget> {
        std::mem::take(&mut self.alias_targets)
    }

    /// Applies the edit to `link` in place (on the writer thread, to the
    /// link as stored); `now` is the time the edit was judged at.
    pub fn apply(self, link: &mut Link, now: i64) -> Result<(), LinkError> {
        if let Some(url) = self.url {
            link.url = url;
        }
        if let Some(alias) = self.alias {
            if let (Some(refused), Some(a)) = (self.alias_refused, &alias) {
                if link.alias.as_deref() != Some(a.as_str()) {
                    return Err(refused);
                }
            }
            link.alias = alias;
        }
        match self.expires_at {
            Some(Some(e)) => link.expires_at = Some(e),
            Some(None) => {
                link.expires_at = None;
                link.renew_ttl = None;
            }
            None => {}
        }
        match self.renew {
            None => {}
            Some(Renew::Stop) => link.renew_ttl = None,
            Some(Renew::Lifetime(l)) => link.renew_ttl = Some(l),
            Some(Renew::Remaining) => match link.expires_at {
                Some(e) if e > now => link.renew_ttl = Some(e - now),
                _ => return Err(renew_needs_lifetime()),
            },
            Some(Renew::Seconds(s)) => {
                link.expires_at.get_or_insert(now + s);
                link.renew_ttl = Some(s);
            }
        }
        if let Some(refused) = self.refused {
            return Err(refused);
        }
        if let Some(mv) = self.max_visits {
            link.max_visits = mv;
        }
        if let Some(r) = self.redirect {
            link.redirect = r;
        }
        if let Some(t) = self.targets {
            link.targets = t;
        }
        if let Some(tags) = self.tags {
            link.tags = tags;
        }
        if let Some(d) = self.disabled {
            // Switching on a link a takedown covers would not make it
            // answer: say so instead of storing a switch that does nothing.
            if !d && link.taken_down {
                return Err(LinkError::TakenDown);
            }
            link.disabled = d;
        }
        if let Some(f) = self.forward_query {
            link.forward_query = f;
        }
        if let Some(t) = self.title {
            link.title = t;
        }
        if let Some(m) = self.check {
            link.check = m;
            if !may_fall_back(m) {
                link.broken = false;
            }
        }
        if let Some(v) = self.variants {
            link.variants = v;
        }
        if let Some(t) = self.country_targets {
            link.country_targets = t;
        }
        if let Some(h) = self.password_hash {
            link.password_hash = h;
        }
        link.updated_at = now;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use shortlink_core::{Codec, DeploymentKey};

    use super::*;
    use crate::config::Config;
    use crate::links::input::TimeInput;

    const NOW: i64 = 1_000_000;

    fn rules() -> LinkRules {
        let codec = Codec::new(&DeploymentKey::from_bytes([7; 32]));
        LinkRules::new(&Config::default(), codec)
    }

    fn stored() -> Link {
        Link {
            id: 9,
            alias: Some("admin".into()),
            url: "https://example.com/".into(),
            expires_at: Some(NOW + 100),
            ..Link::default()
        }
    }

    fn edit(patch: UpdateLink, link: &Link) -> Result<Link, (&'static str, &'static str)> {
        let mut link = link.clone();
        match rules().check_patch(&patch, NOW).apply(&mut link, NOW) {
            Ok(()) => Ok(link),
            Err(LinkError::Invalid { field, code, .. }) => Err((field, code)),
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn a_kept_alias_is_not_judged_again() {
        // "admin" is reserved now, but it is this link's alias already.
        let keep = UpdateLink {
            alias: Some(Some("admin".into())),
            url: Some("https://example.com/new".into()),
            ..UpdateLink::default()
        };
        let l = edit(keep.clone(), &stored()).unwrap();
        assert_eq!(l.url, "https://example.com/new");
        assert_eq!(l.updated_at, NOW);
        let other = Link {
            alias: None,
            ..stored()
        };
        assert_eq!(edit(keep, &other), Err(("alias", "alias_reserved")));
    }

    #[test]
    fn renew_takes_the_remaining_lifetime_of_the_stored_link() {
        let renew = UpdateLink {
            renew_on_access: Some(RenewInput::Flag(true)),
            ..UpdateLink::default()
        };
        assert_eq!(edit(renew.clone(), &stored()).unwrap().renew_ttl, Some(100));
        let permanent = Link {
            expires_at: None,
            ..stored()
        };
        let refused = Err(("renew_on_access", "invalid_expiry"));
        assert_eq!(edit(renew.clone(), &permanent), refused);
        // Its error comes before those of later fields, as when every field
        // was judged on the writer.
        let with_bad_tags = UpdateLink {
            tags: Some(vec!["".into()]),
            ..renew.clone()
        };
        assert_eq!(edit(with_bad_tags.clone(), &permanent), refused);
        assert_eq!(
            edit(with_bad_tags, &stored()),
            Err(("tags", "invalid_tags"))
        );
        // A new lifetime in the same edit needs nothing from the link.
        let with_ttl = UpdateLink {
            ttl: Some(50),
            ..renew
        };
        let l = edit(with_ttl, &permanent).unwrap();
        assert_eq!((l.expires_at, l.renew_ttl), (Some(NOW + 50), Some(50)));
    }

    #[test]
    fn the_first_bad_field_is_reported() {
        let bad_alias_and_expiry = UpdateLink {
            alias: Some(Some("api".into())),
            expires_at: Some(Some(TimeInput::Unix(NOW - 1))),
            ..UpdateLink::default()
        };
        let plain = Link {
            alias: None,
            ..stored()
        };
        assert_eq!(
            edit(bad_alias_and_expiry.clone(), &plain),
            Err(("alias", "alias_reserved"))
        );
        let mut kept = plain.clone();
        kept.alias = Some("api".into());
        assert_eq!(
            edit(bad_alias_and_expiry, &kept),
            Err(("expires_at", "invalid_expiry"))
        );
        let cleared = UpdateLink {
            expires_at: Some(None),
            renew_on_access: Some(RenewInput::Seconds(30)),
            max_visits: Some(None),
            redirect: Some(Some(308)),
            disabled: Some(true),
            ..UpdateLink::default()
        };
        let l = edit(cleared, &stored()).unwrap();
        assert_eq!(
            (l.expires_at, l.renew_ttl, l.redirect, l.disabled),
            (Some(NOW + 30), Some(30), Some(308), true)
        );
    }
}
