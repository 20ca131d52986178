//! The visitor byte of a click row in the edge's `shortlink_clicks` zone
//! (`nginx-module/src/clicks/page.rs`), here so its bits are unit-tested:
//! the row stays 24 bytes, so one byte carries the device class (bits
//! 0–2), the A/B variant number (bits 3–6: 0 for none, `i + 1` for variant
//! `i`, as [`crate::ipc::ClickCount::variant`]) and the bot flag (bit 7).

use crate::device::DeviceClass;
use crate::variants::MAX_VARIANTS;

/// The bot flag.
const BOT: u8 = 0x80;
/// Where the variant number sits.
const VARIANT_SHIFT: u32 = 3;
/// The variant number's bits.
const VARIANT_MASK: u8 = 0x78;
/// The device class's bits.
const DEVICE_MASK: u8 = 0x07;

const _: () = assert!(MAX_VARIANTS < (VARIANT_MASK >> VARIANT_SHIFT) as usize + 1);

/// The variant number of a click sent to variant index `index`, as
/// [`crate::ipc::ClickCount::variant`] carries it: 0 for none, `i + 1` for
/// variant `i`. An index past [`MAX_VARIANTS`] (no link has one) counts as
/// none.
#[inline]
pub fn variant_number(index: Option<u8>) -> u8 {
    index
        .filter(|&i| usize::from(i) < MAX_VARIANTS)
        .map_or(0, |i| i + 1)
}

/// The byte of a visitor of `device`, a bot or not, sent to variant number
/// `variant` (0: none). A number past [`MAX_VARIANTS`] (no link has one)
/// counts as none rather than spilling into the other bits.
#[inline]
pub fn visitor_byte(device: DeviceClass, bot: bool, variant: u8) -> u8 {
    let variant = if usize::from(variant) <= MAX_VARIANTS {
        variant
    } else {
        0
    };
    device as u8 | variant << VARIANT_SHIFT | if bot { BOT } else { 0 }
}

/// The device class, bot flag and variant number of a stored byte; `None`
/// for a byte no [`visitor_byte`] makes (a row a dying worker left half
/// written).
#[inline]
pub fn from_visitor_byte(byte: u8) -> Option<(DeviceClass, bool, u8)> {
    let device = [
        DeviceClass::Other,
        DeviceClass::Desktop,
        DeviceClass::Mobile,
        DeviceClass::Ios,
        DeviceClass::Android,
    ]
    .into_iter()
    .find(|d| *d as u8 == byte & DEVICE_MASK)?;
    let variant = (byte & VARIANT_MASK) >> VARIANT_SHIFT;
    if usize::from(variant) > MAX_VARIANTS {
        return None;
    }
    Some((device, byte & BOT != 0, variant))
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEVICES: [DeviceClass; 5] = [
        DeviceClass::Other,
        DeviceClass::Desktop,
        DeviceClass::Mobile,
        DeviceClass::Ios,
        DeviceClass::Android,
    ];

    #[test]
    fn every_visitor_round_trips_in_its_own_byte() {
        let mut seen = std::collections::HashSet::new();
        for device in DEVICES {
            for bot in [false, true] {
                for variant in 0..=MAX_VARIANTS as u8 {
                    let b = visitor_byte(device, bot, variant);
                    assert_eq!(from_visitor_byte(b), Some((device, bot, variant)));
                    assert!(seen.insert(b), "{device:?} {bot} {variant} shares {b:#x}");
                }
            }
        }
        assert_eq!(seen.len(), 5 * 2 * (MAX_VARIANTS + 1));
    }

    #[test]
    fn variant_numbers_count_from_one_and_back() {
        assert_eq!(variant_number(None), 0);
        for i in 0..MAX_VARIANTS as u8 {
            let n = variant_number(Some(i));
            assert_eq!(n, i + 1);
            let c = crate::ipc::ClickCount {
                link_id: 1,
                hour: 1,
                device: DeviceClass::Other,
                bot: false,
                referrer: None,
                count: 1,
                country: crate::country::UNKNOWN,
                variant: n,
            };
            assert_eq!(c.variant_index(), Some(i));
        }
        assert_eq!(variant_number(Some(MAX_VARIANTS as u8)), 0);
        assert_eq!(variant_number(Some(u8::MAX)), 0);
    }

    #[test]
    fn no_variant_keeps_the_byte_of_before_variants() {
        assert_eq!(visitor_byte(DeviceClass::Android, false, 0), 4);
        assert_eq!(visitor_byte(DeviceClass::Ios, true, 0), 0x83);
        assert_eq!(
            visitor_byte(DeviceClass::Desktop, true, 8),
            0x80 | 8 << 3 | 1
        );
    }

    #[test]
    fn a_number_past_the_variants_never_touches_other_bits() {
        for variant in MAX_VARIANTS as u8 + 1..=u8::MAX {
            let b = visitor_byte(DeviceClass::Mobile, false, variant);
            assert_eq!(from_visitor_byte(b), Some((DeviceClass::Mobile, false, 0)));
        }
    }

    #[test]
    fn bytes_no_visitor_makes_are_refused() {
        // Device classes 5 to 7 do not exist; variant numbers 9 to 15 neither.
        for byte in [5u8, 6, 7, 0x85, 9 << 3, 15 << 3 | 0x81] {
            assert_eq!(from_visitor_byte(byte), None, "{byte:#x}");
        }
    }
}
