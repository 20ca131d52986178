//! Where the zone stands in the daemon's change log: the position of the
//! last change whose events were applied to it. The subscribed worker sends
//! it when it (re)subscribes, so after an outage, a daemon restart or a
//! reload the daemon replays only what changed since, and the cached links
//! keep being served meanwhile; it lives in the zone because the worker
//! that subscribes next may be another one.

use shortlink_core::ipc::ChangePosition;

use super::LinkCache;

impl LinkCache {
    /// The position the entries reflect; `None` for a fresh zone (or one
    /// made under another key).
    pub fn position(&self) -> Option<ChangePosition> {
        let lock = self.lock();
        let shared = lock.shared();
        shared.position_known.then_some(ChangePosition {
            store: shared.position_store,
            seq: shared.position_seq,
        })
    }

    /// Every change up to `p` is applied. A worker of the previous cycle
    /// may still report an older position of the same database during a
    /// reload; it never moves the zone back.
    pub fn set_position(&self, p: ChangePosition) {
        let lock = self.lock();
        let shared = lock.shared();
        if shared.position_known && shared.position_store == p.store && shared.position_seq > p.seq
        {
            return;
        }
        shared.position_store = p.store;
        shared.position_seq = p.seq;
        shared.position_known = true;
    }

    /// The daemon cannot replay from the zone's position: forget it (the
    /// caller drops the entries; the next [`LinkCache::set_position`] starts
    /// over).
    pub fn forget_position(&self) {
        self.lock().shared().position_known = false;
    }
}
