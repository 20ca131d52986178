//! `shortlink_country`: nginx's built-in `geo` module maps loopback source
//! addresses to countries, clicks are counted per country (an unmapped
//! address and a value that is no country code count as `--`), and a link's
//! country targets are chosen at the edge before its device targets.

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use shortlink_e2e::{http_from, Response, Stack};

const IPHONE: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) Mobile/15E148";
const DESKTOP: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) Chrome/120.0";
const NL: [u8; 4] = [127, 0, 0, 5];
const DE: [u8; 4] = [127, 0, 0, 2];
const FR: [u8; 4] = [127, 0, 0, 3];
const UNMAPPED: [u8; 4] = [127, 0, 0, 1];

fn stack(name: &str) -> Stack {
    Stack::start_edited(name, 1, "300ms", |http| {
        http.replacen(
            "    server {",
            "    geo $visitor_country {\n        default \"\";\n        127.0.0.2 DE;\n        127.0.0.3 fr;\n        127.0.0.4 XX;\n        127.0.0.5 NL;\n    }\n    shortlink_country $visitor_country;\n    server {",
            1,
        )
    })
}

#[test]
fn clicks_are_counted_per_country_from_the_geo_variable() {
    let s = stack("country-stats");
    let code = s.daemon.create(json!({"url": "https://example.com/c"}));
    let port = s.nginx.port;
    for (ip, n) in [
        ([127, 0, 0, 2], 3),
        ([127, 0, 0, 3], 2),
        ([127, 0, 0, 4], 1),
        ([127, 0, 0, 1], 1),
    ] {
        for _ in 0..n {
            let r = http_from(
                Ipv4Addr::from(ip),
                port,
                b"GET",
                format!("/{code}").as_bytes(),
                &[],
                b"",
            );
            assert_eq!(r.status, 302, "{}", r.body_text());
        }
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    let stats = loop {
        let r = s
            .daemon
            .api("GET", &format!("/api/v1/links/{code}/stats"), None);
        let v: Value = serde_json::from_slice(&r.body).unwrap();
        if v["total"] == 7 || Instant::now() > deadline {
            break v;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(stats["total"], 7, "{stats}");
    assert_eq!(
        stats["countries"],
        json!([
            {"country": "DE", "clicks": 3},
            {"country": "--", "clicks": 2},
            {"country": "FR", "clicks": 2},
        ])
    );
    s.nginx.assert_clean_log();
}

fn visit(port: u16, from: [u8; 4], code: &str, agent: &str) -> Response {
    http_from(
        Ipv4Addr::from(from),
        port,
        b"GET",
        format!("/{code}").as_bytes(),
        &[("User-Agent", agent)],
        b"",
    )
}

/// (status, Location, X-Cache) of a visit.
fn answer(port: u16, from: [u8; 4], code: &str, agent: &str) -> (u16, String, String) {
    let r = visit(port, from, code, agent);
    let header = |n: &str| r.header(n).unwrap_or("").to_string();
    (r.status, header("Location"), header("X-Cache"))
}

#[test]
fn country_targets_are_chosen_before_device_targets_at_the_edge() {
    let s = stack("country-targets");
    let port = s.nginx.port;
    let link = json!({
        "url": "https://example.com/main",
        "targets": {"ios": "https://example.com/ios"},
        "country_targets": {"NL": "https://example.nl/", "de": "https://example.de/"},
    });
    let nl = "https://example.nl/";
    let ios = "https://example.com/ios";
    let main = "https://example.com/main";
    // Each visitor's first request is a miss answered by the daemon; the
    // rest come from the zone (several visitors within a second: a
    // per-worker front-cache slot would hand the first visitor's answer to
    // the next).
    let code = s.daemon.create(link.clone());
    let first = answer(port, NL, &code, IPHONE);
    assert_eq!(first, (302, nl.into(), "MISS".into()));
    for _ in 0..3 {
        for (from, agent, target) in [
            (NL, IPHONE, nl),
            (DE, DESKTOP, "https://example.de/"),
            (UNMAPPED, IPHONE, ios),
            (FR, IPHONE, ios),
            (FR, DESKTOP, main),
            (UNMAPPED, DESKTOP, main),
        ] {
            let got = answer(port, from, &code, agent);
            assert_eq!(got, (302, target.into(), "HIT".into()), "{from:?} {agent}");
        }
    }
    // The daemon's answer (a miss) picks by the same rule for every
    // visitor, and the zone's entry then agrees.
    for (i, (from, agent)) in [
        (UNMAPPED, IPHONE),
        (FR, DESKTOP),
        (DE, IPHONE),
        (NL, DESKTOP),
    ]
    .into_iter()
    .enumerate()
    {
        let main = format!("https://example.com/main?n={i}");
        let mut fresh = link.clone();
        fresh["url"] = json!(main);
        let code = s.daemon.create(fresh);
        let target = match from {
            NL => nl,
            DE => "https://example.de/",
            _ if agent == IPHONE => ios,
            _ => &main,
        };
        let first = answer(port, from, &code, agent);
        assert_eq!(
            first,
            (302, target.into(), "MISS".into()),
            "{from:?} {agent}"
        );
        let again = answer(port, from, &code, agent);
        assert_eq!(
            again,
            (302, target.into(), "HIT".into()),
            "{from:?} {agent}"
        );
    }
    // A link with country targets alone (no device targets): still one
    // answer per visitor, never a worker's front-cache slot.
    let only = s.daemon.create(json!({
        "url": "https://example.com/only",
        "country_targets": {"NL": "https://example.nl/only"},
    }));
    assert_eq!(
        answer(port, UNMAPPED, &only, DESKTOP).1,
        "https://example.com/only"
    );
    for _ in 0..3 {
        for (from, target) in [
            (NL, "https://example.nl/only"),
            (UNMAPPED, "https://example.com/only"),
            (DE, "https://example.com/only"),
        ] {
            let got = answer(port, from, &only, DESKTOP);
            assert_eq!(got, (302, target.into(), "HIT".into()), "{from:?}");
        }
    }
    let r = visit(port, NL, &only, DESKTOP);
    assert_eq!(r.header("Cache-Control"), Some("private"));
    assert_eq!(r.header("Vary"), None);

    let r = visit(port, NL, &code, IPHONE);
    assert_eq!(r.header("Cache-Control"), Some("private"));
    assert_eq!(r.header("Vary"), Some("User-Agent"));

    // An edit of the country targets reaches the edge.
    let r = s.daemon.api(
        "PATCH",
        &format!("/api/v1/links/{code}"),
        Some(&json!({"country_targets": {"NL": "https://example.nl/new"}})),
    );
    assert_eq!(r.status, 200, "{}", r.body_text());
    let deadline = Instant::now() + Duration::from_secs(5);
    while answer(port, NL, &code, IPHONE).1 != "https://example.nl/new" {
        assert!(Instant::now() < deadline, "the edit never reached the edge");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        answer(port, DE, &code, IPHONE).1,
        ios,
        "DE's target is gone"
    );
    assert_eq!(answer(port, NL, &code, DESKTOP).1, "https://example.nl/new");
    s.nginx.assert_clean_log();
}
