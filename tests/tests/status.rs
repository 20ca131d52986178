//! `shortlink_status`: the edge's figures from nginx itself, checked
//! against the requests sent, in both formats, through a daemon outage.

use serde_json::json;
use shortlink_core::Codec;
use shortlink_e2e::{Figures, Stack};

fn stack(name: &str) -> Stack {
    Stack::start(name, 2)
}

#[test]
fn figures_match_the_requests_sent_in_both_formats() {
    let s = stack("status-figures");
    s.until_figures("both workers' links up", |m| {
        m.gauge("shortlink_daemon_links_up") == 2
    });
    let codes: Vec<String> = (0..3)
        .map(|i| {
            s.daemon
                .create(json!({"url": format!("https://example.com/{i}")}))
        })
        .collect();
    for code in &codes {
        for _ in 0..5 {
            assert_eq!(s.get(code, &[]).status, 302);
        }
    }
    let unknown = s.codec.encode(Codec::first_id_of_length(9) + 7);
    for want in [404, 404, 404] {
        assert_eq!(s.get(unknown.as_str(), &[]).status, want);
    }
    for i in 0..5 {
        assert_eq!(s.get(&format!("zz{i}.-x"), &[]).status, 404);
    }
    let r = s
        .nginx
        .request(b"POST", format!("/{}", codes[0]).as_bytes(), &[], b"");
    assert_eq!(r.status, 405);

    let r = s.nginx.get(b"/status");
    assert_eq!(
        r.header("Content-Type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    assert_eq!(r.header("Cache-Control"), Some("no-store"));
    let m = Figures::parse(&r.body_text());
    // 3 links: one miss each, then hits; the unknown code: one miss, then
    // negative answers; invalid codes never reach the zone or the daemon.
    assert_eq!(m.requests("MISS"), 4, "{m:?}");
    assert_eq!(m.requests("HIT"), 12, "{m:?}");
    assert_eq!(m.requests("NEGATIVE"), 2, "{m:?}");
    assert_eq!(m.requests("INVALID"), 5, "{m:?}");
    assert_eq!(m.requests("BYPASS"), 1, "{m:?}");
    assert_eq!(m.requests("EXPIRED"), 0, "{m:?}");
    assert_eq!(m.gauge("shortlink_zone_entries"), 4, "{m:?}");
    let (used, free) = (
        m.gauge("shortlink_zone_bytes_used"),
        m.gauge("shortlink_zone_bytes_free"),
    );
    assert!(used > 0 && free > 0, "{m:?}");
    let zone = 4 << 20;
    assert!(used + free <= zone && used + free > zone * 9 / 10, "{m:?}");
    assert_eq!(m.gauge("shortlink_zone_evictions_total"), 0);
    assert_eq!(m.gauge("shortlink_lookups_in_flight"), 0);
    assert_eq!(m.gauge("shortlink_requests_waiting"), 0);
    assert_eq!(m.gauge("shortlink_daemon_links_down"), 0);

    // Every redirect's click reaches the daemon; nothing stays pending.
    s.until_figures("15 clicks delivered", |m| {
        m.gauge("shortlink_clicks_delivered_total") == 15
            && m.gauge("shortlink_clicks_pending") == 0
    });
    assert_eq!(
        codes.iter().map(|c| s.daemon.clicks(c)).sum::<u64>(),
        15,
        "the daemon counted what the edge says it delivered"
    );

    // The same figures as JSON (the status request itself is not counted).
    let r = s.nginx.get(b"/status?format=json");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("Content-Type"), Some("application/json"));
    let v: serde_json::Value = serde_json::from_str(&r.body_text()).unwrap();
    let z = &v["zones"][0];
    assert_eq!(z["name"], "links");
    assert_eq!(z["requests"]["HIT"], 12);
    assert_eq!(z["requests"]["MISS"], 4);
    assert_eq!(z["entries"], 4);
    assert_eq!(z["links_up"], 2);
    assert_eq!(z["clicks_delivered"], 15);

    let r = s.nginx.request(b"POST", b"/status", &[], b"");
    assert_eq!(r.status, 405);
    s.nginx.assert_clean_log();
}

#[test]
fn link_state_and_reconnects_follow_a_daemon_outage() {
    let mut s = stack("status-outage");
    let code = s.daemon.create(json!({"url": "https://example.com/o"}));
    assert_eq!(s.get(&code, &[]).status, 302);
    s.until_figures("both links up", |m| {
        m.gauge("shortlink_daemon_links_up") == 2
    });
    s.daemon.kill();
    s.until_figures("both links down", |m| {
        m.gauge("shortlink_daemon_links_down") == 2 && m.gauge("shortlink_daemon_links_up") == 0
    });
    // Cached: still a hit while the daemon is down, and its click waits.
    assert_eq!(s.get(&code, &[]).status, 302);
    let m = s.until_figures("the click pending", |m| {
        m.gauge("shortlink_clicks_pending") >= 1
    });
    assert_eq!(m.requests("HIT"), 1);
    s.daemon.restart();
    s.until_figures(
        "both links back, two reconnects, the click delivered",
        |m| {
            m.gauge("shortlink_daemon_links_up") == 2
                && m.gauge("shortlink_daemon_reconnects_total") == 2
                && m.gauge("shortlink_clicks_pending") == 0
                && m.gauge("shortlink_clicks_delivered_total") == 2
        },
    );
    // A reload keeps the counters (they live in the zone) and the new
    // workers take rows of their own.
    s.reload();
    assert_eq!(s.get(&code, &[]).status, 302);
    s.until_figures("new workers up, counts kept", |m| {
        m.gauge("shortlink_daemon_links_up") == 2 && m.requests("HIT") == 2
    });
}
