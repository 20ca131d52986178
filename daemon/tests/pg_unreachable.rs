//! A daemon whose PostgreSQL is lost the ways a machine is lost: a server
//! that hangs (its processes stopped, as a crashed host or a cut network
//! looks: connections stay open, nothing answers) is met with the same
//! fast JSON 503 as a stopped one, and health answers; a URL listing a
//! dead server before the live one works (libpq's host list, followed on
//! failover).

mod common;

use std::time::Duration;

use common::Daemon;
use serde_json::{json, Value};
use testpg::PgCluster;

/// Generous for any machine: the daemon's own bound in these tests is a
/// few seconds (`--database-timeout 2`).
const ANSWER: Duration = Duration::from_secs(60);

async fn node(cluster: &PgCluster, url: &str) -> Daemon {
    let password = cluster.password_file();
    Daemon::start_with(&[
        "--database",
        url,
        "--database-password-file",
        password.to_str().unwrap(),
        "--database-timeout",
        "2",
    ])
    .await
}

/// `d`'s answer to `method path`, or a failure naming the request if it
/// does not come within [`ANSWER`].
async fn answer(d: &Daemon, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    tokio::time::timeout(ANSWER, d.req(method, path, body))
        .await
        .unwrap_or_else(|_| panic!("{method} {path} hung for {ANSWER:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_database_is_answered_503_and_health_answers_until_it_is_back() {
    let cluster = PgCluster::start("hung");
    let url = cluster.create_db("links");
    let d = node(&cluster, &url).await;
    let made = d.create(json!({"url": "https://e.com/before"})).await;
    assert!(made["code"].is_string(), "{made}");

    cluster.freeze();
    let (s, v) = answer(
        &d,
        "POST",
        "/api/v1/links",
        Some(json!({"url": "https://e.com/during"})),
    )
    .await;
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (503, Some("database_unavailable")),
        "{v}"
    );
    let (s, v) = answer(&d, "GET", "/api/v1/health", None).await;
    assert_eq!((s, v["status"].as_str()), (503, Some("unavailable")), "{v}");
    cluster.thaw();

    // Back: creates work again (the first may still meet the outage's
    // end; wait for one to pass, with a bound).
    let deadline = tokio::time::Instant::now() + ANSWER;
    loop {
        let (s, v) = answer(
            &d,
            "POST",
            "/api/v1/links",
            Some(json!({"url": "https://e.com/after"})),
        )
        .await;
        if s == 201 {
            assert!(v["code"].is_string(), "{v}");
            break;
        }
        assert_eq!(s, 503, "{v}");
        assert!(
            tokio::time::Instant::now() < deadline,
            "creates still fail after the thaw: {v}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let (s, v) = answer(&d, "GET", "/api/v1/health", None).await;
    assert_eq!((s, v["status"].as_str()), (200, Some("ok")), "{v}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_url_listing_a_dead_server_first_reaches_the_live_one() {
    let cluster = PgCluster::start("hostlist");
    cluster.create_db("links");
    // Nothing listens on a port just freed.
    let dead = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!(
        "postgres://{}@127.0.0.1:{dead},127.0.0.1:{}/links?target_session_attrs=read-write",
        testpg::USER,
        cluster.port
    );
    let d = node(&cluster, &url).await;
    let made = d.create(json!({"url": "https://e.com/listed"})).await;
    let code = made["code"].as_str().expect("a code");
    let (s, v) = answer(&d, "GET", &format!("/api/v1/links/{code}"), None).await;
    assert_eq!((s, v["url"].as_str()), (200, Some("https://e.com/listed")));
}
