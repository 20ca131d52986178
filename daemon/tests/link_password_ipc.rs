//! Password checks over the IPC link: the edge learns that a link is
//! protected (never its hash), a right password is granted with the link,
//! a wrong one is refused, wrong ones from one address are throttled
//! (another address still gets through), and concurrent checks beyond the
//! bound are answered `Busy` at once. Runs on SQLite and, under
//! `with-pg`, on PostgreSQL.

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::Daemon;
use serde_json::json;
use shortlink_core::ipc::{LookupResult, PasswordResult, Reply, Request};

async fn check(c: &mut common::Ipc, id: u32, code: &str, pw: &str, client: &str) -> PasswordResult {
    c.send(&Request::CheckPassword {
        id,
        code: code.into(),
        password: pw.into(),
        client: client.into(),
    })
    .await;
    loop {
        match c.recv().await.expect("a reply") {
            Reply::Password { id: got, result } if got == id => return result,
            Reply::Event(_) => continue,
            other => panic!("unexpected {other:?}"),
        }
    }
}

#[tokio::test]
async fn the_daemon_checks_passwords_and_throttles_wrong_ones() {
    let d = Daemon::start().await;
    d.create(json!({"url": "https://e.com/secret", "alias": "pw", "password": "open sesame"}))
        .await;
    d.create(json!({"url": "https://e.com/open", "alias": "open"}))
        .await;
    let mut c = d.ipc().await;
    let tag = match c.lookup(1, "pw").await {
        LookupResult::Found(l) => {
            assert!(!format!("{l:?}").contains("argon2"), "{l:?}");
            l.password_tag.expect("protected")
        }
        other => panic!("{other:?}"),
    };
    match c.lookup(2, "open").await {
        LookupResult::Found(l) => assert_eq!(l.password_tag, None),
        other => panic!("{other:?}"),
    }
    // A new password, even the same one again, is a new tag: the edge's
    // cookies of the old one stop passing.
    let (s, v) = d
        .req(
            "PATCH",
            "/api/v1/links/pw",
            Some(json!({"password": "open sesame"})),
        )
        .await;
    assert_eq!(s, 200, "{v}");
    match c.lookup(5, "pw").await {
        LookupResult::Found(l) => assert_ne!(l.password_tag, Some(tag), "{l:?}"),
        other => panic!("{other:?}"),
    }
    match check(&mut c, 3, "pw", "open sesame", "192.0.2.1").await {
        PasswordResult::Granted(l) => assert_eq!(l.target, "https://e.com/secret"),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        check(&mut c, 4, "nope", "x", "192.0.2.1").await,
        PasswordResult::NotFound
    );
    // Five wrong passwords from one address are checked; the sixth is not,
    // not even the right one.
    for i in 0..5 {
        assert_eq!(
            check(&mut c, 10 + i, "pw", "wrong", "192.0.2.7").await,
            PasswordResult::Wrong,
            "attempt {i}"
        );
    }
    match check(&mut c, 20, "pw", "open sesame", "192.0.2.7").await {
        PasswordResult::Throttled { retry_after } => assert!(retry_after >= 1),
        other => panic!("expected throttled, got {other:?}"),
    }
    // Another address is not locked out by that one.
    assert!(matches!(
        check(&mut c, 21, "pw", "open sesame", "192.0.2.8").await,
        PasswordResult::Granted(_)
    ));
}

#[tokio::test]
async fn concurrent_checks_beyond_the_bound_are_refused_busy() {
    // The bound under test is argon2's: sixty checks at once keep the
    // machine's cores busy hashing, which can hold a check's read of the
    // link past the edge deadline (a 503 at the edge, as nginx's own
    // timeout would give it); the deadline is taken out of the picture.
    let d = Daemon::start_with(&["--edge-timeout-ms", "60000"]).await;
    d.create(json!({"url": "https://e.com/secret", "alias": "pw", "password": "open sesame"}))
        .await;
    let mut c = d.ipc().await;
    let n = 60u32;
    for id in 0..n {
        // Each from its own address, so the throttle stays out of it.
        c.send(&Request::CheckPassword {
            id,
            code: "pw".into(),
            password: "open sesame".into(),
            client: format!("198.51.100.{id}"),
        })
        .await;
    }
    let mut got: HashMap<&'static str, u32> = HashMap::new();
    for _ in 0..n {
        let reply = tokio::time::timeout(Duration::from_secs(120), c.recv())
            .await
            .expect("every check is answered")
            .expect("a reply");
        let kind = match reply {
            Reply::Password {
                result: PasswordResult::Granted(_),
                ..
            } => "granted",
            Reply::Password {
                result: PasswordResult::Busy,
                ..
            } => "busy",
            other => panic!("unexpected {other:?}"),
        };
        *got.entry(kind).or_default() += 1;
    }
    let busy = got.get("busy").copied().unwrap_or(0);
    assert!(busy > 0, "no check was refused: {got:?}");
    assert!(got.get("granted").copied().unwrap_or(0) >= 18, "{got:?}");
}
