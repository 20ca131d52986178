//! What the daemon says goes into the shared zone: lookup answers (after
//! the check that their targets are safe `Location` values, so hits served
//! from the zone need none) and pushed events (invalidations, aliases and
//! change-log positions), which only the subscribed worker receives, since
//! the zone is shared. After an outage the zone keeps serving what it holds:
//! the daemon replays what changed since the zone's position, or resets it
//! when it cannot.

use shortlink_core::ipc::{EdgeLink, Event, LookupResult};
use shortlink_core::target::is_header_safe;

use super::{now, Answer, DaemonLink};
use crate::log::{error, info, warning};

impl DaemonLink {
    /// The answer to hand to waiting requests for `code`, stored in the zone
    /// unless its target is refused or an event purged anything since the
    /// lookup went out (`purges`, see `LinkCache::insert`).
    pub(super) fn admit(&mut self, code: &[u8], result: LookupResult, purges: u64) -> Answer {
        if let LookupResult::Found(link) = &result {
            if !targets_are_header_safe(link) {
                error!(
                    self.log,
                    "shortlink: target of code \"{}\" is not a safe Location value, refusing it, socket: {}",
                    String::from_utf8_lossy(code),
                    self.peer()
                );
                return Answer::Refused;
            }
        }
        let ttl = match result {
            LookupResult::Found(_) => self.conf.ttl,
            _ => self.conf.negative_ttl,
        };
        if let (Some(cache), true) = (self.conf.cache, ttl > 0) {
            if let Err(e) = cache.insert(code, &result, ttl, now(), purges) {
                warning!(
                    self.log,
                    "shortlink: {}, \"{}\" answered without caching",
                    e,
                    String::from_utf8_lossy(code)
                );
            }
        }
        Answer::from(result)
    }

    /// Applies an event pushed by the daemon to the zone.
    pub(super) fn apply(&mut self, event: Event) {
        let Some(cache) = self.conf.cache else {
            return;
        };
        match event {
            Event::Invalidate { code } => {
                cache.purge(code.as_bytes());
            }
            Event::AliasSnapshotBegin { .. } => {
                let generation = cache.alias_snapshot_begin();
                self.alias_generation = generation;
                self.snapshot = Some((generation, true));
            }
            Event::Aliases { aliases } => {
                let added =
                    cache.alias_add(aliases.iter().map(|a| a.as_bytes()), self.alias_generation);
                if let (Err(_), Some((_, fitted))) = (added, self.snapshot.as_mut()) {
                    *fitted = false;
                }
                // A new alias may have been cached as "not found" (or
                // "gone", for an alias used before). An answer that found
                // a link under it was given after the alias existed, so it
                // stays: a snapshot names every alias again at each
                // subscription, and purging them would empty the zone of
                // its aliases at every daemon restart.
                for alias in &aliases {
                    cache.purge_unfound(alias.as_bytes());
                }
            }
            Event::AliasSnapshotEnd => {
                if let Some((generation, fitted)) = self.snapshot.take() {
                    cache.alias_snapshot_end(generation, fitted);
                }
            }
            Event::AliasesRemoved { aliases } => {
                cache.alias_remove(aliases.iter().map(|a| a.as_bytes()));
                for alias in &aliases {
                    cache.purge(alias.as_bytes());
                }
            }
            Event::Position(p) => cache.set_position(p),
            Event::Reset => {
                // A zone that never had a position holds only answers this
                // daemon gave since the worker started (as before change
                // positions existed): nothing to drop. One that had a
                // position from another database, or one too old to
                // replay, may hold anything.
                let had_position = cache.position().is_some();
                cache.forget_position();
                if !had_position {
                    return;
                }
                let dropped = cache.purge_all();
                if dropped == 0 {
                    return;
                }
                info!(
                    self.log,
                    "shortlink: dropped {} cached links: the daemon cannot replay the changes since they were cached",
                    dropped
                );
            }
        }
    }
}

/// True when every target of `link` can go into a `Location` header as it is.
fn targets_are_header_safe(link: &EdgeLink) -> bool {
    let t = &link.targets;
    [
        Some(&link.target),
        t.desktop.as_ref(),
        t.mobile.as_ref(),
        t.ios.as_ref(),
        t.android.as_ref(),
    ]
    .into_iter()
    .flatten()
    .all(|v| is_header_safe(v.as_bytes()))
}
