//! The admin pages beyond links one by one, in Chromium through nginx:
//! users (add, reset a password, delete), the list paged forward and back
//! with its total and a search by generated code, bulk create with a bad
//! line, CSV import (twice) and export, and key expiry.

use serde_json::json;
use shortlink_e2e::{Browser, Stack};

use super::support::*;

/// The codes of the list's rows, top to bottom.
fn row_codes(b: &Browser) -> Vec<String> {
    let v =
        b.js("return [...document.querySelectorAll('#links tbody tr')].map(r => r.dataset.code)");
    v.as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_string())
        .collect()
}

/// Signs in over plain HTTP; the status nginx answers (303 when it worked).
fn http_sign_in(s: &Stack, name: &str, password: &str) -> u16 {
    let (cookie, token) = login_form(s);
    let body = format!(
        "csrf={token}&name={name}&password={}",
        password.replace(' ', "+")
    );
    post_login(s, &cookie, &body, &[]).status
}

fn shot(b: &Browser, name: &str) {
    if let Ok(dir) = std::env::var("SHORTLINK_SCREENSHOTS") {
        b.save_full_page(&std::path::Path::new(&dir).join(name));
    }
}

fn users(b: &mut Browser, s: &Stack, session: &str) {
    b.goto(&admin_url(s, "/admin/users"), "users");
    assert!(b.text("#users tr[data-user='alice']").contains("you"));
    assert!(
        !b.exists("#users tr[data-user='alice'] button.danger"),
        "no delete button for the signed-in account"
    );

    // Added with the password typed twice, by the CLI's rules.
    b.fill("#add-user #f-name", "bob");
    b.fill("#add-user #f-password", "first password");
    b.fill("#add-user #f-password2", "other password");
    b.click("#add-user button[type=submit]", "user-differ");
    assert!(
        b.text("#err-password2").contains("differ"),
        "{}",
        b.source()
    );
    assert_eq!(b.value("#add-user #f-name"), "bob", "the name stays");
    b.fill("#add-user #f-password", "short");
    b.fill("#add-user #f-password2", "short");
    b.click("#add-user button[type=submit]", "user-short");
    assert!(b.text("#err-password").contains("8 to 1024"));
    assert!(!b.exists("#users tr[data-user='bob']"));
    b.fill("#add-user #f-password", "first password");
    b.fill("#add-user #f-password2", "first password");
    b.click("#add-user button[type=submit]", "user-added");
    assert!(b.text("#flash").contains("\"bob\" added"));
    assert!(b.exists("#users tr[data-user='bob']"));
    assert_eq!(http_sign_in(s, "bob", "first password"), 303);
    b.fill("#add-user #f-name", "bob");
    b.fill("#add-user #f-password", "first password");
    b.fill("#add-user #f-password2", "first password");
    b.click("#add-user button[type=submit]", "user-taken");
    assert!(b.text("#err-name").contains("taken"), "{}", b.source());

    // A reset: both fields must agree; then the old password stops working.
    let bob = "#users tr[data-user='bob']";
    b.fill(&format!("{bob} input[name=password]"), "second password");
    b.fill(&format!("{bob} input[name=password2]"), "second passwort");
    b.click(&format!("{bob} form.reset button"), "reset-differ");
    assert!(b.text(&format!("{bob} #err-password2")).contains("differ"));
    b.fill(&format!("{bob} input[name=password]"), "second password");
    b.fill(&format!("{bob} input[name=password2]"), "second password");
    b.click(&format!("{bob} form.reset button"), "reset-done");
    assert!(b.text("#flash").contains("password of \"bob\" was changed"));
    assert_eq!(http_sign_in(s, "bob", "first password"), 401);
    assert_eq!(http_sign_in(s, "bob", "second password"), 303);

    // Delete after confirming: gone, and bob can no longer sign in.
    b.click_and_confirm(&format!("{bob} button.danger"), "user-deleted");
    assert!(b.text("#flash").contains("\"bob\" deleted"));
    assert!(!b.exists(bob));
    assert_eq!(http_sign_in(s, "bob", "second password"), 401);

    // The signed-in account cannot delete itself, even by a forged form.
    let csrf = b.value("#add-user input[name=csrf]");
    let r = with_session(
        s,
        "POST",
        "/admin/users/alice/delete",
        session,
        &format!("csrf={csrf}"),
    );
    assert_eq!(r.status, 409, "{}", r.body_text());
    assert!(r.body_text().contains("cannot delete itself"));
    let r = with_session(s, "POST", "/admin/users/alice/delete", session, "x=1");
    assert_eq!(r.status, 403, "no CSRF token");
    b.goto(&admin_url(s, "/admin/users"), "users-end");
    assert!(b.exists("#users tr[data-user='alice']"));
}

fn paging(b: &mut Browser, s: &Stack) {
    let items: Vec<_> = (0..60)
        .map(|i| json!({"url": format!("https://example.com/page/{i}"), "tags": ["paged"]}))
        .collect();
    let r = s.daemon.api(
        "POST",
        "/api/v1/links/batch",
        Some(&json!({ "links": items })),
    );
    assert_eq!(r.status, 200, "{}", r.body_text());
    b.goto(&admin_url(s, "/admin/links?tag=paged"), "page-1");
    assert_eq!(b.text("#total-count"), "60");
    let first = row_codes(b);
    assert_eq!(first.len(), 25);
    assert!(!b.exists("#prev-page"), "the first page has no previous");
    b.click("#next-page", "page-2");
    let second = row_codes(b);
    assert_eq!(second.len(), 25);
    assert!(second.iter().all(|c| !first.contains(c)));
    assert_eq!(b.text("#total-count"), "60", "the total of the search");
    b.click("#next-page", "page-3");
    let third = row_codes(b);
    assert_eq!(third.len(), 10);
    assert!(!b.exists("#next-page"), "the last page has no next");
    b.click("#prev-page", "page-2-again");
    assert_eq!(row_codes(b), second, "back one page");
    b.click("#prev-page", "page-1-again");
    assert_eq!(row_codes(b), first, "back to the first page");
    assert!(!b.exists("#prev-page"));
    let mut all: Vec<String> = [first, second, third].concat();
    all.sort();
    all.dedup();
    assert_eq!(all.len(), 60, "every link once");

    // Search by the generated code of a link that shows its alias.
    let r = s.daemon.api(
        "POST",
        "/api/v1/links",
        Some(&json!({"url": "https://example.com/by-code", "alias": "found-by-code"})),
    );
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    let generated = v["generated_code"].as_str().unwrap();
    b.goto(&admin_url(s, "/admin/links"), "before-code-search");
    b.fill("#search input[name=q]", generated);
    b.click("#search button", "code-search");
    assert_eq!(row_codes(b), vec!["found-by-code".to_string()]);
    assert_eq!(b.text("#total-count"), "1");
}

fn bulk(b: &mut Browser, s: &Stack) {
    b.goto(&admin_url(s, "/admin/links"), "links-for-bulk");
    b.click("#bulk-link", "bulk");
    b.fill(
        "#f-lines",
        "https://example.com/bulk-1\nftp://bad.example/x\n\nhttps://example.com/bulk-4 bulk-four",
    );
    b.click("#bulk button[type=submit]", "bulk-done");
    shot(b, "admin-bulk.png");
    assert_eq!(b.text("#bulk-summary"), "2 created, 1 refused.");
    let bad = b.text("#bulk-results tr[data-line='2']");
    assert!(bad.contains("line 2:") && bad.contains("http"), "{bad}");
    let code = b.text("#bulk-results tr[data-line='1'] a.code");
    let code = code.rsplit('/').next().unwrap().to_string();
    let r = s.get(&code, &[]);
    assert_eq!(r.status, 302);
    assert_eq!(r.header("Location"), Some("https://example.com/bulk-1"));
    let r = s.get("bulk-four", &[]);
    assert_eq!(r.header("Location"), Some("https://example.com/bulk-4"));
    assert_eq!(
        b.value("#f-lines"),
        "ftp://bad.example/x",
        "only the refused line stays"
    );
}

fn csv(b: &mut Browser, s: &Stack, session: &str) {
    let file = s.scratch.path("import.csv");
    std::fs::write(
        &file,
        "url,alias,tags\n\
         https://example.com/csv-1,csv-one,imported\n\
         not a url,,\n\
         https://example.com/csv-3,,imported\n",
    )
    .unwrap();
    b.goto(&admin_url(s, "/admin/links"), "links-for-csv");
    b.click("#csv-link", "csv");
    for (round, (imported, present)) in [("first", (2, 0)), ("again", (0, 2))] {
        b.upload("#f-file", &file);
        b.click("#import button[type=submit]", &format!("imported-{round}"));
        assert_eq!(b.text("#imported"), imported.to_string(), "{round}");
        assert_eq!(b.text("#present"), present.to_string(), "{round}");
        assert_eq!(b.text("#import-errors"), "1");
        let bad = b.text("#import-error-rows tr[data-line='3']");
        assert!(bad.contains("url"), "{bad}");
    }
    let r = s.get("csv-one", &[]);
    assert_eq!(r.header("Location"), Some("https://example.com/csv-1"));
    // Its click reaches the daemon within a flush interval; both exports
    // below must see it, or they differ by it.
    let clicked = || {
        let r = s.daemon.api("GET", "/api/v1/links/csv-one", None);
        let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        v["clicks"].as_i64() == Some(1)
    };
    let waited = std::time::Instant::now();
    while !clicked() && waited.elapsed() < std::time::Duration::from_secs(10) {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(
        clicked(),
        "the visit to csv-one was not counted within 10 s"
    );

    // The download is what `shortlinkd export` writes, byte for byte.
    assert!(b.exists("#export[href='/admin/csv/export.csv']"));
    let r = with_session(s, "GET", "/admin/csv/export.csv", session, "");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("Content-Type"), Some("text/csv; charset=utf-8"));
    assert!(r
        .header("Content-Disposition")
        .unwrap()
        .starts_with("attachment; filename=\"shortlinks-"));
    let out = s.daemon.cli(&["export", "-"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = r.body_text();
    assert!(page.starts_with("code,url,alias,expires_at,tags,clicks,bot_clicks,created_at,"));
    assert!(page.contains(",https://example.com/csv-1,csv-one,"));
    assert_eq!(page, String::from_utf8_lossy(&out.stdout));
}

fn key_expiry(b: &mut Browser, s: &Stack) {
    b.goto(&admin_url(s, "/admin/keys"), "keys-expiry");
    let set = |b: &Browser, v: &str| {
        b.js(&format!(
            "document.querySelector('#create-key #f-expires_at').value = '{v}'; return true"
        ));
    };
    b.fill("#create-key #f-name", "expiring");
    set(b, "2020-01-01T00:00");
    b.click("#create-key button[type=submit]", "key-expiry-past");
    assert!(b.text("#err-expires_at").contains("in the future"));
    set(b, "2031-01-02T03:04");
    b.click("#create-key button[type=submit]", "key-expiring");
    assert!(b.value("#secret").starts_with("slk_"));
    let row = "#keys tr[data-key-name='expiring']";
    assert_eq!(b.text(&format!("{row} td.expires")), "2031-01-02 03:04 UTC");
    assert_eq!(b.text("#keys tr[data-key-name='e2e'] td.expires"), "never");
    let keys = s.daemon.api("GET", "/api/v1/keys", None);
    let keys: serde_json::Value = serde_json::from_slice(&keys.body).unwrap();
    let stored = keys["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["name"] == "expiring")
        .unwrap()["expires_at"]
        .clone();
    assert_eq!(stored, json!("2031-01-02T03:04:00Z"));
}

#[test]
fn users_paging_bulk_csv_and_key_expiry() {
    let s = Stack::start("admin-pages", 1);
    add_user(&s, "alice", PASSWORD);
    let mut b = Browser::start(&s.scratch);
    sign_in(&mut b, &s, "alice", PASSWORD);
    let session = b.cookie("shortlink_session").expect("signed in");
    users(&mut b, &s, &session);
    paging(&mut b, &s);
    bulk(&mut b, &s);
    csv(&mut b, &s, &session);
    key_expiry(&mut b, &s);
    s.nginx.assert_clean_log();
}
