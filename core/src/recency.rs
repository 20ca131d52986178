//! When the edge's caches move or replace what they hold: the shared zone's
//! LRU queue and each worker's front cache. The module applies these rules
//! (`cache/links.rs` under the zone's lock, `cache/front.rs` in the worker's
//! own memory); they live here so they can be tested.
//!
//! **The zone's queue** is in the order its entries were last queued
//! (inserted, or moved to the front by a hit), so the age of its oldest
//! entry is how long an entry no hit moves stays before a full zone evicts
//! it. A hit moves its entry once the entry is older than half that age,
//! or than [`REQUEUE_MAX_MS`], a second, whichever comes first. Every move
//! writes to memory all workers share (the entry, its two neighbours and
//! the queue's head: three cache misses on a large zone), so an entry hit
//! many times a second moves once a second. A zone that turns over in
//! less than two seconds moves entries sooner: one that cycles in half a
//! second moves an entry hit every 200 ms, which a plain one-second
//! interval let fall out.
//!
//! The cap keeps the plain interval's promise (a link hit at least once a
//! second moves at least once a second), which half the oldest age alone
//! would break: ages are times, not places in the queue. After a quiet
//! hour the oldest entry is an hour old, a burst of new links then evicts
//! the old ones within seconds, and a link hit throughout the burst would
//! not move (its age stays far below half an hour) until the burst had
//! pushed it out. A sequence number per move instead of a time would make
//! the rule exact, but it is a new field in the zone's layout.
//!
//! **A front slot** serves its copy for at most [`FRONT_MS`], then the
//! shared entry is consulted again. A slot that holds another link's
//! current copy is not taken until then, so a link hit often keeps its slot
//! against links that share it and are hit rarely, and a worker serving
//! links it seldom sees twice does not rewrite a slot on every request.

/// Longest a front-cache slot serves its copy, in milliseconds.
pub const FRONT_MS: u64 = 1000;
/// A hit never moves an entry queued less than this long ago (a link hit
/// many times a millisecond reads the queue's oldest entry once).
pub const REQUEUE_MIN_MS: u64 = 1;
/// A hit always moves an entry queued at least this long ago.
pub const REQUEUE_MAX_MS: u64 = 1000;

/// Milliseconds from `then` to `now`; 0 when another worker's clock put
/// `then` a little ahead.
pub fn age(now: u64, then: u64) -> u64 {
    now.saturating_sub(then)
}

/// Whether a hit on an entry queued `age` ms ago moves it to the front of
/// the queue whose oldest entry was queued `oldest_age()` ms ago (asked for
/// only when it decides).
pub fn requeue(age: u64, oldest_age: impl FnOnce() -> u64) -> bool {
    age >= REQUEUE_MAX_MS || (age >= REQUEUE_MIN_MS && age.saturating_mul(2) >= oldest_age())
}

/// What a front slot holds a copy of, and since when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrontStamp {
    /// The zone's generation when the copy was made.
    pub generation: u64,
    /// The code's hash (the slot's own code is compared as well).
    pub hash: u64,
    /// When it was copied from the zone.
    pub filled: u64,
    /// When the zone's entry goes stale.
    pub fresh_until: u64,
}

impl FrontStamp {
    /// Within [`FRONT_MS`] of its filling and before its entry goes stale.
    fn current(&self, now: u64) -> bool {
        age(now, self.filled) < FRONT_MS && now <= self.fresh_until
    }

    /// The copy may answer for the code of `hash` at `generation`.
    pub fn serves(&self, generation: u64, hash: u64, now: u64) -> bool {
        self.generation == generation && self.hash == hash && self.current(now)
    }

    /// The slot may be refilled with the code of `hash`: its copy is out of
    /// date, or of the same code.
    pub fn yields_to(&self, generation: u64, hash: u64, now: u64) -> bool {
        self.generation != generation || self.hash == hash || !self.current(now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeMap, HashMap};

    #[test]
    fn an_entry_moves_once_it_is_in_the_older_half_or_old_enough() {
        let never = || -> u64 { panic!("the oldest entry's age was not needed") };
        assert!(!requeue(REQUEUE_MIN_MS - 1, never));
        assert!(requeue(REQUEUE_MAX_MS, never));
        assert!(!requeue(400, || 1000));
        assert!(requeue(500, || 1000));
        assert!(requeue(100, || 150));
        assert!(!requeue(999, || 3_600_000));
        assert!(age(10, 12) == 0 && age(12, 10) == 2);
    }

    #[test]
    fn a_front_slot_serves_its_code_for_a_second_and_keeps_it_meanwhile() {
        let s = FrontStamp {
            generation: 7,
            hash: 42,
            filled: 1_000,
            fresh_until: 60_000,
        };
        assert!(s.serves(7, 42, 1_999));
        assert!(!s.serves(7, 42, 2_000), "at most FRONT_MS");
        assert!(
            !s.serves(8, 42, 1_500),
            "a purge or replacement in the zone"
        );
        assert!(!s.serves(7, 43, 1_500));
        assert!(
            !FrontStamp {
                fresh_until: 1_400,
                ..s
            }
            .serves(7, 42, 1_500),
            "the entry went stale"
        );
        assert!(
            !s.yields_to(7, 43, 1_999),
            "another link's current copy stays"
        );
        assert!(s.yields_to(7, 43, 2_000));
        assert!(s.yields_to(8, 43, 1_500));
        assert!(s.yields_to(7, 42, 1_500));
    }

    /// A queue of `cap` entries ordered by when each was queued, under one
    /// requeue rule; counts hits and moves.
    struct Queue<R: Fn(u64, u64) -> bool> {
        cap: usize,
        rule: R,
        by_time: BTreeMap<(u64, u64), u32>,
        queued: HashMap<u32, (u64, u64)>,
        seq: u64,
        hits: u64,
        moves: u64,
    }

    impl<R: Fn(u64, u64) -> bool> Queue<R> {
        fn new(cap: usize, rule: R) -> Self {
            let (by_time, queued) = (BTreeMap::new(), HashMap::new());
            Self {
                cap,
                rule,
                by_time,
                queued,
                seq: 0,
                hits: 0,
                moves: 0,
            }
        }

        fn push(&mut self, code: u32, now: u64) {
            self.seq += 1;
            self.by_time.insert((now, self.seq), code);
            self.queued.insert(code, (now, self.seq));
        }

        fn visit(&mut self, code: u32, now: u64) {
            match self.queued.get(&code).copied() {
                Some(at) => {
                    self.hits += 1;
                    let oldest = self.by_time.keys().next().expect("not empty").0;
                    if (self.rule)(age(now, at.0), age(now, oldest)) {
                        self.moves += 1;
                        self.by_time.remove(&at);
                        self.push(code, now);
                    }
                }
                None => {
                    if self.queued.len() == self.cap {
                        let (_, evicted) = self.by_time.pop_first().expect("full");
                        self.queued.remove(&evicted);
                    }
                    self.push(code, now);
                }
            }
        }
    }

    /// Codes 0..n drawn with Zipf weights (s = 1), from a fixed seed.
    fn zipf_stream(n: usize, len: usize, mut seed: u64) -> Vec<u32> {
        let weights: Vec<f64> = (1..=n).map(|k| 1.0 / k as f64).collect();
        let total: f64 = weights.iter().sum();
        let mut cdf = Vec::with_capacity(n);
        let mut acc = 0.0;
        for w in weights {
            acc += w / total;
            cdf.push(acc);
        }
        (0..len)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let u = (seed >> 11) as f64 / (1u64 << 53) as f64;
                cdf.partition_point(|&c| c < u).min(n - 1) as u32
            })
            .collect()
    }

    #[test]
    fn the_rule_keeps_the_hit_rate_of_a_true_lru_with_far_fewer_moves() {
        // 1,000 entries for 20,000 codes, 100 requests a millisecond: the
        // zone turns over in well under a second, the case a fixed
        // one-second interval handled worst.
        let stream = zipf_stream(20_000, 300_000, 0x9e37_79b9_7f4a_7c15);
        let run = |rule: &dyn Fn(u64, u64) -> bool| {
            let mut q = Queue::new(1_000, rule);
            for (i, &code) in stream.iter().enumerate() {
                q.visit(code, i as u64 / 100);
            }
            (q.hits, q.moves)
        };
        let (lru_hits, lru_moves) = run(&|_, _| true);
        let (hits, moves) = run(&|a, oldest| requeue(a, || oldest));
        let (fixed_hits, _) = run(&|a, _| a >= 1_000);
        assert_eq!(lru_moves, lru_hits);
        assert!(
            hits * 100 >= lru_hits * 97,
            "hits {hits} against a true LRU's {lru_hits}"
        );
        assert!(
            moves * 4 <= lru_moves,
            "moves {moves} against a true LRU's {lru_moves}"
        );
        assert!(
            hits > fixed_hits,
            "hits {hits} against a fixed second's {fixed_hits}"
        );
    }

    #[test]
    fn a_link_hit_through_a_burst_after_a_quiet_hour_stays() {
        // A full queue, an hour without requests, then a new code every
        // 2 ms (the queue turns over in 2 s) and code 0 every 10 ms.
        let burst = |rule: &dyn Fn(u64, u64) -> bool| {
            let mut q = Queue::new(1_000, rule);
            for c in 1..=1_000u32 {
                q.visit(c, u64::from(c));
            }
            let start = 3_600_000u64;
            for ms in (0..10_000u64).map(|i| start + i) {
                if ms % 10 == 0 {
                    q.visit(0, ms);
                }
                if ms % 2 == 0 {
                    q.visit(10_000 + ms as u32, ms);
                }
            }
            q.hits
        };
        assert_eq!(
            burst(&|a, oldest| requeue(a, || oldest)),
            999,
            "code 0 missed after its first visit"
        );
        let half_age_alone = burst(&|a, oldest| a >= REQUEUE_MIN_MS && a * 2 >= oldest);
        assert!(
            half_age_alone < 999,
            "half the oldest age alone kept it too: {half_age_alone}"
        );
    }

    #[test]
    fn an_entry_hit_more_often_than_half_the_queue_turns_over_is_never_evicted() {
        // One code visited every 300 ms among a stream of new codes that
        // turns the 1,000-entry queue over every second.
        let mut q = Queue::new(1_000, |a, oldest| requeue(a, || oldest));
        for ms in 0..20_000u64 {
            if ms % 300 == 0 {
                q.visit(0, ms);
            }
            q.visit(ms as u32 + 1, ms);
        }
        assert_eq!(q.hits, 20_000 / 300, "code 0 missed after its first visit");
    }
}
