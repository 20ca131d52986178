//! Lock-out after repeated failed sign-ins.
//!
//! Failures are counted per user name and per client address (nginx's
//! `X-Real-IP`). After [`USER_FREE`] failures for a name (or [`ADDR_FREE`]
//! from one address) further attempts are refused without checking the
//! password for a delay that starts at [`BASE_DELAY`] and doubles with
//! every further failure, up to [`MAX_DELAY`]. A success clears the name's
//! count; counts are forgotten [`FORGET_AFTER`] after the last failure.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Failures a user name gets before the first delay.
pub const USER_FREE: u32 = 5;
/// Failures one client address gets (over any names) before the first delay.
pub const ADDR_FREE: u32 = 20;
/// The first delay.
pub const BASE_DELAY: Duration = Duration::from_secs(30);
/// The longest delay.
pub const MAX_DELAY: Duration = Duration::from_secs(15 * 60);
/// A count is dropped this long after its last failure.
pub const FORGET_AFTER: Duration = Duration::from_secs(3600);
/// Most names and addresses tracked at once.
const MAX_ENTRIES: usize = 100_000;

#[derive(Debug, Clone, Copy)]
struct Failures {
    count: u32,
    last: Instant,
    locked_until: Option<Instant>,
}

/// What is being throttled: a user name or a client address.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Subject {
    /// Lower-cased user name.
    User(String),
    /// Client address as nginx reports it.
    Addr(String),
}

impl Subject {
    /// A user name, case-folded so `Alice` and `alice` share a count.
    pub fn user(name: &str) -> Self {
        Subject::User(name.trim().to_lowercase())
    }

    fn free(&self) -> u32 {
        match self {
            Subject::User(_) => USER_FREE,
            Subject::Addr(_) => ADDR_FREE,
        }
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

impl LoginThrottle {
    /// `Err(wait)` while any subject is locked out.
    pub fn check(&self, subjects: &[Subject], now: Instant) -> Result<(), Duration> {
        let map = self.inner.lock().expect("throttle");
        let wait = subjects
            .iter()
            .filter_map(|s| map.get(s)?.locked_until)
            .filter(|until| *until > now)
            .map(|until| until - now)
            .max();
        match wait {
            Some(w) => Err(w),
            None => Ok(()),
        }
    }

    /// Counts a failure for each subject; returns the longest lock-out it
    /// started, if any.
    pub fn failed(&self, subjects: &[Subject], now: Instant) -> Option<Duration> {
        let mut map = self.inner.lock().expect("throttle");
        if map.len() >= MAX_ENTRIES {
            map.retain(|_, f| now.saturating_duration_since(f.last) < FORGET_AFTER);
        }
        let mut longest = None;
        for s in subjects {
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
                longest = longest.max(Some(d));
            }
        }
        longest
    }

    /// A successful sign-in clears the count of that subject.
    pub fn succeeded(&self, subject: &Subject) {
        self.inner.lock().expect("throttle").remove(subject);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn locks_a_name_after_repeated_failures() {
        let t = LoginThrottle::default();
        let now = Instant::now();
        let alice = [Subject::user("Alice"), Subject::Addr("10.0.0.1".into())];
        for i in 1..USER_FREE {
            assert_eq!(t.check(&alice, now), Ok(()), "attempt {i}");
            assert_eq!(t.failed(&alice, now), None);
        }
        assert_eq!(t.failed(&alice, now), Some(BASE_DELAY));
        assert_eq!(t.check(&alice, now), Err(BASE_DELAY));
        let later = now + Duration::from_secs(10);
        assert_eq!(t.check(&alice, later), Err(Duration::from_secs(20)));
        // The same name in other case, from another address: still locked.
        let other = [Subject::user("alice"), Subject::Addr("10.0.0.2".into())];
        assert!(t.check(&other, later).is_err());
        // Another name from the first address is not.
        let bob = [Subject::user("bob"), Subject::Addr("10.0.0.1".into())];
        assert_eq!(t.check(&bob, later), Ok(()));

        // After the delay one more failure locks for twice as long.
        let after = now + BASE_DELAY;
        assert_eq!(t.check(&alice, after), Ok(()));
        assert_eq!(t.failed(&alice, after), Some(BASE_DELAY * 2));
        assert_eq!(t.check(&alice, after), Err(BASE_DELAY * 2));

        // A success clears the name.
        t.succeeded(&Subject::user("ALICE"));
        assert_eq!(t.check(&[Subject::user("alice")], after), Ok(()));
        assert_eq!(t.failed(&[Subject::user("alice")], after), None);
    }

    #[test]
    fn one_address_trying_many_names_is_locked() {
        let t = LoginThrottle::default();
        let now = Instant::now();
        let addr = Subject::Addr("192.0.2.7".into());
        for i in 0..ADDR_FREE - 1 {
            let s = [Subject::user(&format!("user{i}")), addr.clone()];
            assert_eq!(t.failed(&s, now), None);
        }
        let s = [Subject::user("last"), addr.clone()];
        assert_eq!(t.failed(&s, now), Some(BASE_DELAY));
        assert!(t.check(&[Subject::user("someone"), addr], now).is_err());
    }

    #[test]
    fn counts_are_forgotten() {
        let t = LoginThrottle::default();
        let now = Instant::now();
        let s = [Subject::user("carol")];
        for _ in 0..USER_FREE - 1 {
            t.failed(&s, now);
        }
        let much_later = now + FORGET_AFTER;
        assert_eq!(t.failed(&s, much_later), None, "the count started over");
    }
}
