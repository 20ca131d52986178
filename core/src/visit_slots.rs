//! Visits of limited links a node may still redirect: leased from the
//! daemon ([`crate::ipc::Request::LeaseVisits`]), kept in the module's
//! zone for every worker, and spent one per person's redirect under the
//! zone's lock, so the node never redirects more than it was leased,
//! whichever worker answers. Plain data, so the zone holds it as it is.
//!
//! A table the zone allocates once, sized by the zone ([`slots_for_zone`]),
//! keyed by link id (a link's code and its alias share one lease). Each
//! slot remembers the limit its visits were leased under: once the link's
//! limit changes, the edge sees the new one in the link's entry and the old
//! visits are dropped. Visits a slot
//! gives up (a changed limit, or the slot taken for another link when the
//! table is full) are handed back, so the daemon may lease them again.

/// Slots looked at for one link, from the one its id picks.
const PROBES: usize = 8;
/// Fewest and most slots a zone's table has.
const MIN_SLOTS: usize = 2 * PROBES;
const MAX_SLOTS: usize = 4096;

/// Slots for a zone of `zone_bytes`: links whose leased visits are not all
/// spent yet, one per KiB of zone (about four cached links), so a small
/// zone keeps its room for links and a large one for many limited links.
pub fn slots_for_zone(zone_bytes: usize) -> usize {
    (zone_bytes / 1024).clamp(MIN_SLOTS, MAX_SLOTS)
}

/// The visits leased for one link.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct VisitSlot {
    /// The link's id; 0 for a free slot (no link has id 0).
    link: u64,
    /// The limit the visits were leased under.
    limit: u64,
    /// Visits left to spend.
    left: u32,
    _pad: u32,
}

/// The table: its slots (all zero: empty) and which slot of a full probe
/// window to take next, both kept by the caller (in the zone).
pub struct VisitSlots<'a> {
    slots: &'a mut [VisitSlot],
    victim: &'a mut u32,
}

/// Visits a slot gave up, for the daemon to lease again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Returned {
    pub link: u64,
    pub count: u32,
}

impl<'a> VisitSlots<'a> {
    /// The table over `slots`; none without a slot.
    pub fn new(slots: &'a mut [VisitSlot], victim: &'a mut u32) -> Option<Self> {
        (!slots.is_empty()).then_some(Self { slots, victim })
    }

    /// Where `link`'s probe window starts in a table of `len` slots.
    fn start(link: u64, len: usize) -> usize {
        // Fibonacci hashing: ids are sequential, slots should not be.
        (link.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) as usize % len
    }

    fn window(&self, link: u64) -> impl Iterator<Item = usize> {
        let len = self.slots.len();
        let start = Self::start(link, len);
        (0..PROBES.min(len)).map(move |i| (start + i) % len)
    }

    fn find(&self, link: u64) -> Option<usize> {
        self.window(link).find(|&i| self.slots[i].link == link)
    }

    /// Spends one visit of `link`, leased under `limit`: true when there
    /// was one. Visits leased under another limit are given up.
    pub fn spend(&mut self, link: u64, limit: u64) -> (bool, Option<Returned>) {
        let Some(i) = self.find(link) else {
            return (false, None);
        };
        let slot = &mut self.slots[i];
        if slot.limit != limit {
            let returned = Returned {
                link,
                count: slot.left,
            };
            *slot = VisitSlot::default();
            return (false, Some(returned).filter(|r| r.count > 0));
        }
        if slot.left == 0 {
            *slot = VisitSlot::default();
            return (false, None);
        }
        slot.left -= 1;
        if slot.left == 0 {
            *slot = VisitSlot::default();
        }
        (true, None)
    }

    /// Keeps `count` more visits of `link` leased under `limit`. What it
    /// displaces (the same link's visits of another limit, or another
    /// link's when the window is full) is given up.
    pub fn deposit(&mut self, link: u64, limit: u64, count: u32) -> Option<Returned> {
        if count == 0 || link == 0 {
            return None;
        }
        if let Some(i) = self.find(link) {
            let slot = &mut self.slots[i];
            if slot.limit == limit {
                slot.left = slot.left.saturating_add(count);
                return None;
            }
            let returned = Returned {
                link,
                count: slot.left,
            };
            *slot = VisitSlot {
                link,
                limit,
                left: count,
                _pad: 0,
            };
            return Some(returned).filter(|r| r.count > 0);
        }
        let free = self.window(link).find(|&i| self.slots[i].link == 0);
        let i = free.unwrap_or_else(|| {
            *self.victim = self.victim.wrapping_add(1);
            let n = *self.victim as usize % PROBES.min(self.slots.len());
            self.window(link).nth(n).unwrap_or(0)
        });
        let old = self.slots[i];
        self.slots[i] = VisitSlot {
            link,
            limit,
            left: count,
            _pad: 0,
        };
        (old.link != 0 && old.left > 0).then_some(Returned {
            link: old.link,
            count: old.left,
        })
    }

    /// Forgets every lease (the deployment key changed: another daemon's).
    pub fn clear(&mut self) {
        self.slots.fill(VisitSlot::default());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LEN: usize = 256;

    /// An empty table's storage.
    fn storage() -> (Vec<VisitSlot>, u32) {
        (vec![VisitSlot::default(); LEN], 0)
    }

    #[test]
    fn the_table_grows_with_the_zone_within_bounds() {
        assert_eq!(slots_for_zone(32 * 1024), 32);
        assert_eq!(slots_for_zone(8 * 1024), MIN_SLOTS);
        assert_eq!(slots_for_zone(1024 * 1024), 1024);
        assert_eq!(slots_for_zone(1 << 30), MAX_SLOTS);
        assert!(VisitSlots::new(&mut [], &mut 0).is_none());
        // A table smaller than a probe window still works.
        let mut slots = [VisitSlot::default(); 3];
        let mut victim = 0;
        let mut t = VisitSlots::new(&mut slots, &mut victim).unwrap();
        for link in 1..=3 {
            assert_eq!(t.deposit(link, 5, 1), None);
        }
        assert!(t.deposit(4, 5, 1).is_some(), "a full table gives one up");
        assert_eq!(t.spend(4, 5), (true, None));
    }

    #[test]
    fn visits_are_spent_as_many_as_were_leased() {
        let (mut slots, mut victim) = storage();
        let mut t = VisitSlots::new(&mut slots, &mut victim).unwrap();
        assert_eq!(t.spend(7, 3), (false, None), "nothing leased");
        assert_eq!(t.deposit(7, 3, 2), None);
        assert_eq!(t.deposit(7, 3, 1), None);
        for _ in 0..3 {
            assert_eq!(t.spend(7, 3), (true, None));
        }
        assert_eq!(t.spend(7, 3), (false, None), "all spent");
        assert!(
            t.slots.iter().all(|s| s.link == 0),
            "the slot is free again"
        );
        assert_eq!(t.deposit(7, 3, 0), None);
        assert_eq!(t.spend(7, 3), (false, None));
    }

    #[test]
    fn a_changed_limit_gives_the_old_visits_up() {
        let (mut slots, mut victim) = storage();
        let mut t = VisitSlots::new(&mut slots, &mut victim).unwrap();
        t.deposit(9, 100, 5);
        assert_eq!(
            t.spend(9, 50),
            (false, Some(Returned { link: 9, count: 5 }))
        );
        assert_eq!(t.spend(9, 100), (false, None), "dropped, not kept");
        t.deposit(9, 100, 4);
        assert_eq!(
            t.deposit(9, 50, 2),
            Some(Returned { link: 9, count: 4 }),
            "a lease under the new limit replaces the old"
        );
        assert_eq!(t.spend(9, 50), (true, None));
    }

    #[test]
    fn a_full_window_hands_a_slot_over_and_returns_its_visits() {
        let (mut slots, mut victim) = storage();
        let mut t = VisitSlots::new(&mut slots, &mut victim).unwrap();
        // Links whose windows start at the same slot.
        let start = VisitSlots::start(1, LEN);
        let same: Vec<u64> = (1..100_000u64)
            .filter(|&l| VisitSlots::start(l, LEN) == start)
            .take(PROBES + 1)
            .collect();
        assert_eq!(same.len(), PROBES + 1);
        for &l in &same[..PROBES] {
            assert_eq!(t.deposit(l, 10, 3), None);
        }
        let returned = t.deposit(same[PROBES], 10, 2).expect("one given up");
        assert!(same[..PROBES].contains(&returned.link));
        assert_eq!(returned.count, 3);
        assert_eq!(t.spend(returned.link, 10), (false, None));
        assert_eq!(t.spend(same[PROBES], 10), (true, None));
        let kept: u32 = t.slots.iter().map(|s| s.left).sum();
        assert_eq!(kept, 3 * (PROBES as u32 - 1) + 1, "nothing else lost");
    }
}
