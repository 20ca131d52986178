//! Signed cookies the edge checks with no I/O: a short value bound to one
//! link code and an expiry, under a subkey of the deployment key. Password
//! links use it to remember a visitor who gave the password; A/B links can
//! use it to keep a visitor on one variant. Each use names its own purpose,
//! so a cookie made for one never passes as the other.
//!
//! The cookie value is `<code>.<expires>.<value>.<mac>`:
//!
//! * `code`: the link's code or alias (the cookie is also scoped to the
//!   link's path, but the MAC binds it too, so a cookie copied to another
//!   link's path is refused);
//! * `expires`: Unix seconds, decimal; refused at or after that second;
//! * `value`: 0 to [`MAX_VALUE_LEN`] bytes of `0-9A-Za-z-_`;
//! * `mac`: HMAC-SHA256 of purpose, code, expiry and value, 64 hex digits.
//!
//! Verification allocates nothing, so the module runs it on the request path.

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::key::DeploymentKey;

/// Longest value a cookie carries.
pub const MAX_VALUE_LEN: usize = 64;
/// Longest code a cookie is bound to (codes and aliases are shorter).
pub const MAX_CODE_LEN: usize = 128;
/// Hex digits of the MAC.
const MAC_HEX_LEN: usize = 64;

/// The purpose of the password links' cookie.
pub const PASSWORD_PURPOSE: &str = "password";

/// Why a cookie was refused (or could not be made).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EdgeCookieError {
    /// Not four dot-separated parts, a non-decimal expiry, or a MAC that is not 64 hex digits.
    #[error("edge cookie is malformed")]
    Malformed,
    /// The MAC does not match: tampered, or made under another key or purpose.
    #[error("edge cookie signature does not match")]
    BadSignature,
    /// Made for another link.
    #[error("edge cookie is for another link")]
    OtherCode,
    /// Its expiry has passed.
    #[error("edge cookie expired at {expires}")]
    Expired { expires: u64 },
    /// A value longer than [`MAX_VALUE_LEN`] or with bytes outside `0-9A-Za-z-_`.
    #[error("edge cookie value must be at most {MAX_VALUE_LEN} bytes of 0-9A-Za-z-_")]
    BadValue,
    /// A code that is empty, too long or holds a byte outside `0-9A-Za-z-_`.
    #[error("edge cookie code must be 1 to {MAX_CODE_LEN} bytes of 0-9A-Za-z-_")]
    BadCode,
}

/// A cookie that passed: the value it carries and when it expires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verified<'c> {
    /// The signed value.
    pub value: &'c str,
    /// Unix seconds at which it stops being accepted.
    pub expires: u64,
}

/// The signing key of one purpose.
#[derive(Clone)]
pub struct EdgeCookieKey {
    key: [u8; 32],
    purpose: &'static str,
}

impl std::fmt::Debug for EdgeCookieKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "EdgeCookieKey({})", self.purpose)
    }
}

impl EdgeCookieKey {
    /// The subkey of `purpose` (such as [`PASSWORD_PURPOSE`]); other purposes
    /// and every other use of the deployment key get other bytes.
    pub fn new(key: &DeploymentKey, purpose: &'static str) -> Self {
        let mut label = Vec::with_capacity(16 + purpose.len());
        label.extend_from_slice(b"edge-cookie/");
        label.extend_from_slice(purpose.as_bytes());
        Self {
            key: key.derive(&label),
            purpose,
        }
    }

    /// The cookie value binding `value` to `code` until `expires` (Unix seconds).
    pub fn sign(&self, code: &str, value: &str, expires: u64) -> Result<String, EdgeCookieError> {
        check_code(code)?;
        if !is_token(value, MAX_VALUE_LEN) {
            return Err(EdgeCookieError::BadValue);
        }
        let mut out = String::with_capacity(code.len() + value.len() + 24 + MAC_HEX_LEN);
        out.push_str(code);
        out.push('.');
        out.push_str(&expires.to_string());
        out.push('.');
        out.push_str(value);
        out.push('.');
        for b in self.mac(code, expires, value) {
            out.push(HEX[usize::from(b >> 4)] as char);
            out.push(HEX[usize::from(b & 15)] as char);
        }
        Ok(out)
    }

    /// Checks a cookie value for `code` at `now` (Unix seconds): the MAC in
    /// constant time, then the code, then the expiry.
    pub fn verify<'c>(
        &self,
        cookie: &'c str,
        code: &str,
        now: u64,
    ) -> Result<Verified<'c>, EdgeCookieError> {
        let mut parts = cookie.rsplitn(4, '.');
        let (Some(mac_hex), Some(value), Some(expires_text), Some(signed_code)) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(EdgeCookieError::Malformed);
        };
        let mut given = [0u8; 32];
        if mac_hex.len() != MAC_HEX_LEN {
            return Err(EdgeCookieError::Malformed);
        }
        for (i, pair) in mac_hex.as_bytes().chunks_exact(2).enumerate() {
            match (hex_value(pair[0]), hex_value(pair[1])) {
                (Some(hi), Some(lo)) => given[i] = hi << 4 | lo,
                _ => return Err(EdgeCookieError::Malformed),
            }
        }
        if expires_text.is_empty()
            || expires_text.len() > 20
            || !expires_text.bytes().all(|b| b.is_ascii_digit())
        {
            return Err(EdgeCookieError::Malformed);
        }
        let expires: u64 = expires_text
            .parse()
            .map_err(|_| EdgeCookieError::Malformed)?;
        if check_code(signed_code).is_err() || !is_token(value, MAX_VALUE_LEN) {
            return Err(EdgeCookieError::Malformed);
        }
        let expected = self.mac(signed_code, expires, value);
        if expected
            .iter()
            .zip(given)
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            != 0
        {
            return Err(EdgeCookieError::BadSignature);
        }
        if signed_code != code {
            return Err(EdgeCookieError::OtherCode);
        }
        if now >= expires {
            return Err(EdgeCookieError::Expired { expires });
        }
        Ok(Verified { value, expires })
    }

    fn mac(&self, code: &str, expires: u64, value: &str) -> [u8; 32] {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.key)
            .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
        mac.update(self.purpose.as_bytes());
        mac.update(&[0]);
        mac.update(code.as_bytes());
        mac.update(&[0]);
        mac.update(&expires.to_be_bytes());
        mac.update(value.as_bytes());
        mac.finalize().into_bytes().into()
    }
}

/// The value of cookie `name` in a `Cookie` request header, if present.
/// Pairs are separated by `;` with optional spaces; the first match wins.
pub fn find_cookie<'h>(header: &'h str, name: &str) -> Option<&'h str> {
    header.split(';').find_map(|pair| {
        let (n, v) = pair.trim().split_once('=')?;
        (n.trim() == name).then(|| v.trim().trim_matches('"'))
    })
}

/// A `Set-Cookie` header value: `name=value`, scoped to `path`, `Max-Age`
/// seconds, `HttpOnly`, `SameSite=Lax`, and `Secure` when asked. `None`
/// when the name, value or path would break out of the header (a byte
/// outside visible ASCII, `;`, `,`, or a path not starting with `/`).
pub fn set_cookie_header(
    name: &str,
    value: &str,
    path: &str,
    max_age: u64,
    secure: bool,
) -> Option<String> {
    let attr_safe = |s: &str| {
        s.bytes()
            .all(|b| b.is_ascii_graphic() && b != b';' && b != b',')
    };
    if name.is_empty() || !is_token(name, 64) || !attr_safe(value) || value.contains('"') {
        return None;
    }
    if !path.starts_with('/') || !attr_safe(path) {
        return None;
    }
    let mut out = format!("{name}={value}; Path={path}; Max-Age={max_age}; HttpOnly; SameSite=Lax");
    if secure {
        out.push_str("; Secure");
    }
    Some(out)
}

const HEX: &[u8; 16] = b"0123456789abcdef";

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

fn is_token(s: &str, max: usize) -> bool {
    s.len() <= max
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

fn check_code(code: &str) -> Result<(), EdgeCookieError> {
    if code.is_empty() || !is_token(code, MAX_CODE_LEN) {
        return Err(EdgeCookieError::BadCode);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(byte: u8) -> EdgeCookieKey {
        EdgeCookieKey::new(&DeploymentKey::from_bytes([byte; 32]), PASSWORD_PURPOSE)
    }

    #[test]
    fn a_signed_cookie_verifies_for_its_code_until_it_expires() {
        let k = key(1);
        let c = k.sign("aZ3kQ9x", "ok", 1_000).unwrap();
        assert!(c.starts_with("aZ3kQ9x.1000.ok."), "{c}");
        assert_eq!(
            k.verify(&c, "aZ3kQ9x", 999),
            Ok(Verified {
                value: "ok",
                expires: 1_000
            })
        );
        assert_eq!(
            k.verify(&c, "aZ3kQ9x", 1_000),
            Err(EdgeCookieError::Expired { expires: 1_000 })
        );
        let empty = k.sign("my-alias_1", "", 5).unwrap();
        assert_eq!(k.verify(&empty, "my-alias_1", 4).unwrap().value, "");
    }

    #[test]
    fn tampered_other_code_other_key_and_other_purpose_are_refused() {
        let k = key(1);
        let c = k.sign("aZ3kQ9x", "b", 1_000).unwrap();
        assert_eq!(
            k.verify(&c, "other", 1),
            Err(EdgeCookieError::OtherCode),
            "another link's code"
        );
        assert_eq!(
            key(2).verify(&c, "aZ3kQ9x", 1),
            Err(EdgeCookieError::BadSignature),
            "another deployment key"
        );
        let variant = EdgeCookieKey::new(&DeploymentKey::from_bytes([1; 32]), "variant");
        assert_eq!(
            variant.verify(&c, "aZ3kQ9x", 1),
            Err(EdgeCookieError::BadSignature),
            "another purpose"
        );
        // Every single-part change breaks the MAC.
        let later = c.replacen(".1000.", ".9000.", 1);
        assert_eq!(
            k.verify(&later, "aZ3kQ9x", 1),
            Err(EdgeCookieError::BadSignature)
        );
        let value = c.replacen(".b.", ".a.", 1);
        assert_eq!(
            k.verify(&value, "aZ3kQ9x", 1),
            Err(EdgeCookieError::BadSignature)
        );
        let renamed = c.replacen("aZ3kQ9x", "aZ3kQ9y", 1);
        assert_eq!(
            k.verify(&renamed, "aZ3kQ9y", 1),
            Err(EdgeCookieError::BadSignature)
        );
        let mut flipped = c.clone();
        let last = flipped.pop().unwrap();
        flipped.push(if last == '0' { '1' } else { '0' });
        assert_eq!(
            k.verify(&flipped, "aZ3kQ9x", 1),
            Err(EdgeCookieError::BadSignature)
        );
    }

    #[test]
    fn malformed_cookies_are_refused_without_panicking() {
        let k = key(1);
        let good = k.sign("abc", "v", 10).unwrap();
        let mac = good.rsplit('.').next().unwrap();
        for bad in [
            "",
            "abc",
            "abc.10.v",
            &format!("abc.10.v.{}", &mac[1..]),
            &format!("abc.1x.v.{mac}"),
            &format!("abc..v.{mac}"),
            &format!("abc.10.v;.{mac}"),
            &format!(".10.v.{mac}"),
            &format!("abc.99999999999999999999999.v.{mac}"),
            &format!("abc.10.v.{}", "g".repeat(64)),
            &format!("abc.10.v.{}é", &mac[..62]),
        ] {
            assert_eq!(
                k.verify(bad, "abc", 1),
                Err(EdgeCookieError::Malformed),
                "{bad}"
            );
        }
    }

    #[test]
    fn sign_refuses_values_and_codes_outside_the_token_set() {
        let k = key(1);
        assert_eq!(k.sign("abc", "a.b", 1), Err(EdgeCookieError::BadValue));
        assert_eq!(
            k.sign("abc", &"v".repeat(MAX_VALUE_LEN + 1), 1),
            Err(EdgeCookieError::BadValue)
        );
        assert_eq!(k.sign("", "v", 1), Err(EdgeCookieError::BadCode));
        assert_eq!(k.sign("a/b", "v", 1), Err(EdgeCookieError::BadCode));
    }

    #[test]
    fn cookies_are_found_in_a_header_and_set_with_safe_attributes() {
        assert_eq!(
            find_cookie("a=1; slpw=x.1.y.z;b=2", "slpw"),
            Some("x.1.y.z")
        );
        assert_eq!(find_cookie("a=1; b=2", "slpw"), None);
        assert_eq!(find_cookie("xslpw=1", "slpw"), None);
        assert_eq!(
            set_cookie_header("slpw", "v", "/abc", 3600, false).unwrap(),
            "slpw=v; Path=/abc; Max-Age=3600; HttpOnly; SameSite=Lax"
        );
        assert!(set_cookie_header("slpw", "v", "/abc", 1, true)
            .unwrap()
            .ends_with("; Secure"));
        assert_eq!(set_cookie_header("slpw", "v", "/a;b", 1, false), None);
        assert_eq!(set_cookie_header("slpw", "v", "abc", 1, false), None);
        assert_eq!(set_cookie_header("slpw", "v\r\n", "/a", 1, false), None);
        assert_eq!(set_cookie_header("s=p", "v", "/a", 1, false), None);
    }
}
