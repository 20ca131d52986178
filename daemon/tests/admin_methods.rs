//! Admin addresses opened with a method they do not take: the address a
//! form posts to (`/admin/apps`) sends the browser to the page that lists
//! what it makes, and any other action answers an admin page with `Allow`,
//! never a blank 405.

mod common;

use common::admin::{send, sign_in};
use common::Daemon;

#[tokio::test]
async fn get_on_form_actions_answers_a_page_or_a_redirect() {
    let d = Daemon::start().await;
    let admin = sign_in(&d).await;
    let cookie = [("cookie", admin.cookie.as_str())];

    // The create-app form posts to /admin/apps; the apps are on the keys page.
    let (s, h, _) = send(&d, "GET", "/admin/apps", &cookie, None).await;
    assert_eq!(s, 303);
    assert_eq!(
        h.get("location").and_then(|v| v.to_str().ok()),
        Some("/admin/keys#apps")
    );
    let (s, page) = admin.get(&d, "/admin/keys").await;
    assert_eq!(s, 200);
    assert!(page.contains("id=\"apps\""), "{page}");

    // A POST-only action opened in the browser: an admin page, with Allow.
    let (s, h, body) = send(&d, "GET", "/admin/logout", &cookie, None).await;
    assert_eq!(s, 405);
    assert_eq!(h.get("allow").and_then(|v| v.to_str().ok()), Some("POST"));
    let ct = h
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    assert!(ct.starts_with("text/html"), "{ct}");
    let page = body.as_str().unwrap_or_default();
    assert!(page.contains("does not take GET"), "{page}");
}
