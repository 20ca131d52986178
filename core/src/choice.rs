//! Which of a link's targets a visitor gets: the one rule for the daemon's
//! answers ([`crate::ipc::EdgeLink::target_for`]) and the nginx module's
//! zone entries, front-cache slots and answers straight from the daemon.
//!
//! The order: the target of the visitor's country (`country_targets`,
//! [`crate::country`]), else the most specific device target the link has
//! ([`DeviceClass::pick_target`]), else the link's main target.
//!
//! The visitor's country is asked for (`country`, an nginx variable at the
//! edge) only when the link has country targets, so a link without them
//! pays nothing for the rule.

use crate::country::Country;
use crate::device::DeviceClass;

/// Whose target a visitor gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    /// The link's country target at this index (in the link's order).
    Country(usize),
    /// The target of this device class; `Other` is the link's main target.
    Device(DeviceClass),
}

/// The choice for a visitor of `device` class, given the link's country
/// targets' codes (`countries`, in the link's order), the visitor's
/// country (asked for only when `countries` is not empty) and which device
/// classes have a target (`has_device`).
#[inline]
pub fn choose<I>(
    countries: I,
    country: impl FnOnce() -> Country,
    device: DeviceClass,
    has_device: impl Fn(DeviceClass) -> bool,
) -> Choice
where
    I: IntoIterator<Item = Country>,
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
    Choice::Device(device.pick_target(has_device))
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
            choose(codes, || code("DE"), DeviceClass::Ios, ios_only),
            Choice::Country(1)
        );
        assert_eq!(
            choose(codes, || code("FR"), DeviceClass::Ios, ios_only),
            Choice::Device(DeviceClass::Ios)
        );
        assert_eq!(
            choose(codes, || UNKNOWN, DeviceClass::Ios, ios_only),
            Choice::Device(DeviceClass::Ios)
        );
        assert_eq!(
            choose(codes, || code("FR"), DeviceClass::Desktop, ios_only),
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
        );
        assert_eq!(choice, Choice::Device(DeviceClass::Mobile));
    }
}
