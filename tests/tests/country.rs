//! `shortlink_country`: nginx's built-in `geo` module maps loopback source
//! addresses to countries, and clicks are counted per country (an unmapped
//! address and a value that is no country code count as `--`).

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use shortlink_e2e::{http_from, Stack};

fn stack(name: &str) -> Stack {
    Stack::start_edited(name, 1, "300ms", |http| {
        http.replacen(
            "    server {",
            "    geo $visitor_country {\n        default \"\";\n        127.0.0.2 DE;\n        127.0.0.3 fr;\n        127.0.0.4 XX;\n    }\n    shortlink_country $visitor_country;\n    server {",
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
