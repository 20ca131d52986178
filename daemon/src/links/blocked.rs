//! The hosts of the blocklist file (`blocklist_file`), as the link rules
//! see them: with `blocklist_disable` on, a target on one of them is
//! refused like a host of `block_hosts`. The watcher in
//! `crate::takedown::blocklist` replaces the set whenever the file
//! changes; every create and edit reads the set in force.

use std::sync::{Arc, RwLock};

use shortlink_core::{HostSet, NormalHost};

/// The listed hosts in force, shared by the rules and the watcher.
#[derive(Debug, Clone, Default)]
pub struct BlockedHosts {
    inner: Arc<RwLock<Option<Arc<HostSet>>>>,
}

impl BlockedHosts {
    /// Puts `hosts` in force (`None`: nothing refused).
    pub fn set(&self, hosts: Option<Arc<HostSet>>) {
        *self.inner.write().unwrap_or_else(|e| e.into_inner()) = hosts;
    }

    /// The host of `url` when the set in force lists it (or a domain
    /// above it).
    pub fn listed(&self, url: &str) -> Option<String> {
        let set = self
            .inner
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()?;
        let host = url::Url::parse(url)
            .ok()
            .and_then(|u| NormalHost::of_url(&u))?;
        set.matches(&host).then_some(host.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_set_in_force_refuses() {
        let b = BlockedHosts::default();
        assert_eq!(b.listed("https://evil.example/"), None);
        b.set(Some(Arc::new(HostSet::parse(&["evil.example"]).unwrap())));
        assert_eq!(
            b.listed("https://A.Evil.example./x").as_deref(),
            Some("a.evil.example")
        );
        assert_eq!(b.listed("https://good.example/"), None);
        b.set(None);
        assert_eq!(b.listed("https://evil.example/"), None);
    }
}
