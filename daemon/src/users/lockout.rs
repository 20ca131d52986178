//! Lock-out after repeated failed sign-ins.
//!
//! Failures are counted per user name *and client address* ([`USER_FREE`]),
//! per address over all names ([`ADDR_FREE`]) and per name over all
//! addresses ([`NAME_FREE`], looser: it bounds guessing spread over many
//! addresses). Past a subject's free failures further attempts touching it
//! are refused without checking the password for a delay that starts at
//! [`BASE_DELAY`] and doubles with every further failure, up to
//! [`MAX_DELAY`]. So a stranger failing against a name locks that name
//! only for their own address; the owner elsewhere still signs in.
//!
//! An attempt is counted as a failure when it starts ([`LoginThrottle::attempt`]),
//! under the same lock as the check, so concurrent attempts cannot all pass
//! the check before any failure is recorded; a success then clears its
//! (name, address) count and takes back its count on the others. Counts are
//! forgotten [`FORGET_AFTER`] after the last failure.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::client::ClientAddr;

/// Failures one address gets against one name before the first delay.
pub const USER_FREE: u32 = 5;
/// Failures one client address gets (over any names) before the first delay.
pub const ADDR_FREE: u32 = 20;
/// Failures a name gets over all addresses before the first delay.
pub const NAME_FREE: u32 = 50;
/// The first delay.
pub const BASE_DELAY: Duration = Duration::from_secs(30);
/// The longest delay.
pub const MAX_DELAY: Duration = Duration::from_secs(15 * 60);
/// A count is dropped this long after its last failure.
pub const FORGET_AFTER: Duration = Duration::from_secs(3600);
/// Entries kept before the forgotten and unlocked ones are dropped.
const MAX_ENTRIES: usize = 100_000;

#[derive(Debug, Clone, Copy)]
struct Failures {
    count: u32,
    last: Instant,
    locked_until: Option<Instant>,
}

/// What is being throttled.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Subject {
    /// A lower-cased user name from one client address.
    UserAt(String, ClientAddr),
    /// A client address, over all names.
    Addr(ClientAddr),
    /// A lower-cased user name, over all addresses.
    User(String),
}

impl Subject {
    fn free(&self) -> u32 {
        match self {
            Subject::UserAt(..) => USER_FREE,
            Subject::Addr(_) => ADDR_FREE,
            Subject::User(_) => NAME_FREE,
        }
    }
}

/// One sign-in attempt, already counted as a failure. Hand it back with
/// [`LoginThrottle::succeeded`] or [`LoginThrottle::withdraw`]; dropped
/// (a wrong password, a client that went away) it stays a failure.
#[derive(Debug)]
#[must_use = "an attempt counts as a failure unless handed back"]
pub struct Attempt {
    /// The (name, address) count, cleared by a success.
    user_at: Subject,
    /// The name's count, and the address's when it is known.
    others: Vec<Subject>,
    locked_for: Option<Duration>,
}

impl Attempt {
    /// The lock-out this attempt starts if it fails.
    pub fn locked_for(&self) -> Option<Duration> {
        self.locked_for
    }
}

/// Failure counts and lock-outs.
#[derive(Default)]
pub struct LoginThrottle {
    inner: Mutex<HashMap<Subject, Failures>>,
}

/// The delay after `count` failures when `free` are allowed.
pub fn delay_after(count: u32, free: u32) -> Option<Duration> {
    if count < free {
        return None;
    }
    let doublings = (count - free).min(16);
    Some(BASE_DELAY.saturating_mul(1u32 << doublings).min(MAX_DELAY))
}

/// Lower-cased and trimmed, so `Alice` and ` alice` share a count.
fn fold(name: &str) -> String {
    name.trim().to_lowercase()
}

impl LoginThrottle {
    /// Starts a sign-in of `name` from `addr`: `Err(wait)` while any of its
    /// counts is locked, else the attempt, counted as a failure already.
    pub fn attempt(
        &self,
        name: &str,
        addr: &ClientAddr,
        now: Instant,
    ) -> Result<Attempt, Duration> {
        let name = fold(name);
        let user_at = Subject::UserAt(name.clone(), addr.clone());
        let mut others = vec![Subject::User(name)];
        // Without a client address every client shares one; counting it
        // would let twenty failures lock everyone out of every name.
        if addr.is_known() {
            others.push(Subject::Addr(addr.clone()));
        }
        let subjects = || std::iter::once(&user_at).chain(&others);
        let mut map = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let wait = subjects()
            .filter_map(|s| map.get(s)?.locked_until?.checked_duration_since(now))
            .filter(|w| !w.is_zero())
            .max();
        if let Some(wait) = wait {
            return Err(wait);
        }
        if map.len() >= MAX_ENTRIES {
            prune(&mut map, now);
        }
        let mut locked_for = None;
        for s in subjects() {
            let f = map.entry(s.clone()).or_insert(Failures {
                count: 0,
                last: now,
                locked_until: None,
            });
            if now.saturating_duration_since(f.last) >= FORGET_AFTER {
                f.count = 0;
                f.locked_until = None;
            }
            f.count = f.count.saturating_add(1);
            f.last = now;
            if let Some(d) = delay_after(f.count, s.free()) {
                f.locked_until = Some(now + d);
                locked_for = locked_for.max(Some(d));
            }
        }
        Ok(Attempt {
            user_at,
            others,
            locked_for,
        })
    }

    /// The attempt signed in: its (name, address) count is cleared and its
    /// failure taken back from the others.
    pub fn succeeded(&self, attempt: Attempt) {
        let mut map = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        map.remove(&attempt.user_at);
        for s in &attempt.others {
            take_back(&mut map, s);
        }
    }

    /// The password was never checked (too busy, or the account could not
    /// be read): the attempt does not count.
    pub fn withdraw(&self, attempt: Attempt) {
        let mut map = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        for s in std::iter::once(&attempt.user_at).chain(&attempt.others) {
            take_back(&mut map, s);
        }
    }
}

/// Undoes one counted failure; a count below its free failures unlocks.
fn take_back(map: &mut HashMap<Subject, Failures>, s: &Subject) {
    let Some(f) = map.get_mut(s) else { return };
    f.count = f.count.saturating_sub(1);
    if f.count == 0 {
        map.remove(s);
    } else if f.count < s.free() {
        f.locked_until = None;
    }
}

/// Drops forgotten counts, then (still full) every count not locked now.
fn prune(map: &mut HashMap<Subject, Failures>, now: Instant) {
    map.retain(|_, f| now.saturating_duration_since(f.last) < FORGET_AFTER);
    if map.len() >= MAX_ENTRIES {
        map.retain(|_, f| f.locked_until.is_some_and(|u| u > now));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from(ip: &str) -> ClientAddr {
        ClientAddr::of_ip(ip.parse().unwrap())
    }

    /// Counts `n` failed attempts; returns the lock-out the last started.
    fn fail(
        t: &LoginThrottle,
        name: &str,
        addr: &ClientAddr,
        n: u32,
        now: Instant,
    ) -> Option<Duration> {
        let mut locked = None;
        for i in 0..n {
            let a = t
                .attempt(name, addr, now)
                .unwrap_or_else(|w| panic!("attempt {i}: locked {w:?}"));
            locked = a.locked_for();
        }
        locked
    }

    #[test]
    fn delays_double_up_to_the_cap() {
        assert_eq!(delay_after(0, 5), None);
        assert_eq!(delay_after(4, 5), None);
        assert_eq!(delay_after(5, 5), Some(Duration::from_secs(30)));
        assert_eq!(delay_after(6, 5), Some(Duration::from_secs(60)));
        assert_eq!(delay_after(7, 5), Some(Duration::from_secs(120)));
        assert_eq!(delay_after(10, 5), Some(MAX_DELAY));
        assert_eq!(delay_after(u32::MAX, 5), Some(MAX_DELAY));
    }

    #[test]
    fn locks_a_name_from_one_address_only() {
        let t = LoginThrottle::default();
        let now = Instant::now();
        let attacker = from("10.0.0.1");
        assert_eq!(fail(&t, "Alice", &attacker, USER_FREE - 1, now), None);
        assert_eq!(fail(&t, "alice", &attacker, 1, now), Some(BASE_DELAY));
        assert_eq!(t.attempt("ALICE ", &attacker, now).unwrap_err(), BASE_DELAY);
        let later = now + Duration::from_secs(10);
        assert_eq!(
            t.attempt("alice", &attacker, later).unwrap_err(),
            Duration::from_secs(20)
        );
        // The owner, from another address, is not locked out; another
        // name from the attacker's address is not either.
        let owner = t.attempt("alice", &from("10.0.0.2"), later).unwrap();
        assert_eq!(owner.locked_for(), None);
        t.succeeded(owner);
        let bob = t.attempt("bob", &attacker, later).unwrap();
        t.withdraw(bob);

        // After the delay one more failure locks for twice as long.
        let after = now + BASE_DELAY;
        assert_eq!(fail(&t, "alice", &attacker, 1, after), Some(BASE_DELAY * 2));
        assert_eq!(
            t.attempt("alice", &attacker, after).unwrap_err(),
            BASE_DELAY * 2
        );

        // A success from that address (once allowed) clears its count.
        let much_later = after + BASE_DELAY * 2;
        t.succeeded(t.attempt("alice", &attacker, much_later).unwrap());
        assert_eq!(
            fail(&t, "alice", &attacker, USER_FREE - 1, much_later),
            None
        );
    }

    #[test]
    fn concurrent_attempts_cannot_pass_the_limit() {
        let t = std::sync::Arc::new(LoginThrottle::default());
        let now = Instant::now();
        let addr = from("192.0.2.9");
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(40));
        let threads: Vec<_> = (0..40)
            .map(|_| {
                let (t, addr, barrier) = (t.clone(), addr.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    // Held across the "password check": nothing is
                    // recorded after it for a failure.
                    let attempt = t.attempt("carol", &addr, now).ok();
                    std::thread::sleep(Duration::from_millis(20));
                    attempt.is_some()
                })
            })
            .collect();
        let passed = threads
            .into_iter()
            .map(|h| h.join().unwrap())
            .filter(|ok| *ok)
            .count();
        assert_eq!(passed, USER_FREE as usize);
        assert!(t.attempt("carol", &addr, now).is_err());
    }

    #[test]
    fn one_address_trying_many_names_is_locked() {
        let t = LoginThrottle::default();
        let now = Instant::now();
        let addr = from("192.0.2.7");
        for i in 0..ADDR_FREE - 1 {
            assert_eq!(fail(&t, &format!("user{i}"), &addr, 1, now), None);
        }
        assert_eq!(fail(&t, "last", &addr, 1, now), Some(BASE_DELAY));
        assert!(t.attempt("someone", &addr, now).is_err());
        assert!(t.attempt("someone", &from("192.0.2.8"), now).is_ok());
    }

    #[test]
    fn many_addresses_against_one_name_hit_the_looser_name_bound() {
        let t = LoginThrottle::default();
        let now = Instant::now();
        // Below the per-address limit everywhere, spread over addresses.
        let mut locked = None;
        for i in 0..NAME_FREE {
            let addr = from(&format!("198.51.100.{}", i / (USER_FREE - 1)));
            assert_eq!(locked, None, "locked before failure {i}");
            locked = fail(&t, "dave", &addr, 1, now);
        }
        assert_eq!(locked, Some(BASE_DELAY));
        assert!(t.attempt("dave", &from("203.0.113.1"), now).is_err());
    }

    #[test]
    fn without_an_address_only_names_are_counted() {
        let t = LoginThrottle::default();
        let now = Instant::now();
        let local = ClientAddr::resolve(Some(super::super::ApiPeer::Unix), &Default::default());
        for i in 0..ADDR_FREE {
            assert_eq!(fail(&t, &format!("user{i}"), &local, 1, now), None);
        }
        assert!(
            t.attempt("someone", &local, now).is_ok(),
            "no shared address lock"
        );
        assert_eq!(
            fail(&t, "user0", &local, USER_FREE - 1, now),
            Some(BASE_DELAY)
        );
    }

    #[test]
    fn withdrawn_attempts_do_not_count() {
        let t = LoginThrottle::default();
        let now = Instant::now();
        let addr = from("192.0.2.10");
        for _ in 0..3 * USER_FREE {
            t.withdraw(t.attempt("erin", &addr, now).unwrap());
        }
        assert!(t.inner.lock().unwrap().is_empty(), "nothing left behind");
        assert_eq!(fail(&t, "erin", &addr, USER_FREE - 1, now), None);
    }

    #[test]
    fn counts_are_forgotten() {
        let t = LoginThrottle::default();
        let now = Instant::now();
        let addr = from("192.0.2.11");
        fail(&t, "frank", &addr, USER_FREE - 1, now);
        let much_later = now + FORGET_AFTER;
        assert_eq!(
            fail(&t, "frank", &addr, 1, much_later),
            None,
            "started over"
        );
        assert_eq!(fail(&t, "frank", &addr, USER_FREE - 2, much_later), None);
    }
}
