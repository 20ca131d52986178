//! Any request path through the edge's codec: never panics, and whatever
//! decodes re-encodes to the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shortlink_core::{Codec, DeploymentKey};

fuzz_target!(|data: &[u8]| {
    let codec = Codec::new(&DeploymentKey::from_bytes([7; 32]));
    let verified = codec.verify(data).is_ok();
    match codec.decode(data) {
        Ok(id) => {
            assert!(verified);
            assert_eq!(codec.encode(id).as_bytes(), data);
        }
        Err(_) => {
            let _ = codec.could_be_code(data);
        }
    }
    let _ = shortlink_core::device::classify(Some(data));
    let _ = shortlink_core::device::referrer_host(data);
});
