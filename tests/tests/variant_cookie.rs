//! A returning visitor keeps their A/B variant: the first visit's redirect
//! sets a signed cookie scoped to the link's path
//! (`shortlink_variant_cookie_ttl`), and later visits that show it get the
//! same variant, from the zone and from the daemon's answer alike, checked
//! at the edge with no I/O. A tampered cookie, another link's, or one for
//! a variant whose URL changed gets a fresh pick; country and device
//! targets still win; `shortlink_variant_cookie_ttl 0` turns it off.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use serde_json::json;
use shortlink_e2e::{eventually, Response, Stack};

const IPHONE: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) Mobile/15E148";
const DESKTOP: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) Chrome/120.0";

const VARIANTS: [&str; 3] = [
    "https://example.com/a",
    "https://example.com/b",
    "https://example.com/c",
];

fn location(r: &Response) -> String {
    assert_eq!(r.status, 302, "{}", r.body_text());
    r.header("Location").unwrap_or("").to_string()
}

/// The `name=value` part of the response's variant cookie.
fn cookie_of(r: &Response) -> Option<String> {
    let set = r.header("Set-Cookie")?;
    assert!(set.starts_with("shortlink_v="), "{set}");
    Some(set.split(';').next().unwrap().to_string())
}

/// Distinct targets of `n` visits with `cookie` (or none).
fn targets(s: &Stack, code: &str, cookie: Option<&str>, n: usize) -> HashSet<String> {
    let mut headers = vec![("User-Agent", DESKTOP)];
    if let Some(c) = cookie {
        headers.push(("Cookie", c));
    }
    (0..n).map(|_| location(&s.get(code, &headers))).collect()
}

fn patch(s: &Stack, code: &str, body: serde_json::Value) {
    let r = s
        .daemon
        .api("PATCH", &format!("/api/v1/links/{code}"), Some(&body));
    assert_eq!(r.status, 200, "{}", r.body_text());
}

/// The first desktop visit with `cookie` that `reached` says the edit just
/// made has reached (within 2 s).
fn after_edit(
    s: &Stack,
    code: &str,
    cookie: &str,
    reached: impl Fn(&Response) -> bool,
) -> Response {
    let mut last = None;
    let ok = eventually(Duration::from_secs(2), || {
        let r = s.get(code, &[("User-Agent", DESKTOP), ("Cookie", cookie)]);
        let done = reached(&r);
        last = Some(r);
        done
    });
    let r = last.unwrap();
    assert!(ok, "the edit never reached the edge: {}", location(&r));
    r
}

#[test]
fn a_returning_visitor_keeps_their_variant() {
    let mut s = Stack::start_edited("variant-cookie", 2, "2s", |http| {
        http.replace(
            "        location / {\n            shortlink on;\n",
            "        location / {\n            shortlink on;\n            shortlink_variant_cookie_ttl 1h;\n",
        )
    });
    let variants: Vec<_> = VARIANTS
        .iter()
        .map(|u| json!({"url": u, "weight": 1}))
        .collect();
    let code = s.daemon.create(json!({
        "url": "https://example.com/main",
        "targets": {"ios": "https://example.com/ios"},
        "variants": variants,
    }));
    let other = s.daemon.create(json!({
        "url": "https://example.com/other",
        "variants": [{"url": "https://example.com/o1", "weight": 1}, {"url": "https://example.com/o2", "weight": 1}],
    }));

    // The first visit picks one and says so in a cookie on the link's path.
    let first = s.get(&code, &[("User-Agent", DESKTOP)]);
    let kept = location(&first);
    assert!(VARIANTS.contains(&kept.as_str()), "{kept}");
    let set = first
        .header("Set-Cookie")
        .expect("a variant cookie")
        .to_string();
    for attr in [
        &format!("shortlink_v={code}.") as &str,
        &format!("Path=/{code}"),
        "Max-Age=3600",
        "HttpOnly",
        "SameSite=Lax",
    ] {
        assert!(set.contains(attr), "{attr} missing: {set}");
    }
    assert_eq!(first.header("Cache-Control"), Some("private"));
    let cookie = cookie_of(&first).unwrap();

    // With it: the same variant every time, from the zone, and no new cookie.
    for _ in 0..40 {
        let r = s.get(
            &code,
            &[
                ("User-Agent", DESKTOP),
                ("Cookie", &format!("x=1; {cookie}")),
            ],
        );
        assert_eq!(location(&r), kept);
        assert_eq!(r.header("Set-Cookie"), None);
    }
    // Without it, or with a forged or foreign one: fresh picks (three
    // equal weights: 60 visits all alike is a 1 in 10^28 chance).
    assert!(targets(&s, &code, None, 60).len() > 1);
    let mut forged = cookie.clone();
    let last = forged.pop().unwrap();
    forged.push(if last == '0' { '1' } else { '0' });
    assert!(targets(&s, &code, Some(&forged), 60).len() > 1);
    let r = s.get(&code, &[("User-Agent", DESKTOP), ("Cookie", &forged)]);
    assert!(cookie_of(&r).is_some(), "a fresh pick sets a fresh cookie");
    let foreign = cookie_of(&s.get(&other, &[("User-Agent", DESKTOP)])).unwrap();
    assert!(targets(&s, &code, Some(&foreign), 60).len() > 1);
    // A device target still wins.
    let r = s.get(&code, &[("User-Agent", IPHONE), ("Cookie", &cookie)]);
    assert_eq!(location(&r), "https://example.com/ios");

    // Another variant edited: the entry is dropped, the daemon answers the
    // next visit, and the cookie still keeps its variant.
    let others: Vec<_> = VARIANTS
        .iter()
        .map(|u| {
            let url = if *u == kept {
                u.to_string()
            } else {
                format!("{u}-new")
            };
            json!({"url": url, "weight": 1})
        })
        .collect();
    patch(&s, &code, json!({"variants": others}));
    // The edit reaches the workers as an event, a moment after the API's
    // answer: the first visit after it is a miss.
    let r = after_edit(&s, &code, &cookie, |r| r.header("X-Cache") == Some("MISS"));
    assert_eq!(location(&r), kept);
    assert_eq!(r.header("Set-Cookie"), None);

    // Its own URL changed: the cookie no longer keeps it.
    let renamed: Vec<_> = VARIANTS
        .iter()
        .map(|u| json!({"url": format!("{u}-v2"), "weight": 1}))
        .collect();
    patch(&s, &code, json!({"variants": renamed}));
    let r = after_edit(&s, &code, &cookie, |r| location(r).ends_with("-v2"));
    assert!(cookie_of(&r).is_some());
    assert!(targets(&s, &code, Some(&cookie), 60).len() > 1);

    // Turned off: no cookie, and one shown is not read.
    let fresh = cookie_of(&s.get(&code, &[("User-Agent", DESKTOP)])).unwrap();
    s.http = s.http.replace(
        "shortlink_variant_cookie_ttl 1h;",
        "shortlink_variant_cookie_ttl 0;",
    );
    s.reload();
    // Old workers may still take a request or two after the reload (each
    // of them until it has its signal): wait for 20 answers in a row from
    // the new ones. Asked without a cookie, an old worker picks and sets
    // one; a new one sets none. (With the cookie an old worker keeps the
    // variant and sets none either, so that cannot tell them apart.)
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut in_a_row = 0;
    while in_a_row < 20 {
        let old = s
            .get(&code, &[("User-Agent", DESKTOP)])
            .header("Set-Cookie")
            .is_some();
        in_a_row = if old { 0 } else { in_a_row + 1 };
        assert!(Instant::now() < deadline, "the reload did not apply");
        if old {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    assert!(targets(&s, &code, Some(&fresh), 60).len() > 1);
    for _ in 0..10 {
        assert_eq!(
            s.get(&code, &[("User-Agent", DESKTOP)])
                .header("Set-Cookie"),
            None
        );
    }
    s.nginx.assert_clean_log();
}
