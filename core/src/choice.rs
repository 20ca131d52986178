//! Which of a link's targets a visitor gets: the one rule for the daemon's
//! answers ([`crate::ipc::EdgeLink::target_for`]) and the nginx module's
//! zone entries, front-cache slots and answers straight from the daemon.
//!
//! The order: the target of the visitor's country (`country_targets`,
//! [`crate::country`]), else the most specific device target the link has
//! ([`DeviceClass::pick_target`]), else one of the link's A/B variants by
//! weight ([`crate::variants`]: they replace the main target; the one a
//! returning visitor's cookie keeps, if it is still one of them), else the
//! link's main target.
//!
//! The visitor's country is asked for (`country`, an nginx variable at the
//! edge) only when the link has country targets, and the kept variant
//! and a random number only when a variant is picked, so a link without
//! them pays nothing for the rule.

use crate::country::Country;
use crate::device::DeviceClass;

/// Whose target a visitor gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    /// The link's country target at this index (in the link's order).
    Country(usize),
    /// The target of this device class; `Other` is the link's main target.
    Device(DeviceClass),
    /// The link's A/B variant at this index, picked for this visit.
    Variant(usize),
    /// The link's A/B variant at this index, the one the visitor's cookie
    /// keeps them on.
    Kept(usize),
}

/// A link's A/B variants as the rule needs them: their weights, in the
/// link's order, the variant the visitor is kept on (a verified cookie)
/// and where a random number comes from (both asked for only when a
/// variant is picked).
pub struct Variants<W, R, K = fn() -> Option<usize>> {
    pub weights: W,
    pub random: R,
    pub kept: K,
}

/// No variant kept.
fn none_kept() -> Option<usize> {
    None
}

impl Variants<core::iter::Empty<u32>, fn() -> u64> {
    /// No variants.
    pub fn none() -> Self {
        Variants {
            weights: core::iter::empty(),
            random: || 0,
            kept: none_kept,
        }
    }
}

impl<W, R> Variants<W, R> {
    /// These weights and random numbers, no variant kept.
    pub fn picked(weights: W, random: R) -> Self {
        Variants {
            weights,
            random,
            kept: none_kept,
        }
    }
}

/// The choice for a visitor of `device` class, given the link's country
/// targets' codes (`countries`, in the link's order), the visitor's
/// country (asked for only when `countries` is not empty), which device
/// classes have a target (`has_device`) and the link's variants.
#[inline]
pub fn choose<I, W, R, K>(
    countries: I,
    country: impl FnOnce() -> Country,
    device: DeviceClass,
    has_device: impl Fn(DeviceClass) -> bool,
    variants: Variants<W, R, K>,
) -> Choice
where
    I: IntoIterator<Item = Country>,
    W: Iterator<Item = u32> + Clone,
    R: FnOnce() -> u64,
    K: FnOnce() -> Option<usize>,
{
    let mut countries = countries.into_iter().peekable();
    if countries.peek().is_some() {
        let country = country();
        if !country.is_unknown() {
            if let Some(i) = countries.position(|c| c == country) {
                return Choice::Country(i);
            }
        }
    }
    match device.pick_target(has_device) {
        DeviceClass::Other => {
            let mut weights = variants.weights.clone().peekable();
            if weights.peek().is_none() {
                return Choice::Device(DeviceClass::Other);
            }
            if let Some(i) = (variants.kept)() {
                if i < variants.weights.clone().count() {
                    return Choice::Kept(i);
                }
            }
            match crate::variants::pick(variants.weights, (variants.random)()) {
                Some(i) => Choice::Variant(i),
                None => Choice::Device(DeviceClass::Other),
            }
        }
        class => Choice::Device(class),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::country::UNKNOWN;

    fn code(s: &str) -> Country {
        Country::parse(s).unwrap()
    }

    #[test]
    fn country_then_device_then_main() {
        let codes = [code("NL"), code("DE")];
        let ios_only = |c: DeviceClass| c == DeviceClass::Ios;
        assert_eq!(
            choose(
                codes,
                || code("DE"),
                DeviceClass::Ios,
                ios_only,
                Variants::none()
            ),
            Choice::Country(1)
        );
        assert_eq!(
            choose(
                codes,
                || code("FR"),
                DeviceClass::Ios,
                ios_only,
                Variants::none()
            ),
            Choice::Device(DeviceClass::Ios)
        );
        assert_eq!(
            choose(
                codes,
                || UNKNOWN,
                DeviceClass::Ios,
                ios_only,
                Variants::none()
            ),
            Choice::Device(DeviceClass::Ios)
        );
        assert_eq!(
            choose(
                codes,
                || code("FR"),
                DeviceClass::Desktop,
                ios_only,
                Variants::none()
            ),
            Choice::Device(DeviceClass::Other)
        );
    }

    #[test]
    fn the_country_is_not_asked_for_without_country_targets() {
        let choice = choose(
            [],
            || panic!("asked for the country"),
            DeviceClass::Android,
            |c| c == DeviceClass::Mobile,
            Variants {
                weights: [1u32].into_iter(),
                random: || panic!("asked for a random number"),
                kept: || panic!("asked for the kept variant"),
            },
        );
        assert_eq!(choice, Choice::Device(DeviceClass::Mobile));
    }

    #[test]
    fn variants_replace_the_main_target_only() {
        let codes = [code("NL")];
        let ios_only = |c: DeviceClass| c == DeviceClass::Ios;
        let variants = |random: u64| Variants::picked([1u32, 3].into_iter(), move || random);
        let pick = |country: Country, device, random| {
            choose(codes, || country, device, ios_only, variants(random))
        };
        assert_eq!(
            pick(code("NL"), DeviceClass::Desktop, 0),
            Choice::Country(0)
        );
        assert_eq!(
            pick(code("FR"), DeviceClass::Ios, 0),
            Choice::Device(DeviceClass::Ios)
        );
        assert_eq!(
            pick(code("FR"), DeviceClass::Desktop, 0),
            Choice::Variant(0)
        );
        assert_eq!(
            pick(code("FR"), DeviceClass::Desktop, 1),
            Choice::Variant(1)
        );
        assert_eq!(pick(UNKNOWN, DeviceClass::Android, 7), Choice::Variant(1));
    }

    #[test]
    fn a_kept_variant_wins_over_the_pick_and_nothing_else() {
        let codes = [code("NL")];
        let ios_only = |c: DeviceClass| c == DeviceClass::Ios;
        let kept = |k: Option<usize>| Variants {
            weights: [1u32, 3, 5].into_iter(),
            random: || 0,
            kept: move || k,
        };
        let pick =
            |country: Country, device, k| choose(codes, || country, device, ios_only, kept(k));
        assert_eq!(
            pick(code("FR"), DeviceClass::Desktop, Some(2)),
            Choice::Kept(2)
        );
        assert_eq!(
            pick(code("FR"), DeviceClass::Desktop, None),
            Choice::Variant(0)
        );
        // A kept index past the variants the link has now: a fresh pick.
        assert_eq!(
            pick(code("FR"), DeviceClass::Desktop, Some(3)),
            Choice::Variant(0)
        );
        // Country and device targets still win.
        assert_eq!(
            pick(code("NL"), DeviceClass::Desktop, Some(2)),
            Choice::Country(0)
        );
        assert_eq!(
            pick(code("FR"), DeviceClass::Ios, Some(2)),
            Choice::Device(DeviceClass::Ios)
        );
    }
}
