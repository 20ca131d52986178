//! A/B targets: a link's alternative targets with integer weights
//! (`variants`), one picked per visit by weight at the edge.
//!
//! The rule for both sides:
//!
//! * a link has at most [`MAX_VARIANTS`] variants, each a URL (judged like
//!   the link's `url`) and a weight from 1 to [`MAX_WEIGHT`];
//! * variants replace the link's main target; country and device targets
//!   still win (`choice.rs`);
//! * the edge picks variant `i` with probability `weight_i / sum`, from a
//!   random number it supplies ([`pick`]), so the rule is tested here with
//!   fixed inputs.

use serde::{Deserialize, Serialize};

/// Most variants a link may carry.
pub const MAX_VARIANTS: usize = 8;
/// Largest weight of a variant (two bytes in the nginx zone's entry).
pub const MAX_WEIGHT: u32 = 65_535;

/// One alternative target.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Variant {
    pub url: String,
    pub weight: u32,
}

/// Why a link's variants were refused (the URL is judged by the caller).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VariantError {
    #[error("variants has {0} entries, more than the maximum of {MAX_VARIANTS}")]
    TooMany(usize),
    #[error(
        "variants[{index}].weight is {weight}; a weight is a whole number from 1 to {MAX_WEIGHT}"
    )]
    BadWeight { index: usize, weight: u64 },
}

/// Checks the count and the weights (not the URLs).
pub fn check(weights: &[u64]) -> Result<(), VariantError> {
    if weights.len() > MAX_VARIANTS {
        return Err(VariantError::TooMany(weights.len()));
    }
    match weights
        .iter()
        .position(|&w| w == 0 || w > u64::from(MAX_WEIGHT))
    {
        Some(index) => Err(VariantError::BadWeight {
            index,
            weight: weights[index],
        }),
        None => Ok(()),
    }
}

/// The variant a visit gets, given the variants' weights (in the link's
/// order) and a uniformly random `random`: variant `i` for
/// `random % sum` in `[w_0 + … + w_{i-1}, w_0 + … + w_i)`. `None` for no
/// variants (or weights that sum to zero, which the API refuses).
#[inline]
pub fn pick(weights: impl Iterator<Item = u32> + Clone, random: u64) -> Option<usize> {
    let sum: u64 = weights.clone().map(u64::from).sum();
    if sum == 0 {
        return None;
    }
    let mut at = random % sum;
    for (i, w) in weights.enumerate() {
        let w = u64::from(w);
        if at < w {
            return Some(i);
        }
        at -= w;
    }
    None
}

/// The edge cookie (`crate::edge_cookie`, purpose [`COOKIE_PURPOSE`]) that
/// keeps a returning visitor on the variant they got: its name, scoped to
/// the link's path like the password cookie.
pub const COOKIE_NAME: &str = "shortlink_v";
/// The cookie's signing purpose.
pub const COOKIE_PURPOSE: &str = "variant";

/// FNV-1a of a variant's URL, 32 bits: binds a kept variant to the URL the
/// visitor got, so an edit that changes or reorders the variants sends a
/// returning visitor through a fresh pick instead of to another target.
pub fn tag(url: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for &b in url {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// The cookie's signed value for variant `index` with `url`:
/// `<index>-<8 hex digits of the URL's tag>`, within the edge cookie's
/// alphabet.
pub fn kept_value(index: usize, url: &[u8]) -> String {
    format!("{index}-{:08x}", tag(url))
}

/// The variant a verified cookie value keeps, if it still names a variant
/// of the link (`tag_of(i)` is the [`tag`] of variant `i`'s URL, for
/// `i < count`) with the same URL. Allocates nothing: the edge runs it on
/// the request path.
pub fn kept_by(value: &str, count: usize, tag_of: impl Fn(usize) -> u32) -> Option<usize> {
    let (index, tag) = value.split_once('-')?;
    if index.is_empty() || index.len() > 1 || tag.len() != 8 {
        return None;
    }
    let index = usize::from(index.as_bytes()[0].checked_sub(b'0')?);
    let tag = u32::from_str_radix(tag, 16).ok()?;
    (index < count && index < MAX_VARIANTS && tag_of(index) == tag).then_some(index)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_value_names_its_variant_while_the_url_stays() {
        let urls: [&[u8]; 3] = [
            b"https://a.example/",
            b"https://b.example/",
            b"https://c.example/",
        ];
        for (i, u) in urls.iter().enumerate() {
            let v = kept_value(i, u);
            assert!(
                v.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'),
                "{v}"
            );
            assert_eq!(kept_by(&v, 3, |j| tag(urls[j])), Some(i));
        }
        // Fewer variants now, or another URL at that place: a fresh pick.
        let v = kept_value(2, urls[2]);
        assert_eq!(kept_by(&v, 2, |j| tag(urls[j])), None);
        let v = kept_value(1, b"https://old.example/");
        assert_eq!(kept_by(&v, 3, |j| tag(urls[j])), None);
        for bad in [
            "",
            "1",
            "-0000",
            "12-00000000",
            "a-00000000",
            "1-0000000",
            "1-zzzzzzzz",
            "/-00000000",
        ] {
            assert_eq!(kept_by(bad, 8, |_| 0), None, "{bad:?}");
        }
        assert_eq!(kept_by("9-00000000", 10, |_| 0), None);
    }

    #[test]
    fn every_random_value_lands_by_weight() {
        let weights = [1u32, 3, 6];
        let mut counts = [0usize; 3];
        // Every residue once: the split is exactly the weights'.
        for r in 0..10u64 * 1000 {
            counts[pick(weights.iter().copied(), r).unwrap()] += 1;
        }
        assert_eq!(counts, [1000, 3000, 6000]);
    }

    #[test]
    fn a_fixed_random_stream_splits_roughly_by_weight() {
        // A fixed 64-bit LCG stream, as the edge's random numbers would be.
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let weights = [70u32, 20, 10];
        let mut counts = [0usize; 3];
        for _ in 0..100_000 {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            counts[pick(weights.iter().copied(), x >> 16).unwrap()] += 1;
        }
        for (got, w) in counts.iter().zip(weights) {
            let want = 100_000 * w as usize / 100;
            assert!(got.abs_diff(want) < 1_000, "{counts:?}");
        }
    }

    #[test]
    fn edges_of_the_pick() {
        assert_eq!(pick([].into_iter(), 5), None);
        assert_eq!(pick([0u32, 0].into_iter(), 5), None);
        assert_eq!(pick([5u32].into_iter(), u64::MAX), Some(0));
        assert_eq!(pick([1u32, 1].into_iter(), 0), Some(0));
        assert_eq!(pick([1u32, 1].into_iter(), 1), Some(1));
    }

    #[test]
    fn weights_and_counts_are_checked() {
        assert_eq!(check(&[1, 8, 65_535]), Ok(()));
        assert_eq!(check(&[]), Ok(()));
        let err = check(&[3, 0]).unwrap_err();
        assert_eq!(
            err,
            VariantError::BadWeight {
                index: 1,
                weight: 0
            }
        );
        assert!(err.to_string().contains("variants[1].weight"));
        assert!(matches!(
            check(&[1, 65_536]),
            Err(VariantError::BadWeight { index: 1, .. })
        ));
        assert_eq!(check(&[1; 9]), Err(VariantError::TooMany(9)));
    }
}
