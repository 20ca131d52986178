//! Any spool file (another process writes them): opening never panics and
//! never yields a batch from a file whose seal does not match; the frame
//! reader never reads past a refused frame and keeps the offset consistent,
//! even inside a correctly sealed file.
#![no_main]

use std::io::Cursor;

use libfuzzer_sys::fuzz_target;
use shortlink_core::spool::{SpoolReader, SpoolSeal};
use shortlink_core::DeploymentKey;

fn read_all<R: std::io::Read>(mut reader: SpoolReader<R>, len: u64) {
    let mut offset = 0;
    while let Some(item) = reader.next() {
        match item {
            Ok(batch) => {
                assert!(reader.offset() > offset);
                offset = reader.offset();
                let _ = batch.validate(1_800_000_000);
            }
            Err(damage) => {
                assert_eq!(damage.offset, offset);
                assert!(reader.next().is_none(), "the reader went on after damage");
                break;
            }
        }
    }
    assert!(reader.offset() <= len);
}

fuzz_target!(|data: &[u8]| {
    let seal = SpoolSeal::new(&DeploymentKey::from_bytes([9; 32]));
    // Forged bytes: the seal cannot match (2^-256), so nothing is read.
    if let Ok(mut reader) = seal.open(Cursor::new(data), data.len() as u64) {
        assert!(reader.next().is_none(), "an unsealed file yielded a batch");
    }
    // The same bytes sealed with the key: every frame path is exercised.
    let sealed = seal.seal(data);
    let reader = seal
        .open(Cursor::new(&sealed), sealed.len() as u64)
        .expect("a file sealed with the key opens");
    read_all(reader, data.len() as u64);
    read_all(SpoolReader::new(data), data.len() as u64);
});
