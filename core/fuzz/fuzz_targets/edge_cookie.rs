//! What a visitor sends a protected link: any `Cookie` header through the
//! edge's cookie check, and any form body through the password field's
//! decoder. Neither panics; a forged cookie never passes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shortlink_core::edge_cookie::{find_cookie, EdgeCookieKey, PASSWORD_PURPOSE};
use shortlink_core::password_page::{password_of, COOKIE_NAME, MAX_PASSWORD};
use shortlink_core::DeploymentKey;

fuzz_target!(|data: &[u8]| {
    if let Some(p) = password_of(data) {
        assert!(!p.is_empty() && p.len() <= MAX_PASSWORD);
    }
    let Ok(header) = std::str::from_utf8(data) else {
        return;
    };
    let key = EdgeCookieKey::new(&DeploymentKey::from_bytes([7; 32]), PASSWORD_PURPOSE);
    let value = find_cookie(header, COOKIE_NAME).unwrap_or(header);
    // Random bytes cannot hold a MAC of this key (2^-256).
    assert!(key.verify(value, "aZ3kQ9x", 0).is_err());
});
