//! Any bytes from the IPC socket, either direction: never panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shortlink_core::ipc::{read_frame, Reply, Request};

fuzz_target!(|data: &[u8]| {
    let mut at = 0;
    while let Ok(Some((_, used))) = read_frame::<Request>(&data[at..]) {
        at += used;
    }
    let _ = read_frame::<Reply>(data);
});
