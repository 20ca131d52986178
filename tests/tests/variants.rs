//! A/B variants at the edge: each visit picks one by weight (from the
//! daemon's answer and from the zone alike), the main target is never
//! served, device targets win, and the answer is `Cache-Control: private`;
//! the stats count every visit for the variant it was sent to.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
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

#[test]
fn stats_count_each_variant_exactly_as_visitors_were_sent() {
    let s = Stack::start("variant-stats", 2);
    let urls = [
        "https://example.com/v0",
        "https://example.com/v1",
        "https://example.com/v2",
    ];
    let code = s.daemon.create(json!({
        "url": "https://example.com/main",
        "targets": {"ios": "https://example.com/ios"},
        "variants": [
            {"url": urls[0], "weight": 2},
            {"url": urls[1], "weight": 1},
            {"url": urls[2], "weight": 1},
        ],
    }));
    const VISITS: usize = 300;
    const IOS_VISITS: usize = 10;
    let mut sent: HashMap<String, i64> = HashMap::new();
    for _ in 0..VISITS {
        let r = s.get(&code, &[("User-Agent", DESKTOP)]);
        assert_eq!(r.status, 302, "{}", r.body_text());
        *sent
            .entry(r.header("Location").unwrap_or("").to_string())
            .or_default() += 1;
    }
    // Sent to the device target: counted, but for no variant.
    for _ in 0..IOS_VISITS {
        let r = s.get(&code, &[("User-Agent", IPHONE)]);
        assert_eq!(r.header("Location"), Some("https://example.com/ios"));
    }
    let tallies: Vec<i64> = urls
        .iter()
        .map(|u| sent.get(*u).copied().unwrap_or(0))
        .collect();
    assert_eq!(tallies.iter().sum::<i64>(), VISITS as i64, "{sent:?}");
    assert!(tallies.iter().all(|&n| n > 0), "{sent:?}");
    // The workers flush, the daemon acknowledges: wait for every click.
    let all = (VISITS + IOS_VISITS) as i64;
    let deadline = Instant::now() + Duration::from_secs(15);
    let stats = loop {
        let r = s
            .daemon
            .api("GET", &format!("/api/v1/links/{code}/stats"), None);
        let v: Value = serde_json::from_slice(&r.body).unwrap();
        if v["total"] == all || Instant::now() > deadline {
            break v;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(stats["total"], all, "{stats}");
    let counted: Vec<(String, i64)> = stats["variants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["url"].as_str().unwrap().to_string(),
                v["clicks"].as_i64().unwrap(),
            )
        })
        .collect();
    let want: Vec<(String, i64)> = urls
        .iter()
        .map(|u| u.to_string())
        .zip(tallies.iter().copied())
        .collect();
    assert_eq!(counted, want, "stats {stats}, sent {sent:?}");
    assert_eq!(
        stats["variants"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| (v["index"].as_i64().unwrap(), v["weight"].as_i64().unwrap()))
            .collect::<Vec<_>>(),
        [(0, 2), (1, 1), (2, 1)]
    );
    s.nginx.assert_clean_log();
}
