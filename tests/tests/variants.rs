//! A/B variants at the edge: each visit picks one by weight (from the
//! daemon's answer and from the zone alike), the main target is never
//! served, device targets win, and the answer is `Cache-Control: private`.

use std::collections::HashMap;

use serde_json::json;
use shortlink_e2e::Stack;

const IPHONE: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) Mobile/15E148";
const DESKTOP: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) Chrome/120.0";

#[test]
fn visits_split_by_weight_and_device_targets_win() {
    let s = Stack::start("variants", 2);
    let code = s.daemon.create(json!({
        "url": "https://example.com/main",
        "targets": {"ios": "https://example.com/ios"},
        "variants": [
            {"url": "https://example.com/a", "weight": 1},
            {"url": "https://example.com/b", "weight": 3},
        ],
    }));
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut caches: HashMap<String, usize> = HashMap::new();
    const VISITS: usize = 400;
    for _ in 0..VISITS {
        let r = s.get(&code, &[("User-Agent", DESKTOP)]);
        assert_eq!(r.status, 302, "{}", r.body_text());
        assert_eq!(r.header("Cache-Control"), Some("private"));
        *seen
            .entry(r.header("Location").unwrap_or("").to_string())
            .or_default() += 1;
        *caches
            .entry(r.header("X-Cache").unwrap_or("").to_string())
            .or_default() += 1;
    }
    let a = seen.get("https://example.com/a").copied().unwrap_or(0);
    let b = seen.get("https://example.com/b").copied().unwrap_or(0);
    assert_eq!(a + b, VISITS, "only the variants are served: {seen:?}");
    // Expected 100 and 300; the standard deviation is about 9.
    assert!((60..=140).contains(&a), "{seen:?}");
    assert!(
        caches.get("HIT").copied().unwrap_or(0) >= VISITS - 2,
        "{caches:?}"
    );

    // The first visit (a miss the daemon answers) picks among the variants too.
    let fresh = s.daemon.create(json!({
        "url": "https://example.com/main2",
        "variants": [{"url": "https://example.com/only", "weight": 5}],
    }));
    let r = s.get(&fresh, &[("User-Agent", DESKTOP)]);
    assert_eq!(
        (r.header("Location"), r.header("X-Cache")),
        (Some("https://example.com/only"), Some("MISS"))
    );

    // A device target wins over the variants.
    for _ in 0..20 {
        let r = s.get(&code, &[("User-Agent", IPHONE)]);
        assert_eq!(r.header("Location"), Some("https://example.com/ios"));
    }
    s.nginx.assert_clean_log();
}
