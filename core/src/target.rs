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
    #[error("url host \"{0}\" is not a host: {1}")]
    BadHost(String, &'static str),
    #[error("host list entry \"{entry}\" is not a host name or address: {reason}")]
    BadHostEntry { entry: String, reason: String },
}

/// Validates and normalises a target URL: returns the text to store, with the
/// host lower-cased and IDN hosts in punycode. Compiles `rules` first; a
/// caller that validates many targets compiles once with
/// [`TargetRules::compile`] and uses [`TargetPolicy::validate`].
pub fn validate_target(raw: &str, rules: &TargetRules) -> Result<String, TargetError> {
    rules.compile()?.validate(raw)
}

impl TargetRules {
    /// Normalises the host lists once, so every later match compares normal
    /// forms; an entry that is not a host names itself in the error.
    pub fn compile(&self) -> Result<TargetPolicy, TargetError> {
        Ok(TargetPolicy {
            max_len: self.max_len,
            schemes: self.schemes.clone(),
            allow: HostSet::parse(&self.allow_hosts)?,
            block: HostSet::parse(&self.block_hosts)?,
        })
    }
}

/// [`TargetRules`] with the host lists in normal form: what validation runs on.
#[derive(Debug, Clone)]
pub struct TargetPolicy {
    max_len: usize,
    schemes: Vec<String>,
    allow: HostSet,
    block: HostSet,
}

impl Default for TargetPolicy {
    /// The policy of [`TargetRules::default`] (no host lists, nothing that
    /// can fail to compile).
    fn default() -> Self {
        let rules = TargetRules::default();
        TargetPolicy {
            max_len: rules.max_len,
            schemes: rules.schemes,
            allow: HostSet::default(),
            block: HostSet::default(),
        }
    }
}

/// A target that passed [`TargetPolicy::check`]: its normal form, parsed,
/// and its host, for callers that look at either without parsing the URL
/// again.
#[derive(Debug, Clone)]
pub struct CheckedTarget {
    /// The URL as normalised; `url.as_str()` is the stored form.
    pub url: url::Url,
    /// The host in normal form.
    pub host: NormalHost,
}

impl CheckedTarget {
    /// The stored form of the URL.
    pub fn into_string(self) -> String {
        String::from(self.url)
    }
}

impl TargetPolicy {
    /// Validates and normalises a target URL (see [`validate_target`]).
    pub fn validate(&self, raw: &str) -> Result<String, TargetError> {
        self.check(raw).map(CheckedTarget::into_string)
    }

    /// [`TargetPolicy::validate`], keeping the parsed URL and its host.
    pub fn check(&self, raw: &str) -> Result<CheckedTarget, TargetError> {
        if raw.is_empty() {
            return Err(TargetError::Empty);
        }
        if raw.len() > self.max_len {
            return Err(TargetError::TooLong {
                len: raw.len(),
                max: self.max_len,
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
        if !self.schemes.iter().any(|s| s == url.scheme()) {
            return Err(TargetError::Scheme(
                url.scheme().to_string(),
                self.schemes.join(", "),
            ));
        }
        let host = match url.host() {
            Some(host) => NormalHost::from_url_host(host).map_err(|why| {
                TargetError::BadHost(url.host_str().unwrap_or_default().into(), why)
            })?,
            None => return Err(TargetError::NoHost),
        };
        // The host lists first, so `user@evil.com` is refused naming its
        // host, like every other form of a listed host.
        if !self.allow.is_empty() && !self.allow.matches(&host) {
            return Err(TargetError::HostNotAllowed(host.name));
        }
        if self.block.matches(&host) {
            return Err(TargetError::HostBlocked(host.name));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(TargetError::Credentials);
        }
        let normalized = url.as_str();
        if normalized.len() > self.max_len {
            return Err(TargetError::TooLong {
                len: normalized.len(),
                max: self.max_len,
            });
        }
        debug_assert!(is_header_safe(normalized.as_bytes()));
        Ok(CheckedTarget { url, host })
    }

    /// True when the host of `url` is in the block list (or outside a
    /// non-empty allow list): for re-checking stored links against a list.
    pub fn refuses_host(&self, url: &str) -> bool {
        let Ok(url) = url::Url::parse(url) else {
            return false;
        };
        let Some(Ok(host)) = url.host().map(NormalHost::from_url_host) else {
            return false;
        };
        (!self.allow.is_empty() && !self.allow.matches(&host)) || self.block.matches(&host)
    }
}

/// A host in the one form every comparison uses: what the URL parser makes
/// of it (lower case, IDN in punycode, percent-escapes decoded, IPv4 in
/// dotted decimal, IPv6 in brackets), without the trailing dot of a fully
/// qualified name, without port or user info. An IPv4-mapped IPv6 address
/// (`[::ffff:127.0.0.1]`) is the IPv4 address it carries: both reach the
/// same host, so a list of one must catch the other.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NormalHost {
    /// The normal form.
    pub name: String,
    /// Addresses match exactly; names also match their subdomains.
    pub is_domain: bool,
}

impl NormalHost {
    /// The normal form of a host the URL parser produced. The trailing dots
    /// go, and what is left is parsed again (without them "0.." reads as
    /// 0.0.0.0, "p.4.." is no host at all), so the result is a fixed point.
    fn from_url_host(host: url::Host<&str>) -> Result<NormalHost, &'static str> {
        let name = match host {
            url::Host::Domain(d) => d.trim_end_matches('.'),
            url::Host::Ipv4(a) => return Ok(NormalHost::address(a.into())),
            url::Host::Ipv6(a) => return Ok(NormalHost::address(a.into())),
        };
        if name.is_empty() {
            return Err("it has no host");
        }
        let normal = match url::Host::parse(name) {
            Ok(url::Host::Domain(d)) => NormalHost {
                name: d.to_ascii_lowercase(),
                is_domain: true,
            },
            Ok(url::Host::Ipv4(a)) => NormalHost::address(a.into()),
            Ok(url::Host::Ipv6(a)) => NormalHost::address(a.into()),
            Err(_) => return Err("it is not a valid host name"),
        };
        if normal.is_domain && (normal.name.starts_with('.') || normal.name.contains("..")) {
            return Err("it has an empty label");
        }
        if normal.is_domain
            && !normal
                .name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-_.".contains(&b))
        {
            return Err("a host name has only letters, digits, \"-\", \"_\" and dots");
        }
        Ok(normal)
    }

    /// The normal form of the host of a parsed URL; `None` when it has no
    /// host or one that is not a host name or address.
    pub fn of_url(url: &url::Url) -> Option<NormalHost> {
        url.host().map(NormalHost::from_url_host)?.ok()
    }

    fn address(ip: std::net::IpAddr) -> NormalHost {
        let name = match ip.to_canonical() {
            std::net::IpAddr::V4(a) => a.to_string(),
            std::net::IpAddr::V6(a) => format!("[{a}]"),
        };
        NormalHost {
            name,
            is_domain: false,
        }
    }

    /// Normalises a host as an operator or a header gives it: a name or an
    /// address (an IPv6 one with or without brackets), optionally with a
    /// port, a trailing dot, or a leading `*.` or `.` (all mean "this
    /// domain and its subdomains").
    pub fn parse(text: &str) -> Result<NormalHost, TargetError> {
        let bad = |reason: &str| TargetError::BadHostEntry {
            entry: text.to_string(),
            reason: reason.to_string(),
        };
        let trimmed = text.trim();
        let bare = trimmed
            .strip_prefix("*.")
            .or_else(|| trimmed.strip_prefix('.'))
            .unwrap_or(trimmed);
        if bare.is_empty() {
            return Err(bad("it is empty"));
        }
        // A bare IPv6 address (`::1`) cannot be the authority of a URL.
        if let Ok(ip) = bare.parse::<std::net::Ipv6Addr>() {
            return Ok(NormalHost::address(ip.into()));
        }
        if bare.contains('*') {
            return Err(bad("\"*\" may only open the entry, as \"*.\""));
        }
        if bare
            .bytes()
            .any(|b| b.is_ascii_control() || b"/?#@\\ ".contains(&b))
        {
            return Err(bad("only a host (and a port) may be given"));
        }
        // Parse as the authority of a URL, so a list entry normalises exactly
        // like the host of a target.
        let url = url::Url::parse(&format!("http://{bare}/")).map_err(|e| bad(&e.to_string()))?;
        let host = url.host().ok_or_else(|| bad("it has no host"))?;
        NormalHost::from_url_host(host).map_err(bad)
    }
}

/// A set of hosts in normal form; a domain entry also covers its
/// subdomains. Lookups cost one hash probe per label of the host, whatever
/// the size of the set.
#[derive(Debug, Clone, Default)]
pub struct HostSet {
    domains: std::collections::HashSet<String>,
    addresses: std::collections::HashSet<String>,
}

impl HostSet {
    /// Normalises every entry; the first bad one is the error.
    pub fn parse<S: AsRef<str>>(entries: &[S]) -> Result<HostSet, TargetError> {
        let mut set = HostSet::default();
        for entry in entries {
            set.insert(NormalHost::parse(entry.as_ref())?);
        }
        Ok(set)
    }

    /// Adds a host.
    pub fn insert(&mut self, host: NormalHost) {
        if host.is_domain {
            self.domains.insert(host.name);
        } else {
            self.addresses.insert(host.name);
        }
    }

    /// True when the set is empty.
    pub fn is_empty(&self) -> bool {
        self.domains.is_empty() && self.addresses.is_empty()
    }

    /// Entries in the set.
    pub fn len(&self) -> usize {
        self.domains.len() + self.addresses.len()
    }

    /// True when `host` is an entry or a subdomain of a domain entry.
    pub fn matches(&self, host: &NormalHost) -> bool {
        if !host.is_domain {
            return self.addresses.contains(&host.name);
        }
        let mut rest = host.name.as_str();
        loop {
            if self.domains.contains(rest) {
                return true;
            }
            match rest.find('.') {
                Some(dot) => rest = &rest[dot + 1..],
                None => return false,
            }
        }
    }

    /// True when the host of a URL matches (see [`HostSet::matches`]).
    pub fn matches_url(&self, url: &str) -> bool {
        url::Url::parse(url)
            .ok()
            .and_then(|u| u.host().map(NormalHost::from_url_host))
            .is_some_and(|h| h.is_ok_and(|h| self.matches(&h)))
    }
}

/// True when `value` can go into a response header as it is: visible ASCII
/// only. The edge checks every target with this before sending `Location`,
/// whatever the daemon stored.
pub fn is_header_safe(value: &[u8]) -> bool {
    // Every byte is looked at, with no exit at the first bad one: a loop
    // without a branch per byte compiles to vector compares, and the edge
    // checks each target it stores on every zone miss.
    let outside = value.iter().fold(0u8, |bad, &b| {
        bad | u8::from(b.wrapping_sub(0x21) >= 0x7f - 0x21)
    });
    !value.is_empty() && outside == 0
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
    fn lists_match_the_normal_form_of_the_host() {
        let rules = TargetRules {
            block_hosts: vec![
                "Evil.COM.".into(),
                "*.bücher.example".into(),
                "10.0.0.1".into(),
            ],
            ..TargetRules::default()
        };
        let policy = rules.compile().unwrap();
        for raw in [
            "https://evil.com/",
            "https://evil.com./",
            "https://a.evil.com./x",
            "https://EVIL.com:8443/",
            "https://ev%69l.com/",
            "https://evil%2Ecom/",
            "https://xn--bcher-kva.example/",
            "https://www.BÜCHER.example./",
            "http://10.0.0.1/",
            "http://0x0a.0.0.1/",
            "http://167772161/",
            "https://user@evil.com/",
            "https://user:pw@a.evil.com./",
        ] {
            assert!(
                matches!(policy.validate(raw), Err(TargetError::HostBlocked(_))),
                "{raw} passed the block list: {:?}",
                policy.validate(raw)
            );
            assert!(policy.refuses_host(raw), "{raw}");
        }
        for raw in [
            "https://notevil.com/",
            "https://evil.com.example.org/",
            "http://10.0.0.10/",
            "http://110.0.0.1/",
        ] {
            assert!(policy.validate(raw).is_ok(), "{raw}");
            assert!(!policy.refuses_host(raw), "{raw}");
        }
        let allow = TargetRules {
            allow_hosts: vec!["example.com".into()],
            ..TargetRules::default()
        }
        .compile()
        .unwrap();
        assert!(allow.validate("https://www.example.com./").is_ok());
        assert!(matches!(
            allow.validate("https://example.com.evil.org/"),
            Err(TargetError::HostNotAllowed(_))
        ));
    }

    /// One normal form for IP literals: a mapped IPv4 address is the IPv4
    /// address, an IPv6 entry matches with or without brackets.
    #[test]
    fn address_entries_match_every_form_of_the_address() {
        let policy = TargetRules {
            block_hosts: vec!["127.0.0.1".into(), "::1".into(), "[::2]".into()],
            ..TargetRules::default()
        }
        .compile()
        .unwrap();
        for raw in [
            "http://127.0.0.1/",
            "http://[::ffff:127.0.0.1]/",
            "http://[::ffff:7f00:1]:8080/x",
            "http://[0:0:0:0:0:ffff:127.0.0.1]/",
            "http://[::1]/",
            "http://[0::1]:81/",
            "http://[::2]/",
        ] {
            assert!(
                matches!(policy.validate(raw), Err(TargetError::HostBlocked(_))),
                "{raw} passed the block list: {:?}",
                policy.validate(raw)
            );
            assert!(policy.refuses_host(raw), "{raw}");
        }
        for raw in [
            "http://[::3]/",
            "http://[::ffff:127.0.0.2]/",
            "http://[64:ff9b::1]/",
        ] {
            assert!(policy.validate(raw).is_ok(), "{raw}");
        }
        assert_eq!(
            NormalHost::parse("[::ffff:10.0.0.1]").unwrap().name,
            "10.0.0.1"
        );
        assert_eq!(NormalHost::parse("::1").unwrap().name, "[::1]");
        assert!(!NormalHost::parse("::1").unwrap().is_domain);
    }

    #[test]
    fn bad_list_entries_name_themselves() {
        for entry in [
            "",
            "https://evil.com/",
            "evil.com/path",
            "a b",
            "user@evil.com",
            "*.",
            "..&",
            "a..b",
        ] {
            let rules = TargetRules {
                block_hosts: vec![entry.into()],
                ..TargetRules::default()
            };
            match rules.compile() {
                Err(TargetError::BadHostEntry { entry: e, .. }) => assert_eq!(e, entry),
                other => panic!("{entry:?}: {other:?}"),
            }
        }
        assert_eq!(
            NormalHost::parse("Evil.COM.:443").unwrap(),
            NormalHost {
                name: "evil.com".into(),
                is_domain: true
            }
        );
        assert_eq!(NormalHost::parse("[::1]").unwrap().name, "[::1]");
    }

    #[test]
    fn the_default_policy_is_the_default_rules() {
        let policy = TargetPolicy::default();
        assert_eq!(
            policy.validate("https://Example.com"),
            Ok(ok("https://example.com"))
        );
        assert!(matches!(
            policy.validate("ftp://example.com/"),
            Err(TargetError::Scheme(..))
        ));
        let host = |u: &str| NormalHost::of_url(&url::Url::parse(u).unwrap()).map(|h| h.name);
        assert_eq!(
            host("https://U@S.Example.:8443/x"),
            Some("s.example".into())
        );
        assert_eq!(host("mailto:a@b.example"), None);
    }

    /// What `check` keeps of an accepted `raw` is what parsing its stored
    /// form again gives: callers (the blocklist, the short-URL loop check)
    /// read the kept URL and host instead of parsing the stored string.
    /// False when `raw` is refused.
    fn kept_is_stored(raw: &str) -> bool {
        let Ok(t) = TargetPolicy::default().check(raw) else {
            return false;
        };
        let stored = url::Url::parse(t.url.as_str()).unwrap();
        assert_eq!(Some(&t.host), NormalHost::of_url(&stored).as_ref(), "{raw}");
        assert_eq!(t.url, stored, "{raw}");
        assert_eq!(TargetPolicy::default().validate(raw), Ok(t.into_string()));
        true
    }

    #[test]
    fn the_checked_target_is_its_stored_form() {
        for raw in [
            "https://Example.com",
            "https://a.evil.com./x",
            "https://EVIL.com:8443/",
            "https://ev%69l.com/p%2Fq?x=%41#f",
            "https://www.BÜCHER.example./",
            "http://0x0a.0.0.1/",
            "http://167772161/",
            "http://[::FFFF:10.0.0.1]/",
            "https://h1.example//aZ3k",
        ] {
            assert!(kept_is_stored(raw), "{raw} was refused");
        }
    }

    proptest::proptest! {
        #[test]
        fn any_checked_target_is_its_stored_form(
            host in "[a-zA-Z0-9.%-]{1,20}",
            path in "[a-zA-Z0-9/%._~-]{0,20}",
        ) {
            kept_is_stored(&format!("https://{host}/{path}"));
        }
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

    #[test]
    fn header_safety_of_every_byte_at_every_place() {
        let base = vec![b'a'; 70];
        for byte in 0..=u8::MAX {
            let visible = (0x21..0x7f).contains(&byte);
            for at in [0, 1, 15, 16, 31, 32, 33, 63, 64, 69] {
                let mut value = base.clone();
                value[at] = byte;
                assert_eq!(is_header_safe(&value), visible, "byte {byte:#04x} at {at}");
            }
            assert_eq!(is_header_safe(&[byte]), visible, "byte {byte:#04x} alone");
        }
    }
}
