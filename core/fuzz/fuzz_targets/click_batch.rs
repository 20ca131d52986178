//! Any click batch payload from an IPC peer: decoding and validation never
//! panic, and what validates stays within the documented bounds.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shortlink_core::clicks::{MAX_AHEAD_HOURS, MAX_AGE_HOURS, MAX_REFERRER_LEN, MAX_ROW_COUNT};
use shortlink_core::ipc::{decode_payload, ClickBatch};
use shortlink_core::variants::MAX_VARIANTS;

const NOW: i64 = 1_800_000_000;

fuzz_target!(|data: &[u8]| {
    let Ok(batch) = decode_payload::<ClickBatch>(data) else {
        return;
    };
    if batch.validate(NOW).is_ok() {
        let hour = (NOW / 3600) as u32;
        for c in &batch.clicks {
            assert!(c.link_id != 0);
            assert!((1..=MAX_ROW_COUNT).contains(&c.count));
            assert!(c.hour >= hour - MAX_AGE_HOURS && c.hour <= hour + MAX_AHEAD_HOURS);
            assert!(c.referrer.as_ref().is_none_or(|r| !r.is_empty() && r.len() <= MAX_REFERRER_LEN));
            assert!(usize::from(c.variant) <= MAX_VARIANTS);
        }
        assert!(batch.total() <= batch.clicks.len() as u64 * u64::from(MAX_ROW_COUNT));
    }
});
