//! Any host list entry (config) and any target URL against lists: never
//! panics; a host that parses normalises to a fixed point, and a URL whose
//! host is a list entry is refused by that list.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shortlink_core::{HostSet, NormalHost, TargetRules};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(host) = NormalHost::parse(text) {
        assert!(!host.name.is_empty());
        assert!(!host.name.ends_with('.'), "{host:?}");
        let again = NormalHost::parse(&host.name).expect("a normal host parses");
        assert_eq!(again, host, "normalising twice changed {text:?}");
        let set = HostSet::parse(&[text]).expect("the entry parsed alone");
        assert!(set.matches(&host));
        let policy = TargetRules {
            block_hosts: vec![text.to_string()],
            ..TargetRules::default()
        }
        .compile()
        .expect("the entry parsed alone");
        let url = format!("https://{}/", host.name);
        if let Ok(stored) = shortlink_core::validate_target(&url, &TargetRules::default()) {
            assert!(policy.validate(&url).is_err(), "{url} passed a list holding {text:?}");
            assert!(policy.refuses_host(&stored), "{stored}");
        }
    }
    let policy = TargetRules {
        block_hosts: vec!["evil.example".into()],
        ..TargetRules::default()
    }
    .compile()
    .expect("a literal entry");
    if let Ok(stored) = policy.validate(text) {
        assert!(!policy.refuses_host(&stored), "{text:?} stored as {stored:?}");
    }
});
