//! Any target URL from the API or a CSV row: never panics, and what passes
//! is always safe in a Location header.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shortlink_core::target::{is_header_safe, validate_target, TargetRules};

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(url) = validate_target(text, &TargetRules::default()) {
            assert!(is_header_safe(url.as_bytes()), "{url:?}");
        }
        let _ = shortlink_core::validate_alias(
            &shortlink_core::Codec::new(&shortlink_core::DeploymentKey::from_bytes([1; 32])),
            text,
            &[],
        );
    }
});
