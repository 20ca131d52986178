//! Every admin page on a phone (390 px, Chromium's mobile emulation, so the
//! page's viewport meta counts) and on a laptop (1366 px): nothing wider
//! than the window, every navigation entry on screen, and a full-page
//! screenshot of each under `target/admin-screenshots/` (and
//! `SHORTLINK_SCREENSHOTS`, which `make screenshots` points at
//! `docs/screenshots/`). And a taken-down link's state badge is styled
//! like the others.

use std::path::{Path, PathBuf};

use serde_json::json;
use shortlink_e2e::{root, Browser, Stack};

use super::support::*;

/// A width the pages must fit, and whether Chromium plays a phone there.
struct Width {
    px: u32,
    mobile: bool,
}

const WIDTHS: [Width; 2] = [
    Width {
        px: 390,
        mobile: true,
    },
    Width {
        px: 1366,
        mobile: false,
    },
];

/// Window height when not taking a full-page shot.
const HEIGHT: u32 = 844;

/// Makes the page `width.px` CSS pixels wide (and `height` tall).
fn emulate(b: &Browser, width: &Width, height: u32) {
    b.cdp(
        "Emulation.setDeviceMetricsOverride",
        json!({
            "width": width.px, "height": height, "deviceScaleFactor": 1, "mobile": width.mobile,
        }),
    );
}

/// Where the shots go: always under target/, and also `SHORTLINK_SCREENSHOTS`.
fn shot_dirs() -> Vec<PathBuf> {
    let mut dirs = vec![root().join("target/admin-screenshots")];
    if let Ok(dir) = std::env::var("SHORTLINK_SCREENSHOTS") {
        dirs.push(PathBuf::from(dir));
    }
    for d in &dirs {
        std::fs::create_dir_all(d).unwrap();
    }
    dirs
}

/// Fails unless the page fits `width`: the layout viewport is the device's
/// width (no viewport meta would make it 980 on a phone), nothing scrolls
/// sideways, the page does not hide what sticks out, and every navigation
/// entry is inside the window.
fn assert_fits(b: &Browser, width: &Width, page: &str) {
    let m = b.js(&format!(
        "const de = document.documentElement; \
         const wide = [...document.body.querySelectorAll('*')] \
           .filter(e => !e.parentElement.closest('table') \
             && e.getBoundingClientRect().right > {} + 0.5) \
           .slice(0, 6).map(e => `${{e.tagName}}#${{e.id}}.${{e.className}}`); \
         const right = [...document.querySelectorAll('header.top a, header.top button')] \
           .map(e => e.getBoundingClientRect().right); \
         return {{ inner: window.innerWidth, scroll: de.scrollWidth, \
           viewport: document.querySelector('meta[name=viewport]')?.content ?? '', \
           clipped: [de, document.body].map(e => getComputedStyle(e).overflowX) \
             .filter(o => o !== 'visible'), \
           nav: right.length, navRight: Math.max(0, ...right), wide }}",
        width.px
    ));
    let at = format!("{page} at {} px: {m}", width.px);
    assert!(
        m["viewport"]
            .as_str()
            .unwrap()
            .contains("width=device-width"),
        "no viewport meta: {at}"
    );
    assert_eq!(m["inner"], json!(width.px), "layout viewport: {at}");
    assert!(
        m["scroll"].as_u64().unwrap() <= width.px as u64,
        "overflows sideways: {at}"
    );
    assert_eq!(m["clipped"], json!([]), "overflow hidden, not fixed: {at}");
    assert!(m["nav"].as_u64().unwrap() > 0, "no header: {at}");
    assert!(
        m["navRight"].as_f64().unwrap() <= width.px as f64,
        "a header entry is off screen: {at}"
    );
}

/// A screenshot of the whole page at `width`, as `NAME-WIDTH.png`.
fn full_page_shot(b: &Browser, width: &Width, name: &str, dirs: &[PathBuf]) {
    let height = b
        .js("return document.documentElement.scrollHeight")
        .as_u64()
        .unwrap_or(HEIGHT as u64)
        .clamp(HEIGHT as u64, 5000) as u32;
    emulate(b, width, height);
    let file = format!("{name}-{}.png", width.px);
    b.save_screenshot(&dirs[0].join(&file));
    for d in &dirs[1..] {
        std::fs::copy(dirs[0].join(&file), Path::new(d).join(&file)).unwrap();
    }
    emulate(b, width, HEIGHT);
}

/// Links in every state, clicks, a team, a webhook with failed deliveries
/// (its receiver never resolves) and a takedown: every page has rows to
/// show. The taken-down link's code.
fn fill(s: &Stack) -> String {
    let r = s.daemon.api(
        "POST",
        "/api/v1/webhooks",
        Some(&json!({"url": "https://hooks.invalid/shortlink", "events": ["link.*"]})),
    );
    assert_eq!(r.status, 201, "{}", r.body_text());
    let r = s
        .daemon
        .api("POST", "/api/v1/teams", Some(&json!({"name": "marketing"})));
    assert_eq!(r.status, 201, "{}", r.body_text());
    let long = "https://docs.example.com/a/rather/long/path/that/goes/on/and/on/\
                ?utm_source=newsletter&utm_medium=email&utm_campaign=spring-sale-2026";
    let code = s.daemon.create(json!({
        "url": long, "alias": "spring-sale-2026-newsletter", "tags": ["spring", "newsletter", "email"],
        "targets": {"mobile": "https://m.example.com/spring"},
    }));
    for ua in [
        "Mozilla/5.0 (X11; Linux x86_64)",
        "Mozilla/5.0 (iPhone) Mobile",
    ] {
        assert_eq!(s.get(&code, &[("User-Agent", ua)]).status, 302);
    }
    // The link page's charts show those clicks once the edge flushes them.
    let counted = || {
        let r = s.daemon.api("GET", &format!("/api/v1/links/{code}"), None);
        serde_json::from_slice::<serde_json::Value>(&r.body).unwrap()["clicks"] == 2
    };
    let waited = std::time::Instant::now();
    while !counted() && waited.elapsed() < std::time::Duration::from_secs(10) {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(counted(), "2 clicks not counted within 10 s");
    s.daemon
        .create(json!({"url": "https://example.com/off", "disabled": true}));
    s.daemon
        .create(json!({"url": "https://example.com/until", "expires_at": "2031-01-01T00:00:00Z"}));
    let gone = s
        .daemon
        .create(json!({"url": "https://spam.example.net/win-a-prize"}));
    let r = s.daemon.api(
        "POST",
        "/api/v1/takedowns",
        Some(&json!({"host": "spam.example.net", "reason": "phishing, reported by abuse desk"})),
    );
    assert_eq!(r.status, 201, "{}", r.body_text());
    gone
}

#[test]
fn every_page_fits_a_phone_and_a_laptop() {
    let s = Stack::start("admin-widths", 1);
    add_user(&s, "alice", PASSWORD);
    let gone = fill(&s);
    let mut b = Browser::start(&s.scratch);
    let dirs = shot_dirs();
    let hooks = s.daemon.api("GET", "/api/v1/webhooks", None);
    let hooks: serde_json::Value = serde_json::from_slice(&hooks.body).unwrap();
    let hook = hooks["webhooks"][0]["id"].as_i64().unwrap();

    let pages: Vec<(&str, String, &str)> = vec![
        ("dashboard", "/admin/dashboard".into(), "#dash-total"),
        ("links", "/admin/links".into(), "#links"),
        (
            "link",
            "/admin/links/spring-sale-2026-newsletter".into(),
            "#chart-hourly svg",
        ),
        (
            "link-taken-down",
            format!("/admin/links/{gone}"),
            "#taken-down",
        ),
        ("new-link", "/admin/links/new".into(), "#create"),
        ("bulk", "/admin/bulk".into(), "#bulk"),
        ("csv", "/admin/csv".into(), "#import"),
        ("keys", "/admin/keys".into(), "#keys"),
        ("users", "/admin/users".into(), "#users"),
        ("teams", "/admin/teams".into(), "#teams"),
        ("webhooks", "/admin/webhooks".into(), "#webhooks"),
        (
            "webhook-deliveries",
            format!("/admin/webhooks/{hook}"),
            "#deliveries",
        ),
        ("takedowns", "/admin/takedowns".into(), "#takedowns"),
        ("not-found", "/admin/links/no-such-link".into(), "#error"),
    ];
    for width in &WIDTHS {
        emulate(&b, width, HEIGHT);
        b.goto(&admin_url(&s, "/admin/login"), "login");
        assert!(b.exists("#login"));
        assert_fits(&b, width, "login");
        full_page_shot(&b, width, "login", &dirs);
        sign_in(&mut b, &s, "alice", PASSWORD);
        for (name, path, selector) in &pages {
            b.goto(&admin_url(&s, path), name);
            assert!(b.exists(selector), "{name}: no {selector}\n{}", b.source());
            assert_fits(&b, width, name);
            full_page_shot(&b, width, name, &dirs);
        }
        // A new key's secret, shown once in the flash with its copy button.
        b.goto(&admin_url(&s, "/admin/keys"), "keys-before");
        b.fill("#create-key #f-name", &format!("key-{}", width.px));
        b.click("#create-key button[type=submit]", "key-secret");
        assert!(b.value("#secret").starts_with("slk_"));
        assert_fits(&b, width, "keys with a secret");
        b.click("#sign-out", "signed-out");
    }
    assert_state_badges(&mut b, &s, &gone);
    s.nginx.assert_clean_log();
}

/// A taken-down link's badge reads "taken down" and, like every other
/// state's, has colours of its own (the dashboard shows one of each).
fn assert_state_badges(b: &mut Browser, s: &Stack, gone: &str) {
    sign_in(b, s, "alice", PASSWORD);
    b.goto(&admin_url(s, &format!("/admin/links/{gone}")), "taken-down");
    assert_eq!(b.text("h1 .badge.state-taken_down"), "taken down");
    b.goto(&admin_url(s, "/admin/dashboard"), "badges");
    let styles = b.js(
        "return [...document.querySelectorAll('#dash-states .badge')].map(e => { \
           const c = getComputedStyle(e); \
           return [e.className, c.backgroundColor, c.color]; })",
    );
    let styles = styles.as_array().unwrap();
    assert_eq!(styles.len(), 5, "{styles:?}");
    let text = b.js("return getComputedStyle(document.body).color");
    for s in styles {
        assert_ne!(s[1], json!("rgba(0, 0, 0, 0)"), "no background: {s}");
        assert_ne!(s[2], text, "the page's text colour: {s}");
    }
    let taken = styles.iter().find(|s| s[0] == "badge state-taken_down");
    let taken = taken.expect("a taken_down badge");
    for other in ["badge state-active", "badge state-disabled"] {
        let o = styles.iter().find(|s| s[0] == other).unwrap();
        assert_ne!(o[1], taken[1], "taken down looks like {other}");
    }
}
