//! The admin UI in a real headless Chromium, against the real daemon behind
//! the real nginx with the module: sign in, create, list, redirect, clicks,
//! disable (410 at the edge), delete, API keys; and what must be refused.
//! `admin_ui/pages.rs`: users, paging, bulk create, CSV import and export,
//! key expiry. `admin_ui/widths.rs`: every page at 390 and 1366 px wide.
//!
//! `SHORTLINK_SCREENSHOTS=DIR` also saves the links page, a detail page, the
//! dashboard and a bulk create there, and every page at both widths (how
//! `make screenshots` writes `docs/screenshots/`).

#[path = "admin_ui/pages.rs"]
mod pages;
#[path = "admin_ui/support.rs"]
mod support;
#[path = "admin_ui/widths.rs"]
mod widths;

use std::time::Duration;

use serde_json::json;
use shortlink_e2e::{http, Browser, Stack};
use support::*;

#[test]
fn admin_ui_in_a_real_browser() {
    let s = Stack::start("admin-ui", 1);
    add_user(&s, "alice", PASSWORD);
    let mut b = Browser::start(&s.scratch);
    let base = format!("http://127.0.0.1:{}", s.nginx.port);

    // Signed out: every page leads to the sign-in form.
    b.goto(&admin_url(&s, "/admin/links"), "signed-out");
    assert_eq!(b.path(), "/admin/login");

    // A wrong password is refused, and the name typed stays.
    sign_in(&mut b, &s, "alice", "wrong password");
    assert_eq!(b.path(), "/admin/login");
    assert!(
        b.text("#login-error")
            .contains("Wrong user name or password"),
        "{}",
        b.source()
    );
    assert_eq!(b.value("#f-name"), "alice");
    assert_eq!(b.cookie("shortlink_session"), None);

    // The right one signs in and lands on the (empty) list.
    b.fill("#f-password", PASSWORD);
    b.click("#login button[type=submit]", "links-empty");
    assert_eq!(b.path(), "/admin/links");
    assert!(b.exists("#no-links"), "{}", b.source());
    let session = b.cookie("shortlink_session").expect("session cookie");

    // Create: a bad URL and alias are refused next to their fields, and
    // nothing typed is lost.
    b.click("a[href='/admin/links/new']", "new-link");
    b.fill("#f-url", "ftp://example.com/file");
    b.fill("#f-alias", "no spaces");
    b.fill("#f-tags", "spring, newsletter");
    b.fill("#f-targets-mobile", "https://m.example.com/landing");
    b.click("#create button[type=submit]", "create-invalid");
    assert_eq!(b.path(), "/admin/links");
    assert!(b.exists("#form-error"));
    assert!(b.text("#err-url").contains("http"), "{}", b.source());
    assert_eq!(b.value("#f-url"), "ftp://example.com/file");
    assert_eq!(b.value("#f-alias"), "no spaces");
    assert_eq!(b.value("#f-tags"), "spring, newsletter");
    assert_eq!(
        b.value("#f-targets-mobile"),
        "https://m.example.com/landing"
    );
    b.fill("#f-url", "https://example.com/landing?utm_source=admin");
    b.click("#create button[type=submit]", "create-invalid-alias");
    assert!(b.exists("#err-alias"), "{}", b.source());
    assert!(!b.exists("#err-url"));
    b.fill("#f-alias", "");
    b.click("#create button[type=submit]", "created");

    // The new link's page: short URL under the host nginx was reached by,
    // copy button, QR code.
    assert!(b.path().starts_with("/admin/links/"), "{}", b.url());
    let code = b.text("#link-code");
    let short_url = b.value("#short-url");
    assert_eq!(short_url, format!("{base}/{code}"));
    assert!(b.text("#flash").contains("created"));
    assert!(b.exists("#copy-short-url"));
    assert!(b.exists("#qr svg"));
    b.click("#copy-short-url", "copied");
    assert_eq!(b.text("#copy-short-url"), "Copied");
    for (ext, mime, magic) in [
        ("png", "image/png", &b"\x89PNG"[..]),
        ("svg", "image/svg+xml", &b"<svg"[..]),
    ] {
        let r = with_session(
            &s,
            "GET",
            &format!("/admin/links/{code}/qr.{ext}?download=1"),
            &session,
            "",
        );
        assert_eq!(r.status, 200, "qr.{ext}");
        assert_eq!(r.header("Content-Type"), Some(mime));
        assert!(r.body.starts_with(magic));
        assert!(r.header("Content-Disposition").unwrap().contains(&code));
    }

    // The list shows it.
    b.click("a[href='/admin/links']", "links-one");
    let row = format!("#links tr[data-code='{code}']");
    assert!(b.exists(&row), "{}", b.source());
    let row_text = b.text(&row);
    assert!(row_text.contains("https://example.com/landing?utm_source=admin"));
    assert!(row_text.contains("active"));
    assert_eq!(b.text(&format!("{row} td.clicks")), "0");
    // Search finds it by target, and not by something else.
    b.fill("#search input[name=q]", "utm_source=admin");
    b.click("#search button", "search-hit");
    assert!(b.exists(&row));
    b.fill("#search input[name=q]", "nothing-like-this");
    b.click("#search button", "search-miss");
    assert!(!b.exists(&row));
    assert!(b.exists("#no-links"));

    // The short URL through nginx redirects; clicks show on the detail page
    // once the module's flush reaches the daemon.
    let target = "https://example.com/landing?utm_source=admin";
    for (ua, location) in [
        ("Mozilla/5.0 (X11; Linux x86_64)", target),
        (
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) Mobile",
            "https://m.example.com/landing",
        ),
        ("Googlebot/2.1 (+http://www.google.com/bot.html)", target),
    ] {
        let r = s.get(
            &code,
            &[
                ("User-Agent", ua),
                ("Referer", "https://news.example.org/post"),
            ],
        );
        assert_eq!(r.status, 302, "{}", r.body_text());
        assert_eq!(r.header("Location"), Some(location), "{ua}");
    }
    b.goto(&admin_url(&s, &format!("/admin/links/{code}")), "detail");
    b.wait_for(
        "3 clicks on the detail page",
        Duration::from_secs(15),
        |b| b.text("#clicks") == "3",
    );
    assert_eq!(b.text("#bot-clicks"), "1");
    b.shot("detail-with-clicks");
    let breakdown = b.text("#breakdown");
    assert!(breakdown.contains("news.example.org"), "{breakdown}");
    assert!(b.exists("#chart-hourly svg rect.bar"));
    assert!(b.exists("#chart-daily svg rect.bar"));
    if let Ok(dir) = std::env::var("SHORTLINK_SCREENSHOTS") {
        std::fs::create_dir_all(&dir).unwrap();
        b.save_full_page(&std::path::Path::new(&dir).join("admin-detail.png"));
    }

    // Edit: a bad device target is refused next to the field; a good edit
    // takes effect at the edge at once.
    b.fill("#edit-form #f-targets-desktop", "javascript:alert(1)");
    b.click("#edit-form button[type=submit]", "edit-invalid");
    assert!(b.exists("#err-targets-desktop"), "{}", b.source());
    assert_eq!(
        b.value("#edit-form #f-targets-desktop"),
        "javascript:alert(1)"
    );
    b.fill("#edit-form #f-targets-desktop", "");
    b.fill("#edit-form #f-url", "https://example.com/edited");
    b.click("#edit-form button[type=submit]", "edited");
    assert!(b.text("#flash").contains("Saved"));
    let r = s.get(&code, &[]);
    assert_eq!(r.header("Location"), Some("https://example.com/edited"));

    // Disable: the edge answers 410 at once; enable brings it back.
    b.click("#disable", "disabled");
    assert!(b.text("#flash").contains("disabled"));
    assert!(b.text("h1").contains("disabled"));
    assert_eq!(s.get(&code, &[]).status, 410);
    b.click("#enable", "enabled");
    assert_eq!(s.get(&code, &[]).status, 302);

    // A POST without the CSRF token is refused, even with a valid session.
    let r = with_session(
        &s,
        "POST",
        &format!("/admin/links/{code}/disable"),
        &session,
        "x=1",
    );
    assert_eq!(r.status, 403, "{}", r.body_text());
    let r = with_session(
        &s,
        "POST",
        &format!("/admin/links/{code}/delete"),
        &session,
        "csrf=0000000000000000000000000000000000000000000000000000000000000000",
    );
    assert_eq!(r.status, 403);
    assert_eq!(s.get(&code, &[]).status, 302, "nothing changed");

    // README screenshot of the list, with a few more links.
    for (i, url) in [
        "https://nginx.org/en/docs/http/ngx_http_proxy_module.html",
        "https://example.com/spring-sale?utm_campaign=spring",
        "https://docs.example.com/getting-started",
    ]
    .iter()
    .enumerate()
    {
        let mut body = json!({"url": url, "tags": ["demo"]});
        if i == 0 {
            body["disabled"] = json!(true);
        }
        if i == 1 {
            // Longer than any generated code and with a '-': never refused
            // for looking like one, whatever the test's random key.
            body["alias"] = json!("spring-sale");
            body["expires_at"] = json!("2031-01-01T00:00:00Z");
        }
        s.daemon.create(body);
    }
    b.goto(&admin_url(&s, "/admin/links"), "links-many");
    assert!(b.exists("#links tr[data-code='spring-sale']"));
    assert!(b.text("#links").contains("disabled"));
    // Who made each link, by the key's name (the harness's key is "e2e").
    assert_eq!(
        b.text("#links tr[data-code='spring-sale'] td.by"),
        "key \"e2e\""
    );
    assert_eq!(b.text(&format!("{row} td.by")), "alice");
    if let Ok(dir) = std::env::var("SHORTLINK_SCREENSHOTS") {
        b.save_full_page(&std::path::Path::new(&dir).join("admin-links.png"));
    }

    // The dashboard (where /admin/ leads): links by state as the API
    // counts them, and the links that were followed among the most clicked.
    b.goto(&admin_url(&s, "/admin/"), "dashboard");
    assert_eq!(b.path(), "/admin/dashboard");
    let total = s.daemon.api("GET", "/api/v1/links?limit=1", None);
    let total: serde_json::Value = serde_json::from_str(&total.body_text()).unwrap();
    assert_eq!(b.text("#dash-total"), total["total"].to_string());
    assert_eq!(b.text("#dash-disabled"), "1");
    let stats = s.daemon.api("GET", "/api/v1/stats?top=10", None);
    let stats: serde_json::Value = serde_json::from_str(&stats.body_text()).unwrap();
    assert_eq!(b.text("#dash-30d"), stats["total"].to_string());
    for l in stats["top_links"].as_array().unwrap() {
        let code = l["code"].as_str().unwrap();
        assert!(
            b.exists(&format!("#top-links tr[data-code='{code}']")),
            "{code}"
        );
    }
    if let Ok(dir) = std::env::var("SHORTLINK_SCREENSHOTS") {
        b.save_full_page(&std::path::Path::new(&dir).join("admin-dashboard.png"));
    }

    // Delete (after confirming): gone from the list and from the edge.
    b.goto(
        &admin_url(&s, &format!("/admin/links/{code}")),
        "before-delete",
    );
    b.click_and_confirm("#delete", "deleted");
    assert_eq!(b.path(), "/admin/links");
    assert!(b.text("#flash").contains("deleted"));
    assert!(!b.exists(&row));
    assert_eq!(s.get(&code, &[]).status, 404);

    // API keys: the secret is shown once, works, shows its last use, and
    // stops working when revoked.
    b.click("a[href='/admin/keys']", "keys");
    b.fill("#create-key #f-name", "newsletter");
    b.click("#create-key button[type=submit]", "key-created");
    let secret = b.value("#secret");
    assert!(secret.starts_with("slk_"), "{secret}");
    let api = |key: &str| {
        http(
            s.daemon.api_port,
            b"POST",
            b"/api/v1/links",
            &[("X-Api-Key", key), ("Content-Type", "application/json")],
            br#"{"url": "https://example.com/from-key"}"#,
        )
    };
    assert_eq!(api(&secret).status, 201);
    b.goto(&admin_url(&s, "/admin/keys"), "keys-used");
    assert!(!b.exists("#secret"), "the secret is shown once");
    let key_row = "#keys tr[data-key-name='newsletter']";
    assert_ne!(b.text(&format!("{key_row} td.last-used")), "never");
    b.click_and_confirm(&format!("{key_row} button"), "key-revoked");
    assert!(b.text(key_row).contains("revoked"));
    let r = api(&secret);
    assert_eq!(r.status, 401);
    assert!(r.body_text().contains("revoked_api_key"));

    // An app: its id and secret shown once.
    b.fill("#create-app #f-name", "crm");
    b.click("#app-scope-stats-read", "app-scope");
    b.click("#create-app button[type=submit]", "app-created");
    assert!(b.text("#flash").contains("app_"));
    assert_eq!(b.value("#secret").len(), 64);
    assert!(b
        .text("#apps-table")
        .contains("links:write, links:read, stats:read"));

    // Sign out: the session is over, also for a copied cookie.
    b.click("#sign-out", "signed-out-again");
    assert_eq!(b.path(), "/admin/login");
    b.goto(&admin_url(&s, "/admin/keys"), "after-sign-out");
    assert_eq!(b.path(), "/admin/login");
    let r = with_session(&s, "GET", "/admin/links", &session, "");
    assert_eq!(r.status, 303);
    assert_eq!(r.header("Location"), Some("/admin/login"));
    s.nginx.assert_clean_log();
}

#[test]
fn sign_in_csrf_lockout_and_secure_cookies() {
    let s = Stack::start("admin-auth", 1);
    add_user(&s, "bob", PASSWORD);
    let (cookie, token) = login_form(&s);
    let good = format!("csrf={token}&name=bob&password=correct+horse+battery");

    // Without the form's token (or with another), even the right password fails.
    let r = post_login(&s, &cookie, "name=bob&password=correct+horse+battery", &[]);
    assert_eq!(r.status, 403);
    assert!(r.header("Set-Cookie").is_none());
    let r = post_login(&s, "", &good, &[]);
    assert_eq!(r.status, 403);

    // Behind https (nginx says so), cookies are Secure.
    let r = post_login(&s, &cookie, &good, &[("X-Forwarded-Proto", "https")]);
    assert_eq!(r.status, 303, "{}", r.body_text());
    assert_eq!(r.header("Location"), Some("/admin/links"));
    let session_cookie = r
        .headers
        .iter()
        .find(|(n, v)| n.eq_ignore_ascii_case("set-cookie") && v.starts_with("shortlink_session="))
        .map(|(_, v)| v.clone())
        .unwrap();
    for attr in ["HttpOnly", "SameSite=Strict", "Secure", "Path=/admin"] {
        assert!(session_cookie.contains(attr), "{session_cookie}");
    }
    let session = session_cookie
        .split(';')
        .next()
        .unwrap()
        .trim_start_matches("shortlink_session=")
        .to_string();
    let r = with_session(&s, "GET", "/admin/links", &session, "");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("X-Frame-Options"), Some("DENY"));
    assert!(r
        .header("Content-Security-Policy")
        .unwrap()
        .contains("script-src 'self'"));
    assert_eq!(r.header("Cache-Control"), Some("no-store"));

    // Five wrong passwords lock the name; then even the right one is
    // refused without being checked, until the delay is over.
    for i in 1..=5 {
        let r = post_login(
            &s,
            &cookie,
            &format!("csrf={token}&name=bob&password=guess{i}"),
            &[],
        );
        assert_eq!(r.status, 401, "attempt {i}");
        assert!(r.body_text().contains("Wrong user name or password"));
        if i == 5 {
            assert!(
                r.body_text().contains("locked for 30 seconds"),
                "{}",
                r.body_text()
            );
        }
    }
    let r = post_login(&s, &cookie, &good, &[]);
    assert_eq!(r.status, 429, "{}", r.body_text());
    assert!(r.body_text().contains("Too many failed sign-ins"));
    assert!(r.header("Set-Cookie").is_none());
    // An unknown name is just as wrong, and another name is not locked.
    add_user(&s, "carol", PASSWORD);
    let r = post_login(
        &s,
        &cookie,
        &format!("csrf={token}&name=nobody&password=x"),
        &[],
    );
    assert_eq!(r.status, 401);
    let r = post_login(
        &s,
        &cookie,
        &format!("csrf={token}&name=carol&password=correct+horse+battery"),
        &[],
    );
    assert_eq!(r.status, 303);
    let carol = r
        .headers
        .iter()
        .find_map(|(n, v)| {
            (n.eq_ignore_ascii_case("set-cookie") && v.starts_with("shortlink_session="))
                .then(|| v.split(';').next().unwrap()["shortlink_session=".len()..].to_string())
        })
        .unwrap();
    assert_eq!(
        with_session(&s, "GET", "/admin/keys", &carol, "").status,
        200
    );
    // A password change ends the sessions opened with the old one.
    user_cmd(&s, "passwd", "carol", "a new password 2");
    let r = with_session(&s, "GET", "/admin/keys", &carol, "");
    assert_eq!(r.status, 303);
    assert_eq!(r.header("Location"), Some("/admin/login"));
    s.nginx.assert_clean_log();
}
