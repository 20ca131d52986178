//! The hash that places a code or alias in the edge's shared zone: its
//! bucket, its purge stripe, its front-cache slot and its alias-tree key.
//!
//! Any visitor picks the codes the zone holds: a code that passes the check
//! character but names no link is stored as a "not found" answer, and so is
//! any alias-shaped string while the alias set is incomplete. With an
//! unkeyed hash (FNV-1a until this module), strings that share a bucket
//! can be computed offline, and a few thousand of them make one chain that
//! every lookup of that bucket walks under the zone's lock, in every
//! worker. So the hash is SipHash-1-3 under a 128-bit key drawn at random
//! when the zone is made and kept in it, which every worker reads and no
//! visitor sees.

use core::hash::Hasher;

use siphasher::sip::SipHasher13;

/// The zone's secret hash key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct ZoneHashKey([u64; 2]);

impl ZoneHashKey {
    /// A key from the system's random source.
    pub fn random() -> Result<Self, getrandom::Error> {
        let mut words = [[0u8; 8]; 2];
        getrandom::getrandom(words.as_flattened_mut())?;
        Ok(Self(words.map(u64::from_le_bytes)))
    }

    /// A fixed key (tests).
    pub const fn from_words(k0: u64, k1: u64) -> Self {
        Self([k0, k1])
    }

    /// The hash of `bytes` under this key.
    #[inline]
    pub fn hash(&self, bytes: &[u8]) -> u64 {
        let mut h = SipHasher13::new_with_keys(self.0[0], self.0[1]);
        h.write(bytes);
        h.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// The zone's hash before this module: FNV-1a, no key.
    fn fnv1a(bytes: &[u8]) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for &b in bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        h
    }

    /// `n` alias-shaped strings that all fall in bucket 0 of `mask` under
    /// the unkeyed hash: what an attacker could compute offline.
    fn one_bucket_under_fnv(n: usize, mask: u64) -> Vec<String> {
        (0u64..)
            .map(|i| format!("x{i:x}"))
            .filter(|s| fnv1a(s.as_bytes()) & mask == 0)
            .take(n)
            .collect()
    }

    #[test]
    fn strings_chosen_to_share_a_bucket_spread_under_a_random_key() {
        let mask = (1u64 << 12) - 1;
        let chosen = one_bucket_under_fnv(200, mask);
        // The attack works on the old hash: one bucket for all 200.
        let old: HashSet<u64> = chosen.iter().map(|s| fnv1a(s.as_bytes()) & mask).collect();
        assert_eq!(old.len(), 1);
        for _ in 0..8 {
            let key = ZoneHashKey::random().expect("random key");
            let buckets: HashSet<u64> = chosen
                .iter()
                .map(|s| key.hash(s.as_bytes()) & mask)
                .collect();
            // 200 strings thrown into 4,096 buckets at random land in about
            // 195 distinct ones; fewer than 150 would be a 1e-20 event.
            assert!(buckets.len() > 150, "only {} buckets", buckets.len());
        }
    }

    #[test]
    fn the_same_key_gives_the_same_hash_and_another_key_another() {
        let a = ZoneHashKey::from_words(1, 2);
        let b = ZoneHashKey::from_words(1, 3);
        for code in ["a", "abc123X", "my-alias_2026", ""] {
            assert_eq!(a.hash(code.as_bytes()), a.hash(code.as_bytes()));
            assert_eq!(
                a.hash(code.as_bytes()),
                ZoneHashKey::from_words(1, 2).hash(code.as_bytes())
            );
            assert_ne!(a.hash(code.as_bytes()), b.hash(code.as_bytes()), "{code:?}");
        }
        assert_ne!(a.hash(b"ab"), a.hash(b"ba"));
    }

    #[test]
    fn random_keys_differ() {
        let keys: HashSet<_> = (0..16)
            .map(|_| ZoneHashKey::random().expect("random key").0)
            .collect();
        assert_eq!(keys.len(), 16);
    }
}
