//! Any blocklist file: never panics; every bad line is counted (the report
//! holds at most `REPORTED`, numbered within the file), and a line the
//! parser took as one plain host is matched by the list.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shortlink_core::blocklist::{parse, REPORTED};
use shortlink_core::NormalHost;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let list = parse(text);
    let lines = text.lines().count();
    assert!(list.bad_lines <= lines);
    assert_eq!(list.first_bad.len(), list.bad_lines.min(REPORTED));
    assert!(list.first_bad.iter().all(|(n, _)| (1..=lines).contains(n)));
    for line in text.lines() {
        let word = line.trim();
        if word.contains(['#', '!', '[', ' ', '\t', ':', '/']) || word.starts_with('|') {
            continue;
        }
        if let Ok(host) = NormalHost::parse(word) {
            assert!(list.hosts.matches(&host), "{word:?} listed but not matched");
        }
    }
});
