//! A protected link in the real Chromium: the form shows, a wrong password
//! shows it again with the message, the right one lands on the target,
//! and the next visit goes straight there on the cookie.

use std::time::Duration;

use serde_json::json;
use shortlink_e2e::{Browser, Stack};

#[test]
fn a_visitor_types_the_password_and_lands_on_the_target() {
    let s = Stack::start_edited("password-browser", 1, "2s", |http| {
        http.replace(
            "        location / {\n            shortlink on;\n",
            "        location = /landing {\n            default_type text/html;\n            return 200 '<!DOCTYPE html><title>Landed</title><h1 id=\"landed\">You are here</h1>';\n        }\n        location / {\n            shortlink on;\n",
        )
    });
    let port = s.nginx.port;
    let target = format!("http://127.0.0.1:{port}/landing");
    let code = s
        .daemon
        .create(json!({"url": target, "alias": "members", "password": "correct horse"}));
    let mut b = Browser::start(&s.scratch);
    let link = format!("http://127.0.0.1:{port}/{code}");

    b.goto(&link, "form");
    assert_eq!(b.path(), "/members");
    assert!(b.exists("form input[type=password]"), "{}", b.source());
    assert!(!b.source().contains("/landing"), "{}", b.source());

    b.fill("#password", "battery staple");
    b.click("form button[type=submit]", "wrong");
    assert_eq!(b.path(), "/members");
    assert!(b.text(".msg").contains("Wrong password"), "{}", b.source());
    assert_eq!(b.cookie("shortlink_pw"), None);

    b.fill("#password", "correct horse");
    b.click("form button[type=submit]", "landed");
    b.wait_for("the target", Duration::from_secs(5), |b| {
        b.path() == "/landing"
    });
    assert!(b.text("#landed").contains("You are here"), "{}", b.source());

    // Again: straight to the target, no form.
    b.goto(&link, "again");
    b.wait_for("the target again", Duration::from_secs(5), |b| {
        b.path() == "/landing"
    });
    let mut clicks = 0;
    for _ in 0..50 {
        clicks = s.daemon.clicks(&code);
        if clicks >= 2 {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(clicks, 2, "the granted visit and the cookie visit");
}
