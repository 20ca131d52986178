//! Target URL rules: what a short link may point at.
//!
//! The raw text is checked byte by byte *before* parsing, because URL parsers
//! quietly strip tabs, newlines and surrounding spaces; a target that passes
//! here can never put CR or LF into a `Location` header.

use serde::{Deserialize, Serialize};

/// Default length limit of a target URL, in bytes.
pub const DEFAULT_MAX_TARGET_LEN: usize = 2048;

/// What targets a deployment accepts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TargetRules {
    /// Longest accepted target, in bytes, after normalisation.
    pub max_len: usize,
    /// Schemes accepted (lower case). `http` and `https` by default.
    pub schemes: Vec<String>,
    /// When not empty, only these hosts and their subdomains are accepted.
    pub allow_hosts: Vec<String>,
    /// These hosts and their subdomains are refused.
    pub block_hosts: Vec<String>,
}

impl Default for TargetRules {
    fn default() -> Self {
        Self {
            max_len: DEFAULT_MAX_TARGET_LEN,
            schemes: vec!["http".into(), "https".into()],
            allow_hosts: Vec::new(),
            block_hosts: Vec::new(),
        }
    }
}

/// Why a target URL was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    #[error("url is empty")]
    Empty,
    #[error("url is {len} bytes, longer than the limit of {max}")]
    TooLong { len: usize, max: usize },
    #[error("url contains a control character (0x{byte:02x}) at byte {pos}")]
    ControlChar { pos: usize, byte: u8 },
    #[error("url contains whitespace at byte {pos}")]
    Whitespace { pos: usize },
    #[error("url is not an absolute URL: {0}")]
    NotAbsolute(String),
    #[error("url scheme \"{0}\" is not allowed (allowed: {1})")]
    Scheme(String, String),
    #[error("url has no host")]
    NoHost,
    #[error("url must not carry a user name or password")]
    Credentials,
    #[error("url host \"{0}\" is not in the list of allowed target domains")]
    HostNotAllowed(String),
    #[error("url host \"{0}\" is in the list of blocked target domains")]
    HostBlocked(String),
}

/// Validates and normalises a target URL: returns the text to store, with the
/// host lower-cased and IDN hosts in punycode.
pub fn validate_target(raw: &str, rules: &TargetRules) -> Result<String, TargetError> {
    if raw.is_empty() {
        return Err(TargetError::Empty);
    }
    if raw.len() > rules.max_len {
        return Err(TargetError::TooLong {
            len: raw.len(),
            max: rules.max_len,
        });
    }
    for (pos, ch) in raw.char_indices() {
        if ch.is_control() {
            return Err(TargetError::ControlChar {
                pos,
                byte: raw.as_bytes()[pos],
            });
        }
        if ch.is_whitespace() {
            return Err(TargetError::Whitespace { pos });
        }
    }
    let url = url::Url::parse(raw).map_err(|e| TargetError::NotAbsolute(e.to_string()))?;
    if !rules.schemes.iter().any(|s| s == url.scheme()) {
        return Err(TargetError::Scheme(
            url.scheme().to_string(),
            rules.schemes.join(", "),
        ));
    }
    let host = match url.host_str() {
        Some(h) if !h.is_empty() => h.to_ascii_lowercase(),
        _ => return Err(TargetError::NoHost),
    };
    if !url.username().is_empty() || url.password().is_some() {
        return Err(TargetError::Credentials);
    }
    if !rules.allow_hosts.is_empty() && !rules.allow_hosts.iter().any(|d| host_matches(&host, d)) {
        return Err(TargetError::HostNotAllowed(host));
    }
    if rules.block_hosts.iter().any(|d| host_matches(&host, d)) {
        return Err(TargetError::HostBlocked(host));
    }
    let normalized = String::from(url);
    if normalized.len() > rules.max_len {
        return Err(TargetError::TooLong {
            len: normalized.len(),
            max: rules.max_len,
        });
    }
    debug_assert!(is_header_safe(normalized.as_bytes()));
    Ok(normalized)
}

/// True when `host` is `domain` or a subdomain of it.
fn host_matches(host: &str, domain: &str) -> bool {
    let domain = domain.trim_start_matches('.');
    host.eq_ignore_ascii_case(domain)
        || (host.len() > domain.len()
            && host.as_bytes()[host.len() - domain.len() - 1] == b'.'
            && host[host.len() - domain.len()..].eq_ignore_ascii_case(domain))
}

/// True when `value` can go into a response header as it is: visible ASCII
/// only. The edge checks every target with this before sending `Location`,
/// whatever the daemon stored.
pub fn is_header_safe(value: &[u8]) -> bool {
    !value.is_empty() && value.iter().all(|&b| (0x21..0x7f).contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(raw: &str) -> String {
        validate_target(raw, &TargetRules::default()).unwrap()
    }

    fn err(raw: &str) -> TargetError {
        validate_target(raw, &TargetRules::default()).unwrap_err()
    }

    #[test]
    fn accepts_and_normalises() {
        assert_eq!(
            ok("https://Example.COM/a?b=c#d"),
            "https://example.com/a?b=c#d"
        );
        assert_eq!(ok("http://example.com"), "http://example.com/");
        assert_eq!(
            ok("https://bücher.example/x"),
            "https://xn--bcher-kva.example/x"
        );
        assert_eq!(ok("https://example.com/ä"), "https://example.com/%C3%A4");
        assert!(is_header_safe(
            ok("https://bücher.example/ä?q=ü").as_bytes()
        ));
    }

    #[test]
    fn refusals_name_the_problem() {
        assert_eq!(err(""), TargetError::Empty);
        assert_eq!(
            err("https://example.com/\r\nSet-Cookie: x"),
            TargetError::ControlChar {
                pos: 20,
                byte: b'\r'
            }
        );
        assert_eq!(
            err("https://example.com/\t"),
            TargetError::ControlChar { pos: 20, byte: 9 }
        );
        assert_eq!(
            err(" https://example.com/"),
            TargetError::Whitespace { pos: 0 }
        );
        assert_eq!(
            err("https://exa mple.com/"),
            TargetError::Whitespace { pos: 11 }
        );
        assert_eq!(
            err("https://example.com/\u{a0}"),
            TargetError::Whitespace { pos: 20 }
        );
        assert!(matches!(err("/relative"), TargetError::NotAbsolute(_)));
        assert!(matches!(err("example.com"), TargetError::NotAbsolute(_)));
        assert_eq!(
            err("javascript:alert(1)"),
            TargetError::Scheme("javascript".into(), "http, https".into())
        );
        assert!(matches!(err("ftp://example.com/"), TargetError::Scheme(..)));
        assert!(matches!(err("https://"), TargetError::NotAbsolute(_)));
        let mailto = TargetRules {
            schemes: vec!["mailto".into()],
            ..TargetRules::default()
        };
        assert_eq!(
            validate_target("mailto:a@example.com", &mailto),
            Err(TargetError::NoHost)
        );
        assert_eq!(
            err("https://user:pw@example.com/"),
            TargetError::Credentials
        );
        let long = format!("https://example.com/{}", "a".repeat(2048));
        assert_eq!(
            err(&long),
            TargetError::TooLong {
                len: long.len(),
                max: 2048
            }
        );
        assert!(err("https://x.com/\u{7f}").to_string().contains("0x7f"));
    }

    #[test]
    fn allow_and_block_lists_match_subdomains() {
        let rules = TargetRules {
            allow_hosts: vec!["example.com".into()],
            block_hosts: vec!["bad.example.com".into()],
            ..TargetRules::default()
        };
        assert!(validate_target("https://example.com/", &rules).is_ok());
        assert!(validate_target("https://www.example.com/", &rules).is_ok());
        assert_eq!(
            validate_target("https://notexample.com/", &rules),
            Err(TargetError::HostNotAllowed("notexample.com".into()))
        );
        assert_eq!(
            validate_target("https://x.bad.example.com/", &rules),
            Err(TargetError::HostBlocked("x.bad.example.com".into()))
        );
    }

    #[test]
    fn length_limit_is_configurable() {
        let rules = TargetRules {
            max_len: 30,
            ..TargetRules::default()
        };
        assert!(validate_target("https://example.com/abc", &rules).is_ok());
        assert!(matches!(
            validate_target("https://example.com/abcdefghijklmnop", &rules),
            Err(TargetError::TooLong { max: 30, .. })
        ));
    }

    #[test]
    fn header_safety() {
        assert!(is_header_safe(b"https://example.com/"));
        assert!(!is_header_safe(b"https://example.com/\r\n"));
        assert!(!is_header_safe(b"https://example.com/ x"));
        assert!(!is_header_safe(b"https://example.com/\xc3\xa4"));
        assert!(!is_header_safe(b""));
    }
}
