//! What a visitor's client is told and what it counts for: caching headers
//! (`shortlink_cache_control` only on a link's own redirect, `Vary:
//! User-Agent` when the target depends on it) and preview fetchers and
//! HTTP libraries that never use up a link's visits.

use std::time::Duration;

use serde_json::json;
use shortlink_e2e::{eventually, Stack};

const IPHONE: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) Mobile/15E148";
const DESKTOP: &str =
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 Chrome/124.0 Safari/537.36";
const WHATSAPP: &str = "WhatsApp/2.23.20.0 A";
const CURL: &str = "curl/8.5.0";

fn json_of(r: &shortlink_e2e::Response) -> serde_json::Value {
    serde_json::from_slice(&r.body).unwrap_or_else(|_| panic!("not JSON: {}", r.body_text()))
}

#[test]
fn only_a_links_own_redirect_is_cacheable_and_device_choices_vary() {
    let mut s = Stack::start("caching-headers", 1);
    let plain = s.daemon.create(json!({"url": "https://example.com/plain"}));
    let by_device = s.daemon.create(json!({
        "url": "https://example.com/desktop",
        "targets": {"ios": "https://apps.apple.com/app"}
    }));
    let never_asked = s.daemon.create(json!({"url": "https://example.com/later"}));

    // The link's own redirect: the configured Cache-Control, no Vary.
    for _ in 0..2 {
        let r = s.get(&format!("fb/{plain}"), &[("User-Agent", DESKTOP)]);
        assert_eq!(r.status, 301);
        assert_eq!(r.header("Cache-Control"), Some("private, max-age=90"));
        assert_eq!(r.header("Vary"), None, "nothing depends on the agent");
    }
    // Chosen by User-Agent: caches must key on it, from the daemon's answer
    // and from the zone alike.
    for (ua, target) in [
        (DESKTOP, "https://example.com/desktop"),
        (IPHONE, "https://apps.apple.com/app"),
        (DESKTOP, "https://example.com/desktop"),
    ] {
        let r = s.get(&format!("fb/{by_device}"), &[("User-Agent", ua)]);
        assert_eq!((r.status, r.header("Location")), (301, Some(target)));
        assert_eq!(r.header("Vary"), Some("User-Agent"), "{ua}");
        assert_eq!(r.header("Cache-Control"), Some("private, max-age=90"));
    }
    // The fallback for an unknown code is no answer to keep.
    let unknown = s.codec.encode(3_000_000_000);
    let r = s.get(&format!("fb/{unknown}"), &[]);
    assert_eq!(
        (r.status, r.header("Location")),
        (302, Some("https://example.com/fallback"))
    );
    assert_eq!(
        r.header("Cache-Control"),
        None,
        "fallback for an unknown code"
    );

    // Nor is the fallback for a valid link the daemon cannot answer for:
    // the browser must ask again once it is back.
    s.daemon.kill();
    let r = s.get(&format!("fb/{never_asked}"), &[]);
    assert_eq!(
        (r.status, r.header("Location")),
        (302, Some("https://example.com/fallback"))
    );
    assert_eq!(
        r.header("Cache-Control"),
        None,
        "fallback while the daemon is down"
    );
    let r = s.get(&never_asked, &[]);
    assert_eq!(r.status, 503);
    assert_eq!(r.header("Cache-Control"), None);
    // Cached links still answer as themselves, cacheable.
    let r = s.get(&format!("fb/{plain}"), &[]);
    assert_eq!(r.header("Cache-Control"), Some("private, max-age=90"));
    s.daemon.restart();
    assert!(eventually(Duration::from_secs(5), || s
        .get(&format!("fb/{never_asked}"), &[])
        .status
        == 301));
    let r = s.get(&format!("fb/{never_asked}"), &[]);
    assert_eq!(r.header("Cache-Control"), Some("private, max-age=90"));
    s.nginx.assert_clean_log();
}

#[test]
fn a_preview_fetch_and_curl_leave_a_one_visit_link_for_the_person() {
    let s = Stack::start("preview-bots", 1);
    let code = s
        .daemon
        .create(json!({"url": "https://example.com/once", "max_visits": 1}));
    for ua in [WHATSAPP, CURL] {
        let r = s.get(&code, &[("User-Agent", ua)]);
        assert_eq!(r.status, 302, "{ua}");
    }
    // Both reached the daemon, as bots, and were folded in.
    let stats = |s: &Stack| {
        json_of(
            &s.daemon
                .api("GET", &format!("/api/v1/links/{code}/stats"), None),
        )
    };
    assert!(
        eventually(Duration::from_secs(10), || stats(&s)["bots"] == 2),
        "{}",
        stats(&s)
    );
    std::thread::sleep(Duration::from_secs(3));
    let link = json_of(&s.daemon.api("GET", &format!("/api/v1/links/{code}"), None));
    assert_eq!(link["state"], "active", "{link}");
    // The person gets through, and uses the link up.
    let r = s.get(&code, &[("User-Agent", IPHONE)]);
    assert_eq!(
        (r.status, r.header("Location")),
        (302, Some("https://example.com/once"))
    );
    assert!(
        eventually(Duration::from_secs(10), || s
            .get(&code, &[("User-Agent", DESKTOP)])
            .status
            == 410),
        "the visit never used the link up"
    );
    // The edge refuses at once (its lease is spent); the daemon counts
    // the link used up once the click arrives.
    let state = || json_of(&s.daemon.api("GET", &format!("/api/v1/links/{code}"), None));
    assert!(
        eventually(Duration::from_secs(10), || state()["state"] == "exhausted"),
        "{}",
        state()
    );
    s.nginx.assert_clean_log();
}
