//! Who clicked: device class and bot flag from `User-Agent`, host from
//! `Referer`. Runs per redirect inside nginx, so no allocation.

use std::sync::LazyLock;

use memchr::memmem::Finder;
use serde::{Deserialize, Serialize};

/// Device class of a click, also used to pick a device-specific target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[repr(u8)]
pub enum DeviceClass {
    /// No `User-Agent` or one we cannot place.
    Other = 0,
    Desktop = 1,
    /// A phone or tablet that is neither iOS nor Android.
    Mobile = 2,
    Ios = 3,
    Android = 4,
}

impl DeviceClass {
    /// Stable lower-case name, used in stats and the API.
    pub fn as_str(self) -> &'static str {
        match self {
            DeviceClass::Other => "other",
            DeviceClass::Desktop => "desktop",
            DeviceClass::Mobile => "mobile",
            DeviceClass::Ios => "ios",
            DeviceClass::Android => "android",
        }
    }

    /// Inverse of `as u8`; unknown values map to `Other`.
    pub fn from_u8(v: u8) -> Self {
        match v {
            1 => DeviceClass::Desktop,
            2 => DeviceClass::Mobile,
            3 => DeviceClass::Ios,
            4 => DeviceClass::Android,
            _ => DeviceClass::Other,
        }
    }

    /// Inverse of [`DeviceClass::as_str`].
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "other" => DeviceClass::Other,
            "desktop" => DeviceClass::Desktop,
            "mobile" => DeviceClass::Mobile,
            "ios" => DeviceClass::Ios,
            "android" => DeviceClass::Android,
            _ => return None,
        })
    }
}

const BOT_MARKERS: &[&str] = &[
    "bot",
    "crawl",
    "spider",
    "slurp",
    "facebookexternalhit",
    "embedly",
    "preview",
    "headlesschrome",
    "lighthouse",
];
const IOS_MARKERS: &[&str] = &["iphone", "ipad", "ipod"];
const MOBILE_MARKERS: &[&str] = &["mobile", "windows phone", "opera mini"];
const DESKTOP_MARKERS: &[&str] = &["windows", "macintosh", "x11", "cros"];

/// Only this much of a `User-Agent` is looked at.
const UA_PREFIX: usize = 512;

/// SIMD substring searchers, built once per process.
struct Markers {
    bot: Vec<Finder<'static>>,
    ios: Vec<Finder<'static>>,
    android: Finder<'static>,
    mobile: Vec<Finder<'static>>,
    desktop: Vec<Finder<'static>>,
}

static MARKERS: LazyLock<Markers> = LazyLock::new(|| {
    let all = |list: &[&'static str]| list.iter().map(|m| Finder::new(m.as_bytes())).collect();
    Markers {
        bot: all(BOT_MARKERS),
        ios: all(IOS_MARKERS),
        android: Finder::new(b"android"),
        mobile: all(MOBILE_MARKERS),
        desktop: all(DESKTOP_MARKERS),
    }
});

/// Device class and bot flag of a `User-Agent` value (`None`: no header).
/// Case-insensitive; looks at the first 512 bytes; no allocation.
pub fn classify(user_agent: Option<&[u8]>) -> (DeviceClass, bool) {
    let ua = match user_agent {
        Some(ua) if !ua.is_empty() => ua,
        _ => return (DeviceClass::Other, false),
    };
    let mut buf = [0u8; UA_PREFIX];
    let len = ua.len().min(UA_PREFIX);
    for (dst, src) in buf.iter_mut().zip(&ua[..len]) {
        *dst = src.to_ascii_lowercase();
    }
    let ua = &buf[..len];
    let m = &*MARKERS;
    let any = |list: &[Finder<'static>]| list.iter().any(|f| f.find(ua).is_some());
    let bot = any(&m.bot);
    let class = if any(&m.ios) {
        DeviceClass::Ios
    } else if m.android.find(ua).is_some() {
        DeviceClass::Android
    } else if any(&m.mobile) {
        DeviceClass::Mobile
    } else if any(&m.desktop) {
        DeviceClass::Desktop
    } else {
        DeviceClass::Other
    };
    (class, bot)
}

/// The host part of a `Referer` value, without port or user info; `None`
/// when there is none or it is not a URL with a host.
pub fn referrer_host(referer: &[u8]) -> Option<&[u8]> {
    let start = find(referer, b"://")? + 3;
    let rest = &referer[start..];
    let end = rest
        .iter()
        .position(|&b| b == b'/' || b == b'?' || b == b'#')
        .unwrap_or(rest.len());
    let mut authority = &rest[..end];
    if let Some(at) = authority.iter().rposition(|&b| b == b'@') {
        authority = &authority[at + 1..];
    }
    let host = if authority.first() == Some(&b'[') {
        let close = authority.iter().position(|&b| b == b']')?;
        &authority[..=close]
    } else {
        let colon = authority
            .iter()
            .position(|&b| b == b':')
            .unwrap_or(authority.len());
        &authority[..colon]
    };
    let valid = !host.is_empty()
        && host.len() <= 253
        && host.iter().all(|b| {
            b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b'[' | b']' | b':')
        });
    valid.then_some(host)
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(hay, needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_common_agents() {
        let cases: &[(&str, DeviceClass, bool)] = &[
            (
                "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) Mobile/15E148",
                DeviceClass::Ios,
                false,
            ),
            (
                "Mozilla/5.0 (Linux; Android 14; Pixel 8) Mobile Safari/537.36",
                DeviceClass::Android,
                false,
            ),
            (
                "Mozilla/5.0 (Windows NT 10.0; Win64; x64) Chrome/120.0",
                DeviceClass::Desktop,
                false,
            ),
            (
                "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_0) Safari/605.1.15",
                DeviceClass::Desktop,
                false,
            ),
            (
                "Opera/9.80 (J2ME/MIDP; Opera Mini/9.80) Presto",
                DeviceClass::Mobile,
                false,
            ),
            (
                "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
                DeviceClass::Other,
                true,
            ),
            ("facebookexternalhit/1.1", DeviceClass::Other, true),
            ("curl/8.5.0", DeviceClass::Other, false),
        ];
        for (ua, class, bot) in cases {
            assert_eq!(classify(Some(ua.as_bytes())), (*class, *bot), "{ua}");
        }
        assert_eq!(classify(None), (DeviceClass::Other, false));
        assert_eq!(classify(Some(b"")), (DeviceClass::Other, false));
    }

    #[test]
    fn names_round_trip() {
        for v in 0..=4u8 {
            let c = DeviceClass::from_u8(v);
            assert_eq!(c as u8, v);
            assert_eq!(DeviceClass::parse(c.as_str()), Some(c));
        }
        assert_eq!(DeviceClass::from_u8(200), DeviceClass::Other);
    }

    #[test]
    fn referrer_hosts() {
        let host =
            |s: &str| referrer_host(s.as_bytes()).map(|h| String::from_utf8_lossy(h).into_owned());
        assert_eq!(
            host("https://news.example.com/a/b?c"),
            Some("news.example.com".into())
        );
        assert_eq!(
            host("http://user:pw@example.com:8080/"),
            Some("example.com".into())
        );
        assert_eq!(host("https://[::1]:443/x"), Some("[::1]".into()));
        assert_eq!(
            host("android-app://com.google.android.gm"),
            Some("com.google.android.gm".into())
        );
        assert_eq!(host("no scheme here"), None);
        assert_eq!(host("https:///path"), None);
        assert_eq!(host("https://bad host/"), None);
    }
}
