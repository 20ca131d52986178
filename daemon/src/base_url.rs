//! The public base of short URLs: `X-Shortlink-Base` from nginx when it is
//! valid, else the configured default. Domain rotation never touches the
//! daemon.

use std::collections::HashMap;
use std::sync::{LazyLock, RwLock};

use axum::http::HeaderMap;

/// The header nginx sets, e.g. `proxy_set_header X-Shortlink-Base https://$host;`.
pub const HEADER: &str = "x-shortlink-base";

/// Checks a base URL: http(s), a host, no query or fragment. Returns it
/// without a trailing slash.
pub fn parse_base(raw: &str) -> Result<String, String> {
    let raw = raw.trim();
    if raw.len() > 512 || raw.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(format!("{raw:?} is not a valid base URL"));
    }
    let url = url::Url::parse(raw).map_err(|e| format!("{raw:?} is not a URL: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!("{raw:?} must use http or https"));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(format!("{raw:?} has no host"));
    }
    if url.query().is_some() || url.fragment().is_some() || !url.username().is_empty() {
        return Err(format!("{raw:?} must not have a query, fragment or user"));
    }
    Ok(url.as_str().trim_end_matches('/').to_string())
}

/// Header values kept by [`parsed`]: nginx sends one per served domain,
/// so a few are enough; values past this many are parsed every time.
const MAX_REMEMBERED: usize = 64;

/// `parse_base` of a header value, remembered: nginx sends the same few
/// values on every request, and parsing a URL (IDNA included) was a
/// visible share of a create's CPU. Only values that parse are kept (a
/// client sending junk fills nothing), and once the table is full a new
/// value costs its parse, never the write lock.
fn parsed(raw: &str) -> Option<String> {
    static SEEN: LazyLock<RwLock<HashMap<String, String>>> = LazyLock::new(Default::default);
    let full = {
        let seen = SEEN.read().unwrap_or_else(|e| e.into_inner());
        if let Some(known) = seen.get(raw) {
            return Some(known.clone());
        }
        seen.len() >= MAX_REMEMBERED
    };
    let base = parse_base(raw).ok()?;
    if !full {
        let mut seen = SEEN.write().unwrap_or_else(|e| e.into_inner());
        if seen.len() < MAX_REMEMBERED {
            seen.insert(raw.to_string(), base.clone());
        }
    }
    Some(base)
}

/// The base for this request.
pub fn for_request(headers: &HeaderMap, default: &str) -> String {
    headers
        .get(HEADER)
        .and_then(|v| v.to_str().ok())
        .and_then(parsed)
        .unwrap_or_else(|| default.trim_end_matches('/').to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bases() {
        assert_eq!(
            parse_base("https://s.example.com/").unwrap(),
            "https://s.example.com"
        );
        assert_eq!(
            parse_base("https://example.com/go").unwrap(),
            "https://example.com/go"
        );
        assert!(parse_base("ftp://x").is_err());
        assert!(parse_base("https://x/?a=1").is_err());
        assert!(parse_base("javascript:alert(1)").is_err());
        let mut h = HeaderMap::new();
        assert_eq!(for_request(&h, "http://d/"), "http://d");
        h.insert(HEADER, "https://s.example.net".parse().unwrap());
        assert_eq!(for_request(&h, "http://d"), "https://s.example.net");
        h.insert(HEADER, "bogus".parse().unwrap());
        assert_eq!(for_request(&h, "http://d"), "http://d");
    }

    #[test]
    fn remembered_values_answer_as_parsed_ones() {
        let ask = |value: &str| {
            let mut h = HeaderMap::new();
            h.insert(HEADER, value.parse().unwrap());
            for_request(&h, "http://default")
        };
        // Beyond what is remembered too: the answers stay the same.
        for round in 0..2 {
            for i in 0..MAX_REMEMBERED + 8 {
                let host = format!("https://s{i}.example.com/");
                assert_eq!(ask(&host), format!("https://s{i}.example.com"), "{round}");
                assert_eq!(ask(&format!("ftp://s{i}.example.com")), "http://default");
            }
        }
    }
}
