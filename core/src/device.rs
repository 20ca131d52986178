//! Who clicked: device class and bot flag from `User-Agent`, host from
//! `Referer`. Runs per redirect inside nginx, so no allocation.

use std::sync::LazyLock;

use aho_corasick::AhoCorasick;
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

    /// The device-specific targets a visitor of this class may be sent to,
    /// most specific first: iOS and Android fall back to `Mobile`, the others
    /// have only their own. When none of them is set, the link's main target
    /// answers. The one home of this rule: the daemon's answers and the nginx
    /// zone's entries both pick through [`DeviceClass::pick_target`].
    pub const fn target_order(self) -> &'static [DeviceClass] {
        match self {
            DeviceClass::Ios => &[DeviceClass::Ios, DeviceClass::Mobile],
            DeviceClass::Android => &[DeviceClass::Android, DeviceClass::Mobile],
            DeviceClass::Mobile => &[DeviceClass::Mobile],
            DeviceClass::Desktop => &[DeviceClass::Desktop],
            DeviceClass::Other => &[],
        }
    }

    /// Whose target a visitor of this class gets, given which classes have
    /// one (`has`): the first of [`DeviceClass::target_order`] that has one,
    /// else `Other`, which stands for the link's main target.
    #[inline]
    pub fn pick_target(self, has: impl Fn(DeviceClass) -> bool) -> DeviceClass {
        let order = self.target_order();
        order
            .iter()
            .copied()
            .find(|&class| has(class))
            .unwrap_or(DeviceClass::Other)
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

/// Crawlers, link-preview fetchers (chat apps unfurling a pasted link) and
/// HTTP libraries: none of them is a person following a link, so none may
/// consume a visit of a `max_visits` link. Matched anywhere, any case.
const BOT_MARKERS: &[&str] = &[
    // crawlers and monitors
    "bot",
    "crawl",
    "spider",
    "slurp",
    "archiver",
    "headlesschrome",
    "lighthouse",
    "pingdom",
    "uptime",
    "monitor",
    "feedfetcher",
    "mediapartners-google",
    "google-inspectiontool",
    "google-read-aloud",
    // link previews in chat and social apps
    "facebookexternalhit",
    "facebot",
    "whatsapp",
    "slack",
    "skypeuripreview",
    "embedly",
    "iframely",
    "preview",
    "vkshare",
    "pinterest",
    "tumblr",
    "snap url preview",
    "outbrain",
    "nuzzel",
    // HTTP libraries and command-line tools
    "curl/",
    "wget/",
    "python-requests",
    "python-urllib",
    "python-httpx",
    "aiohttp",
    "go-http-client",
    "okhttp",
    "java/",
    "apache-httpclient",
    "libwww-perl",
    "lwp::",
    "node-fetch",
    "undici",
    "axios/",
    "guzzlehttp",
    "ruby",
    "faraday",
    "httpie",
    "postmanruntime",
    "insomnia",
    "dart:io",
    "reqwest",
    "winhttp",
    "windowspowershell",
    "libcurl",
    "scrapy",
];
/// Windows Phone and KaiOS feature-phone browsers name Android and iPhone in their
/// `User-Agent` to get mobile pages, but are neither.
const OTHER_MOBILE_MARKERS: &[&str] = &["windows phone", "iemobile", "kaios"];
const IOS_MARKERS: &[&str] = &["iphone", "ipad", "ipod"];
const ANDROID_MARKERS: &[&str] = &["android"];
const MOBILE_MARKERS: &[&str] = &[
    "mobile",
    "opera mini",
    "midp",
    "j2me",
    "nokia",
    "symbian",
    "series40",
    "blackberry",
    "bb10",
    "tablet",
    "kindle",
    "silk/",
];
const DESKTOP_MARKERS: &[&str] = &["windows", "macintosh", "x11", "cros"];
/// Apps that fetch a pasted link with their own HTTP stack, naming only
/// themselves first (`Viber/20.9.0.8 CFNetwork/1410.0.3 Darwin/22.6.0`):
/// a preview, not a person. Matched at the start only, any case, so the
/// app's in-app browser (a browser's `Mozilla/5.0 …` with the app's name
/// further on) still counts its visitors.
const APP_FETCH_PREFIXES: &[&[u8]] = &[b"viber/"];

/// Only this much of a `User-Agent` is looked at.
const UA_PREFIX: usize = 512;

/// What a marker says about the agent; the index of its list.
#[derive(Clone, Copy)]
#[repr(u8)]
enum Kind {
    Bot,
    OtherMobile,
    Ios,
    Android,
    Mobile,
    Desktop,
}

const KINDS: [(Kind, &[&str]); 6] = [
    (Kind::Bot, BOT_MARKERS),
    (Kind::OtherMobile, OTHER_MOBILE_MARKERS),
    (Kind::Ios, IOS_MARKERS),
    (Kind::Android, ANDROID_MARKERS),
    (Kind::Mobile, MOBILE_MARKERS),
    (Kind::Desktop, DESKTOP_MARKERS),
];

/// One automaton over every marker (one pass over the header, any case),
/// and the kind of each pattern, built once per process.
struct Markers {
    automaton: AhoCorasick,
    kinds: Vec<Kind>,
}

static MARKERS: LazyLock<Markers> = LazyLock::new(|| {
    let mut patterns = Vec::new();
    let mut kinds = Vec::new();
    for (kind, list) in KINDS {
        for marker in list {
            patterns.push(*marker);
            kinds.push(kind);
        }
    }
    let automaton = AhoCorasick::builder()
        .ascii_case_insensitive(true)
        .build(&patterns)
        .unwrap_or_else(|e| panic!("the built-in User-Agent markers form an automaton: {e}"));
    Markers { automaton, kinds }
});

/// Device class and bot flag of a `User-Agent` value (`None`: no header).
/// Case-insensitive; looks at the first 512 bytes; no allocation. No
/// header, or an empty one, is a program: every browser sends one.
pub fn classify(user_agent: Option<&[u8]>) -> (DeviceClass, bool) {
    let ua = match user_agent {
        Some(ua) if !ua.is_empty() => &ua[..ua.len().min(UA_PREFIX)],
        _ => return (DeviceClass::Other, true),
    };
    let m = &*MARKERS;
    let mut seen = 0u8;
    for found in m.automaton.find_overlapping_iter(ua) {
        seen |= 1 << m.kinds[found.pattern().as_usize()] as u8;
    }
    let has = |kind: Kind| seen & (1 << kind as u8) != 0;
    let class = if has(Kind::OtherMobile) {
        DeviceClass::Mobile
    } else if has(Kind::Ios) {
        DeviceClass::Ios
    } else if has(Kind::Android) {
        DeviceClass::Android
    } else if has(Kind::Mobile) {
        DeviceClass::Mobile
    } else if has(Kind::Desktop) {
        DeviceClass::Desktop
    } else {
        DeviceClass::Other
    };
    let app_fetch = APP_FETCH_PREFIXES
        .iter()
        .any(|p| ua.len() >= p.len() && ua[..p.len()].eq_ignore_ascii_case(p));
    (class, has(Kind::Bot) || app_fetch)
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

    /// Real `User-Agent` strings, as sent by browsers, preview fetchers,
    /// crawlers, libraries and phones.
    const AGENTS: &[(&str, DeviceClass, bool)] = &[
        // browsers: people
        ("Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1", DeviceClass::Ios, false),
        ("Mozilla/5.0 (iPad; CPU OS 16_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/16.6 Mobile/15E148 Safari/604.1", DeviceClass::Ios, false),
        ("Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/119.0.6045.109 Mobile/15E148 Safari/604.1", DeviceClass::Ios, false),
        ("Mozilla/5.0 (iPhone; CPU iPhone OS 16_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 [FBAN/FBIOS;FBAV/420.0.0.33.107]", DeviceClass::Ios, false),
        ("Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36", DeviceClass::Android, false),
        ("Mozilla/5.0 (Linux; Android 13; SM-S911B) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/23.0 Chrome/115.0.0.0 Mobile Safari/537.36", DeviceClass::Android, false),
        ("Mozilla/5.0 (Android 14; Mobile; rv:121.0) Gecko/121.0 Firefox/121.0", DeviceClass::Android, false),
        ("Mozilla/5.0 (Linux; Android 12; SM-X700) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/119.0.0.0 Safari/537.36", DeviceClass::Android, false),
        ("Mozilla/5.0 (Linux; Android 10; K; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/118.0.0.0 Mobile Safari/537.36 Instagram 309.1.0.41.113 Android", DeviceClass::Android, false),
        ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36", DeviceClass::Desktop, false),
        ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36 Edg/120.0.0.0", DeviceClass::Desktop, false),
        ("Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:121.0) Gecko/20100101 Firefox/121.0", DeviceClass::Desktop, false),
        ("Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Safari/605.1.15", DeviceClass::Desktop, false),
        ("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36", DeviceClass::Desktop, false),
        ("Mozilla/5.0 (X11; Ubuntu; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0", DeviceClass::Desktop, false),
        ("Mozilla/5.0 (X11; CrOS x86_64 14541.0.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36", DeviceClass::Desktop, false),
        // feature phones and Windows Phone: mobile, not iOS or Android
        ("Opera/9.80 (J2ME/MIDP; Opera Mini/9.80 (S60; SymbOS; Opera Mobi/23.348; U; en) Presto/2.5.25 Version/10.54", DeviceClass::Mobile, false),
        ("Nokia6300/2.0 (05.00) Profile/MIDP-2.0 Configuration/CLDC-1.1", DeviceClass::Mobile, false),
        ("NokiaC3-00/5.0 (08.63) Profile/MIDP-2.1 Configuration/CLDC-1.1 Mozilla/5.0 AppleWebKit/420+ (KHTML, like Gecko) Safari/420+", DeviceClass::Mobile, false),
        ("Mozilla/5.0 (Series40; Nokia501/11.1.1/java_runtime_version=Nokia_Asha_1_1_1; Profile/MIDP-2.1 Configuration/CLDC-1.1) Gecko/20100401 S40OviBrowser/3.1.1.0.27", DeviceClass::Mobile, false),
        ("Mozilla/5.0 (Mobile; Windows Phone 8.1; Android 4.0; ARM; Trident/7.0; Touch; rv:11.0; IEMobile/11.0; NOKIA; Lumia 635) like iPhone OS 7_0_3 Mac OS X AppleWebKit/537 (KHTML, like Gecko) Mobile Safari/537", DeviceClass::Mobile, false),
        ("Mozilla/5.0 (Windows Phone 10.0; Android 6.0.1; Microsoft; Lumia 950) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/52.0.2743.116 Mobile Safari/537.36 Edge/15.14977", DeviceClass::Mobile, false),
        ("Mozilla/5.0 (Mobile; LYF/F300B/LYF-F300B-001-01-15-130718-i;Android; rv:48.0) Gecko/48.0 Firefox/48.0 KAIOS/2.5", DeviceClass::Mobile, false),
        ("Mozilla/5.0 (BB10; Touch) AppleWebKit/537.10+ (KHTML, like Gecko) Version/10.0.9.2372 Mobile Safari/537.10+", DeviceClass::Mobile, false),
        // link-preview fetchers: never people
        ("WhatsApp/2.23.20.0 A", DeviceClass::Other, true),
        ("WhatsApp/2.2348.50 i", DeviceClass::Other, true),
        ("facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)", DeviceClass::Other, true),
        ("Mozilla/5.0 (Macintosh; Intel Mac OS X 10_11_1) AppleWebKit/601.2.4 (KHTML, like Gecko) Version/9.0.1 Safari/601.2.4 facebookexternalhit/1.1 Facebot Twitterbot/1.0", DeviceClass::Desktop, true),
        ("TelegramBot (like TwitterBot)", DeviceClass::Other, true),
        ("Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)", DeviceClass::Other, true),
        ("Slack-ImgProxy (+https://api.slack.com/robots)", DeviceClass::Other, true),
        ("Mozilla/5.0 (compatible; Discordbot/2.0; +https://discordapp.com)", DeviceClass::Other, true),
        ("LinkedInBot/1.0 (compatible; Mozilla/5.0; Apache-HttpClient +http://www.linkedin.com)", DeviceClass::Other, true),
        ("Mozilla/5.0 (Windows NT 6.1; WOW64) SkypeUriPreview Preview/0.5 skype-url-preview@microsoft.com", DeviceClass::Desktop, true),
        ("Twitterbot/1.0", DeviceClass::Other, true),
        ("Mozilla/5.0 (compatible; Embedly/0.2; +http://support.embed.ly/)", DeviceClass::Other, true),
        ("Pinterest/0.2 (+https://www.pinterest.com/bot.html)", DeviceClass::Other, true),
        ("Mozilla/5.0 (compatible; vkShare; +http://vk.com/dev/Share)", DeviceClass::Other, true),
        ("Viber/20.9.0.8 CFNetwork/1410.0.3 Darwin/22.6.0", DeviceClass::Other, true),
        ("viber/13.5.0.1 (Android 12)", DeviceClass::Android, true),
        // an app's in-app browser: a person
        ("Mozilla/5.0 (Linux; Android 12; SM-A525F Build/SP1A.210812.016; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/119.0.6045.163 Mobile Safari/537.36 Viber/21.4.0.4", DeviceClass::Android, false),
        // crawlers
        ("Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", DeviceClass::Other, true),
        ("Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.6099.71 Mobile Safari/537.36 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", DeviceClass::Android, true),
        ("Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)", DeviceClass::Other, true),
        ("Mozilla/5.0 (compatible; YandexBot/3.0; +http://yandex.com/bots)", DeviceClass::Other, true),
        ("Mozilla/5.0 (compatible; Baiduspider/2.0; +http://www.baidu.com/search/spider.html)", DeviceClass::Other, true),
        ("Mozilla/5.0 (compatible; Yahoo! Slurp; http://help.yahoo.com/help/us/ysearch/slurp)", DeviceClass::Other, true),
        ("Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/13.1.1 Safari/605.1.15 (Applebot/0.1; +http://www.apple.com/go/applebot)", DeviceClass::Desktop, true),
        ("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/120.0.0.0 Safari/537.36", DeviceClass::Desktop, true),
        // HTTP libraries and tools
        ("curl/8.5.0", DeviceClass::Other, true),
        ("Wget/1.21.3", DeviceClass::Other, true),
        ("python-requests/2.31.0", DeviceClass::Other, true),
        ("Python-urllib/3.11", DeviceClass::Other, true),
        ("python-httpx/0.25.2", DeviceClass::Other, true),
        ("Python/3.11 aiohttp/3.9.1", DeviceClass::Other, true),
        ("Go-http-client/1.1", DeviceClass::Other, true),
        ("Go-http-client/2.0", DeviceClass::Other, true),
        ("okhttp/4.12.0", DeviceClass::Other, true),
        ("Java/17.0.9", DeviceClass::Other, true),
        ("Apache-HttpClient/4.5.14 (Java/17.0.9)", DeviceClass::Other, true),
        ("libwww-perl/6.72", DeviceClass::Other, true),
        ("node-fetch/1.0 (+https://github.com/bitinn/node-fetch)", DeviceClass::Other, true),
        ("axios/1.6.2", DeviceClass::Other, true),
        ("PostmanRuntime/7.36.0", DeviceClass::Other, true),
        ("Dart/3.2 (dart:io)", DeviceClass::Other, true),
        ("Mozilla/5.0 (Windows NT; Windows NT 10.0; en-US) WindowsPowerShell/5.1.19041.3570", DeviceClass::Desktop, true),
    ];

    #[test]
    fn classifies_real_agents() {
        assert!(AGENTS.len() >= 40);
        for (ua, class, bot) in AGENTS {
            assert_eq!(classify(Some(ua.as_bytes())), (*class, *bot), "{ua}");
        }
        assert_eq!(classify(None), (DeviceClass::Other, true), "no header");
        assert_eq!(classify(Some(b"")), (DeviceClass::Other, true), "empty");
        assert_eq!(
            classify(Some(b"SomethingNew/1.0")),
            (DeviceClass::Other, false)
        );
    }

    #[test]
    fn only_the_first_512_bytes_count() {
        let mut ua = "Mozilla/5.0 (Windows NT 10.0) ".to_string();
        ua.push_str(&"x".repeat(600));
        ua.push_str(" Googlebot/2.1");
        assert_eq!(classify(Some(ua.as_bytes())), (DeviceClass::Desktop, false));
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
    fn device_targets_fall_back_to_mobile_then_main() {
        use DeviceClass::*;
        let only = |set: &'static [DeviceClass]| move |c: DeviceClass| set.contains(&c);
        assert_eq!(Ios.pick_target(only(&[Ios, Mobile])), Ios);
        assert_eq!(Ios.pick_target(only(&[Mobile, Android])), Mobile);
        assert_eq!(Android.pick_target(only(&[Mobile])), Mobile);
        assert_eq!(Android.pick_target(only(&[Ios, Desktop])), Other);
        assert_eq!(Mobile.pick_target(only(&[Ios, Android])), Other);
        assert_eq!(Desktop.pick_target(only(&[Desktop, Mobile])), Desktop);
        assert_eq!(Desktop.pick_target(only(&[Mobile])), Other);
        assert_eq!(Other.pick_target(|_| true), Other);
        for class in [Other, Desktop, Mobile, Ios, Android] {
            assert!(!class.target_order().contains(&Other));
        }
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
