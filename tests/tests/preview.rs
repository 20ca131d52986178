//! `shortlink_preview_suffix`: `/<code>+` answers a page showing where the
//! link goes and when it was made, built by the module from the zone entry,
//! with no click counted; codes that do not redirect answer as they would
//! without the suffix, and a suffix a code could end in is refused.

use std::time::Duration;

use serde_json::json;
use shortlink_e2e::{main_context, nginx_test_config, Scratch, Stack};

/// The stack with `shortlink_preview_suffix +` on `location /` and `~~` on
/// `/fb/` (which has a fallback).
fn stack(name: &str) -> Stack {
    Stack::start_edited(name, 1, "300ms", |http| {
        http.replace(
            "        location / {\n            shortlink on;\n",
            "        location / {\n            shortlink on;\n            shortlink_preview_suffix +;\n",
        )
        .replace(
            "            shortlink_fallback https://example.com/fallback;\n",
            "            shortlink_fallback https://example.com/fallback;\n            shortlink_preview_suffix ~~;\n",
        )
    })
}

fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    String::from_utf8(
        shortlink_core::preview::date_of(shortlink_core::preview::day_of(secs)).to_vec(),
    )
    .unwrap()
}

#[test]
fn a_preview_shows_the_escaped_target_and_the_date_and_counts_no_click() {
    let s = stack("preview");
    let target = "https://example.com/a?x=1&y=<b>&q=\"'";
    let code = s.daemon.create(json!({"url": target}));
    let alias = s
        .daemon
        .create(json!({"url": "https://example.com/aliased", "alias": "peek-me"}));
    let (_, stored) = {
        let r = s.daemon.api("GET", &format!("/api/v1/links/{code}"), None);
        let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        (r.status, v["url"].as_str().unwrap().to_string())
    };
    // The daemon keeps the URL as normalized; the page shows it escaped.
    let escaped = stored
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;");
    let date = today();
    // From the daemon's answer, then from the zone.
    for cache in ["MISS", "HIT"] {
        let r = s.get(&format!("{code}+"), &[]);
        assert_eq!(r.status, 200, "{}", r.body_text());
        assert_eq!(r.header("X-Cache"), Some(cache));
        assert_eq!(r.header("X-Code"), Some(code.as_str()));
        assert_eq!(r.header("Location"), None);
        assert_eq!(r.header("Content-Type"), Some("text/html; charset=utf-8"));
        assert_eq!(r.header("Cache-Control"), Some("no-store"));
        assert_eq!(r.header("X-Content-Type-Options"), Some("nosniff"));
        let csp = r.header("Content-Security-Policy").unwrap_or_default();
        assert!(
            csp.starts_with("default-src 'none'; style-src 'unsafe-inline'"),
            "{csp}"
        );
        let body = r.body_text();
        assert!(
            body.contains(&format!("<p class=\"url\">{escaped}</p>")),
            "{body}"
        );
        assert!(body.contains(&format!("href=\"{escaped}\"")), "{body}");
        assert!(
            body.contains(&format!("<time datetime=\"{date}\">")),
            "{body}"
        );
        assert!(!body.contains("<b>"), "{body}");
        assert!(!body.contains("src="), "no external assets: {body}");
    }
    // An alias, and a HEAD (headers only).
    let r = s.get(&format!("{alias}+"), &[]);
    assert_eq!(r.status, 200, "{}", r.body_text());
    assert!(r.body_text().contains("https://example.com/aliased"));
    let r = s
        .nginx
        .request(b"HEAD", format!("/{code}+").as_bytes(), &[], b"");
    assert_eq!(r.status, 200);
    assert!(r.body.is_empty());

    // No click from any of those; the redirect itself still counts.
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(s.daemon.clicks(&code), 0);
    assert_eq!(s.daemon.clicks(&alias), 0);
    let r = s.get(&code, &[]);
    assert_eq!(r.status, 302);
    let mut counted = false;
    for _ in 0..50 {
        if s.daemon.clicks(&code) == 1 {
            counted = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(counted, "the redirect was never counted");
    s.nginx.assert_clean_log();
}

#[test]
fn codes_that_do_not_redirect_answer_as_without_the_suffix() {
    let s = stack("preview-gone");
    let off = s
        .daemon
        .create(json!({"url": "https://example.com/off", "disabled": true}));
    let code = s.daemon.create(json!({"url": "https://example.com/live"}));
    // A valid code no link has.
    let unknown = s.codec.encode(123_456_789).as_str().to_string();
    for (path, want) in [
        (format!("{off}+"), 410),
        (format!("{unknown}+"), 404),
        ("no-such-alias+".to_string(), 404),
        ("+".to_string(), 404),
        // The suffix of another location is no suffix here.
        (format!("{code}~~"), 404),
    ] {
        let r = s.get(&path, &[]);
        assert_eq!(r.status, want, "{path}: {}", r.body_text());
        assert_eq!(r.header("Location"), None, "{path}");
    }
    // Where a fallback is set, it answers for them as for the plain code.
    let r = s.get(&format!("fb/{off}~~"), &[]);
    assert_eq!(r.status, 302);
    assert_eq!(r.header("Location"), Some("https://example.com/fallback"));
    let r = s.get(&format!("fb/{code}~~"), &[]);
    assert_eq!(r.status, 200, "{}", r.body_text());
    assert!(r.body_text().contains("https://example.com/live"));
    // The plain code still redirects.
    assert_eq!(s.get(&code, &[]).status, 302);
    s.nginx.assert_clean_log();
}

#[test]
fn a_suffix_of_code_characters_is_refused_by_nginx_t() {
    let scratch = Scratch::new("preview-conf");
    let (key, _) = scratch.key();
    let main = main_context(&scratch.dir, 1);
    let conf = |suffix: &str| {
        format!(
            "{main}http {{\nshortlink_key_file {};\nserver {{ listen 127.0.0.1:1; location / {{ shortlink on; shortlink_preview_suffix {suffix}; }} }}\n}}\n",
            key.display()
        )
    };
    let (ok, out) = nginx_test_config(&scratch, &conf("+"));
    assert!(ok, "{out}");
    let (ok, out) = nginx_test_config(&scratch, &conf("off"));
    assert!(ok, "{out}");
    for (suffix, expected) in [
        ("p", "made of code and alias characters"),
        ("-x_", "made of code and alias characters"),
        ("\"+/\"", "visible ASCII"),
        ("+++++++++", "longer than the maximum"),
    ] {
        let (ok, out) = nginx_test_config(&scratch, &conf(suffix));
        assert!(!ok, "nginx -t accepted {suffix}");
        for e in ["[emerg]", "\"shortlink_preview_suffix\"", expected] {
            assert!(out.contains(e), "{suffix}: expected {e:?} in:\n{out}");
        }
    }
}
