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

    /// Whether the set in force lists `host` (or a domain above it).
    pub fn lists(&self, host: &NormalHost) -> bool {
        self.inner
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .is_some_and(|set| set.matches(host))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shortlink_core::TargetPolicy;

    fn host(url: &str) -> NormalHost {
        TargetPolicy::default().check(url).unwrap().host
    }

    #[test]
    fn only_the_set_in_force_refuses() {
        let b = BlockedHosts::default();
        assert!(!b.lists(&host("https://evil.example/")));
        b.set(Some(Arc::new(HostSet::parse(&["evil.example"]).unwrap())));
        assert!(b.lists(&host("https://A.Evil.example./x")));
        assert!(b.lists(&host("https://www.evil.example/")));
        assert!(!b.lists(&host("https://good.example/")));
        b.set(None);
        assert!(!b.lists(&host("https://evil.example/")));
    }
}
