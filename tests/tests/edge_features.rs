//! What a link carries to the edge: aliases, its own status, device targets,
//! expiry and the disabled flag; single flight; clicks and the zone across
//! daemon restarts and nginx reloads.

use std::time::Duration;

use serde_json::json;
use shortlink_e2e::{eventually, Stack};

const IPHONE: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) Mobile/15E148";
const ANDROID: &str = "Mozilla/5.0 (Linux; Android 14; Pixel 8) Mobile Safari/537.36";
const DESKTOP: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) Chrome/120.0";

#[test]
fn aliases_resolve_and_unknown_aliases_cost_no_lookup() {
    let s = Stack::start("aliases", 2);
    let code = s
        .daemon
        .create(json!({"url": "https://example.com/summer", "alias": "summer-sale"}));
    assert_eq!(code, "summer-sale");
    // The alias reaches the zone's alias set through worker 0's event
    // stream: another worker may see it a few milliseconds after the reply.
    assert!(eventually(Duration::from_millis(500), || s
        .get("summer-sale", &[])
        .status
        == 302));
    let r = s.get("summer-sale", &[]);
    assert_eq!(r.status, 302, "{}", r.body_text());
    assert_eq!(r.header("Location"), Some("https://example.com/summer"));
    assert_eq!(r.header("X-Code"), Some("summer-sale"));
    assert!(r.header("X-Id").is_some_and(|id| id.parse::<u64>().is_ok()));
    assert_eq!(s.get("summer-sale", &[]).header("X-Cache"), Some("HIT"));

    // Once the alias set is in the zone, alias-shaped strings that are not
    // aliases are refused at the edge.
    assert!(
        eventually(Duration::from_secs(3), || s
            .get("winter-sale", &[])
            .header("X-Cache")
            == Some("INVALID")),
        "unknown alias never refused at the edge"
    );
    let before = s.daemon.metric("shortlinkd_ipc_lookups_total");
    for i in 0..30 {
        let r = s.get(&format!("no-such-alias-{i}"), &[]);
        assert_eq!((r.status, r.header("X-Cache")), (404, Some("INVALID")));
    }
    assert_eq!(s.daemon.metric("shortlinkd_ipc_lookups_total"), before);

    // An alias created after nginx started is learned without a reload.
    s.daemon
        .create(json!({"url": "https://example.com/late", "alias": "late_one"}));
    assert!(eventually(Duration::from_secs(3), || s
        .get("late_one", &[])
        .status
        == 302));
    s.nginx.assert_clean_log();
}

#[test]
fn a_cached_alias_stays_cached_when_the_daemon_comes_back() {
    let mut s = Stack::start("alias-resubscribe", 1);
    s.daemon
        .create(json!({"url": "https://example.com/kept", "alias": "kept-alias"}));
    let subscriptions = |s: &Stack| s.daemon.subscriptions().len();
    assert!(eventually(Duration::from_secs(5), || subscriptions(&s) == 1));
    assert!(eventually(Duration::from_secs(3), || s
        .get("kept-alias", &[])
        .header("X-Cache")
        == Some("HIT")));

    // The worker subscribes again, and the daemon's snapshot names every
    // alias. It may drop a "not found" held for one, not the link.
    s.daemon.restart();
    assert!(eventually(Duration::from_secs(5), || subscriptions(&s) == 2));
    // Events apply in order, and this single worker answers requests only
    // between them: once a new alias resolves, the snapshot before it has
    // been applied.
    s.daemon
        .create(json!({"url": "https://example.com/probe", "alias": "probe-alias"}));
    assert!(eventually(Duration::from_secs(3), || s
        .get("probe-alias", &[])
        .status
        == 302));
    let r = s.get("kept-alias", &[]);
    assert_eq!(
        (r.status, r.header("X-Cache")),
        (302, Some("HIT")),
        "{}",
        s.daemon.log()
    );
    s.nginx.assert_clean_log();
}

/// A zone too small for every alias leaves its alias set incomplete, so
/// alias-shaped codes are looked up and a "not found" is cached. Creating
/// that alias drops the entry at once, well before `negative_ttl` (30 s).
#[test]
fn creating_an_alias_drops_the_not_found_cached_for_it() {
    let s = Stack::start_with_zone("alias-negative", 1, "32k");
    let fillers: Vec<_> = (0..1000)
        .map(|i| json!({"url": format!("https://example.com/{i}"), "alias": format!("filler-alias-{i:04}")}))
        .collect();
    let r = s.daemon.api(
        "POST",
        "/api/v1/links/batch",
        Some(&json!({ "links": fillers })),
    );
    assert_eq!(r.status, 200, "{}", r.body_text());
    // Deleting the first fillers gives their pages back, so a "not found"
    // fits; the set stays incomplete.
    for i in 0..100 {
        let r = s.daemon.api(
            "DELETE",
            &format!("/api/v1/links/filler-alias-{i:04}"),
            None,
        );
        assert_eq!(r.status, 204, "{}", r.body_text());
    }
    assert!(
        eventually(Duration::from_secs(3), || {
            let r = s.get("ghost-alias", &[]);
            (r.status, r.header("X-Cache")) == (404, Some("MISS"))
        }),
        "the alias set never became incomplete"
    );
    let r = s.get("ghost-alias", &[]);
    assert_eq!((r.status, r.header("X-Cache")), (404, Some("NEGATIVE")));

    s.daemon
        .create(json!({"url": "https://example.com/ghost", "alias": "ghost-alias"}));
    assert!(
        eventually(Duration::from_secs(3), || s.get("ghost-alias", &[]).status
            == 302),
        "the cached \"not found\" outlived the alias's creation"
    );
}

#[test]
fn per_link_status_and_device_targets() {
    let s = Stack::start("status-devices", 1);
    let moved = s
        .daemon
        .create(json!({"url": "https://example.com/moved", "redirect": 301}));
    let r = s.get(&moved, &[]);
    assert_eq!(r.status, 301);
    assert_eq!(s.get(&moved, &[]).status, 301, "from the zone too");
    let keep = s
        .daemon
        .create(json!({"url": "https://example.com/keep", "redirect": 308}));
    assert_eq!(s.get(&keep, &[]).status, 308);
    assert_eq!(s.get(&keep, &[]).status, 308);

    let app = s.daemon.create(json!({
        "url": "https://example.com/app",
        "targets": {
            "ios": "https://apps.apple.com/app/id1",
            "android": "https://play.google.com/store/apps/details?id=x",
            "desktop": "https://example.com/desktop"
        }
    }));
    for round in ["MISS", "HIT"] {
        for (ua, expected) in [
            (IPHONE, "https://apps.apple.com/app/id1"),
            (ANDROID, "https://play.google.com/store/apps/details?id=x"),
            (DESKTOP, "https://example.com/desktop"),
            ("curl/8", "https://example.com/app"),
        ] {
            let r = s.get(&app, &[("User-Agent", ua)]);
            assert_eq!(r.status, 302);
            assert_eq!(r.header("Location"), Some(expected), "{ua} ({round})");
        }
    }
    s.nginx.assert_clean_log();
}

#[test]
fn expiry_and_disabling_take_effect_at_the_edge() {
    let s = Stack::start("expiry", 1);
    let short = s
        .daemon
        .create(json!({"url": "https://example.com/brief", "ttl": 2}));
    let r = s.get(&short, &[]);
    assert_eq!(r.status, 302);
    assert_eq!(s.get(&short, &[]).header("X-Cache"), Some("HIT"));
    // The zone still holds it, but the edge checks the link's own expiry.
    assert!(eventually(Duration::from_secs(5), || s
        .get(&short, &[])
        .status
        == 410));
    assert_eq!(s.get(&short, &[]).header("X-Cache"), Some("EXPIRED"));
    let r = s.nginx.get(format!("/fb/{short}").as_bytes());
    assert_eq!(
        (r.status, r.header("Location")),
        (302, Some("https://example.com/fallback"))
    );

    let code = s
        .daemon
        .create(json!({"url": "https://example.com/on-off"}));
    assert_eq!(s.get(&code, &[]).status, 302);
    let r = s.daemon.api(
        "PATCH",
        &format!("/api/v1/links/{code}"),
        Some(&json!({"disabled": true})),
    );
    assert_eq!(r.status, 200, "{}", r.body_text());
    assert!(eventually(Duration::from_millis(500), || s
        .get(&code, &[])
        .status
        == 410));
    let r = s.daemon.api(
        "PATCH",
        &format!("/api/v1/links/{code}"),
        Some(&json!({"disabled": false})),
    );
    assert_eq!(r.status, 200);
    assert!(eventually(Duration::from_millis(500), || s
        .get(&code, &[])
        .status
        == 302));
    // A changed target reaches the edge too.
    let r = s.daemon.api(
        "PATCH",
        &format!("/api/v1/links/{code}"),
        Some(&json!({"url": "https://example.com/new"})),
    );
    assert_eq!(r.status, 200);
    assert!(eventually(Duration::from_millis(500), || {
        s.get(&code, &[]).header("Location") == Some("https://example.com/new")
    }));
    s.nginx.assert_clean_log();
}

#[test]
fn concurrent_first_requests_share_one_lookup() {
    let s = Stack::start_with_timeout("single-flight", 1, "5s");
    let code = s
        .daemon
        .create(json!({"url": "https://example.com/flight"}));
    let before = s.daemon.metric("shortlinkd_ipc_lookups_total");
    // Freeze the daemon so every request arrives while the lookup is out.
    s.daemon.freeze();
    let n = 16;
    let port = s.nginx.port;
    let handles: Vec<_> = (0..n)
        .map(|_| {
            let path = format!("/{code}");
            std::thread::spawn(move || {
                let conn =
                    shortlink_e2e::send_request(port, b"GET", path.as_bytes(), &[], b"").unwrap();
                shortlink_e2e::read_response(conn, b"GET").unwrap()
            })
        })
        .collect();
    // Every request reached nginx and waits: one lookup out, 16 waiters
    // (the edge's own figures, so a slow machine only takes longer).
    s.until_figures("16 requests waiting on one lookup", |m| {
        m.gauge("shortlink_requests_waiting") == n as u64
    });
    let m = s.figures();
    assert_eq!(m.gauge("shortlink_lookups_in_flight"), 1, "{m:?}");
    s.daemon.thaw();
    for h in handles {
        let r = h.join().unwrap();
        assert_eq!(r.status, 302);
        assert_eq!(r.header("X-Cache"), Some("MISS"));
    }
    assert_eq!(s.figures().gauge("shortlink_requests_waiting"), 0);
    assert_eq!(
        s.daemon.metric("shortlinkd_ipc_lookups_total") - before,
        1.0
    );
    s.nginx.assert_clean_log();
}

#[test]
fn clicks_survive_a_daemon_restart_and_an_nginx_reload() {
    let mut s = Stack::start("clicks-restart", 2);
    let code = s
        .daemon
        .create(json!({"url": "https://example.com/durable"}));
    let hit = |s: &Stack, n: u64| {
        for _ in 0..n {
            assert_eq!(
                s.get(&code, &[("Referer", "https://news.example.com/x")])
                    .status,
                302
            );
        }
    };
    hit(&s, 10);
    s.daemon.restart();
    hit(&s, 10);
    s.reload();
    // Still cached across the reload: the zone is kept.
    assert_eq!(s.get(&code, &[]).header("X-Cache"), Some("HIT"));
    hit(&s, 9);
    let expected = 30;
    assert!(
        eventually(Duration::from_secs(15), || s.daemon.clicks(&code)
            >= expected),
        "clicks: {} of {expected}",
        s.daemon.clicks(&code)
    );
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(s.daemon.clicks(&code), expected);
    s.nginx.assert_clean_log();
}

#[test]
fn clicks_made_while_the_daemon_is_down_reach_it_through_the_spool() {
    let mut s = Stack::start("clicks-spool", 1);
    let code = s
        .daemon
        .create(json!({"url": "https://example.com/spooled"}));
    assert_eq!(s.get(&code, &[]).status, 302);
    s.daemon.kill();
    for _ in 0..11 {
        assert_eq!(
            s.get(&code, &[("User-Agent", IPHONE)]).status,
            302,
            "served from the zone"
        );
    }
    // The old worker exits with the daemon down: its counts go to the spool.
    s.reload();
    assert!(
        eventually(Duration::from_secs(5), || std::fs::read_dir(
            &s.daemon.spool
        )
        .unwrap()
        .any(|e| e.unwrap().file_name().to_string_lossy().ends_with(".spool"))),
        "no spool file written; nginx log:\n{}",
        s.nginx.error_log()
    );
    // Sealed with the deployment key, in a directory only the workers write.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&s.daemon.spool)
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o007, 0, "spool directory mode {mode:o}");
    for e in std::fs::read_dir(&s.daemon.spool).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_some_and(|x| x == "spool") {
            let bytes = std::fs::read(&path).unwrap();
            assert!(bytes.starts_with(shortlink_core::spool::MAGIC), "{path:?}");
        }
    }
    s.daemon.restart();
    assert!(
        eventually(Duration::from_secs(15), || s.daemon.clicks(&code) >= 12),
        "clicks: {}",
        s.daemon.clicks(&code)
    );
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(s.daemon.clicks(&code), 12);
    s.nginx.assert_clean_log();
}

#[test]
fn changes_made_while_the_link_was_down_are_not_served_stale() {
    let mut s = Stack::start("stale-after-outage", 2);
    let code = s.daemon.create(json!({"url": "https://example.com/old"}));
    assert_eq!(s.get(&code, &[]).status, 302);
    assert_eq!(s.get(&code, &[]).header("X-Cache"), Some("HIT"));
    // The daemon is down, so no invalidation can reach nginx: the operator
    // deletes the link with the CLI straight on the database.
    s.daemon.kill();
    let out = s.daemon.cli(&["link", "delete", &code]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        s.get(&code, &[]).status,
        302,
        "served from the zone while the daemon is down"
    );
    s.daemon.restart();
    assert!(
        eventually(Duration::from_secs(5), || s.get(&code, &[]).status == 404),
        "the deleted link is still served after the daemon came back"
    );
    s.nginx.assert_clean_log();
}

#[test]
fn a_full_zone_evicts_the_least_recently_used_links() {
    // The smallest zone nginx allows (8 pages) holds about a hundred links.
    let s = Stack::start_with_zone("lru", 1, "32k");
    let codes: Vec<String> = (0..400)
        .map(|i| {
            s.daemon.create(
                json!({ "url": format!("https://example.com/lru/{i:04}/{}", "x".repeat(60)) }),
            )
        })
        .collect();
    for code in &codes {
        assert_eq!(s.get(code, &[]).header("X-Cache"), Some("MISS"));
    }
    // The most recent ones are still there, the oldest were evicted.
    let recent_hits = codes[380..]
        .iter()
        .filter(|c| s.get(c, &[]).header("X-Cache") == Some("HIT"))
        .count();
    assert_eq!(
        recent_hits, 20,
        "the 20 most recent links should all be cached"
    );
    let old_hits = codes[..20]
        .iter()
        .filter(|c| s.get(c, &[]).header("X-Cache") == Some("HIT"))
        .count();
    assert_eq!(old_hits, 0, "the 20 oldest links should have been evicted");
    let log = s.nginx.error_log();
    assert!(
        !log.contains("zone is full"),
        "every insert found room by evicting:\n{log}"
    );
    s.nginx.assert_clean_log();
}

/// `shortlink_forward_query on`: the visit's query string joins the
/// target (`?` or `&`, before a `#fragment`), from the daemon's answer and
/// from the zone alike; elsewhere, or past the length a target may have,
/// the target goes alone.
#[test]
fn the_query_string_is_forwarded_where_the_location_says_so() {
    let s = Stack::start_edited("forward-query", 1, "300ms", |http| {
        http.replace(
            "        location /fb/ {",
            "        location /fwd/ {\n            shortlink on;\n            shortlink_forward_query on;\n        }\n        location /fb/ {",
        )
    });
    let plain = s.daemon.create(json!({"url": "https://example.com/a"}));
    let with_query = s.daemon.create(json!({"url": "https://example.com/b?p=1"}));
    let with_fragment = s.daemon.create(json!({"url": "https://example.com/c#top"}));
    let location = |path: &str| {
        let r = s.get(path, &[]);
        assert_eq!(r.status, 302, "{path}: {}", r.body_text());
        (
            r.header("Location").unwrap_or_default().to_string(),
            r.header("X-Cache").unwrap_or_default().to_string(),
        )
    };
    for cache in ["MISS", "HIT"] {
        assert_eq!(
            location(&format!("fwd/{plain}?utm_source=sms&utm_campaign=x%20y")),
            (
                "https://example.com/a?utm_source=sms&utm_campaign=x%20y".to_string(),
                cache.to_string()
            )
        );
    }
    assert_eq!(
        location(&format!("fwd/{with_query}?utm_source=sms")).0,
        "https://example.com/b?p=1&utm_source=sms"
    );
    assert_eq!(
        location(&format!("fwd/{with_fragment}?u=1")).0,
        "https://example.com/c?u=1#top"
    );
    // No query, the locations without the directive, and a result longer
    // than a target may be (2,048 bytes): the target alone.
    assert_eq!(location(&format!("fwd/{plain}")).0, "https://example.com/a");
    assert_eq!(
        location(&format!("{plain}?utm_source=sms")).0,
        "https://example.com/a"
    );
    let long = "u=".to_string() + &"x".repeat(2048);
    assert_eq!(
        location(&format!("fwd/{plain}?{long}")).0,
        "https://example.com/a"
    );
    s.nginx.assert_clean_log();
}

/// A link's own `forward_query` wins over `shortlink_forward_query`: `true`
/// forwards where the location does not, `false` does not where it does,
/// and a link without one follows the location. From the daemon's answer
/// and from the zone alike; an edit reaches the edge at once.
#[test]
fn a_links_own_forward_query_wins_over_the_location() {
    let s = Stack::start_edited("forward-query-link", 1, "300ms", |http| {
        http.replace(
            "        location /fb/ {",
            "        location /fwd/ {\n            shortlink on;\n            shortlink_forward_query on;\n        }\n        location /fb/ {",
        )
    });
    let on = s
        .daemon
        .create(json!({"url": "https://example.com/on", "forward_query": true}));
    let off = s
        .daemon
        .create(json!({"url": "https://example.com/off", "forward_query": false}));
    let unset = s.daemon.create(json!({"url": "https://example.com/unset"}));
    let location = |path: &str| {
        let r = s.get(path, &[]);
        assert_eq!(r.status, 302, "{path}: {}", r.body_text());
        r.header("Location").unwrap_or_default().to_string()
    };
    for _ in ["MISS", "HIT"] {
        // `location /`: no shortlink_forward_query (off).
        assert_eq!(location(&format!("{on}?u=1")), "https://example.com/on?u=1");
        assert_eq!(location(&format!("{off}?u=1")), "https://example.com/off");
        assert_eq!(
            location(&format!("{unset}?u=1")),
            "https://example.com/unset"
        );
        // `location /fwd/`: shortlink_forward_query on.
        assert_eq!(
            location(&format!("fwd/{on}?u=1")),
            "https://example.com/on?u=1"
        );
        assert_eq!(
            location(&format!("fwd/{off}?u=1")),
            "https://example.com/off"
        );
        assert_eq!(
            location(&format!("fwd/{unset}?u=1")),
            "https://example.com/unset?u=1"
        );
    }
    assert_eq!(s.get(&on, &[]).header("X-Cache"), Some("HIT"));
    // Handing the choice back to the location reaches the cached entry.
    let r = s.daemon.api(
        "PATCH",
        &format!("/api/v1/links/{off}"),
        Some(&json!({"forward_query": null})),
    );
    assert_eq!(r.status, 200, "{}", r.body_text());
    assert!(eventually(Duration::from_secs(2), || location(&format!(
        "fwd/{off}?u=1"
    ))
        == "https://example.com/off?u=1"));
    assert_eq!(location(&format!("{off}?u=1")), "https://example.com/off");
    s.nginx.assert_clean_log();
}
