//! A daemon whose PostgreSQL is lost the ways a machine is lost: a server
//! that hangs (its processes stopped, as a crashed host or a cut network
//! looks: connections stay open, nothing answers) is met with the same
//! fast JSON 503 as a stopped one, and health answers; a URL listing a
//! dead server before the live one works (libpq's host list, followed on
//! failover); a daemon started while the server is down waits for it,
//! saying so once, and becomes ready when it answers.

mod common;

use std::time::Duration;

use common::{http_unix, Daemon, BIN};
use serde_json::{json, Value};
use testpg::PgCluster;

/// Generous for any machine: the daemon's own bound in these tests is a
/// few seconds (`--database-timeout 2`).
const ANSWER: Duration = Duration::from_secs(60);

async fn node(cluster: &PgCluster, url: &str) -> Daemon {
    common::on_cluster(cluster, url, &["--database-timeout", "2"]).await
}

/// `d`'s answer to `method path`, or a failure naming the request if it
/// does not come within [`ANSWER`].
async fn answer(d: &Daemon, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    tokio::time::timeout(ANSWER, d.req(method, path, body))
        .await
        .unwrap_or_else(|_| panic!("{method} {path} hung for {ANSWER:?}:\n{}", d.log()))
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

/// Health of the daemon whose API socket is `api`, if it answers.
async fn health(api: &std::path::Path) -> Option<(u16, Value)> {
    http_unix(api, "GET", "/api/v1/health", &[], None)
        .await
        .ok()
        .map(|(s, _, v)| (s, v))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemon_started_before_its_database_waits_and_becomes_ready() {
    let cluster = PgCluster::start("late");
    let url = cluster.create_db("links");
    cluster.stop();
    let dir = tempfile::tempdir().unwrap();
    shortlink_core::DeploymentKey::from_bytes(common::TEST_KEY)
        .write_new(&dir.path().join("key"))
        .unwrap();
    let log_path = dir.path().join("daemon.log");
    let password = cluster.password_file();
    let mut child = std::process::Command::new(BIN)
        .arg("serve")
        .arg("--data-dir")
        .arg(dir.path())
        .args(["--database", &url, "--database-password-file"])
        .arg(&password)
        .env("RUST_LOG", "info")
        .env_remove("SHORTLINKD_CONFIG")
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log_path).unwrap())
        .spawn()
        .unwrap();
    let log = || std::fs::read_to_string(&log_path).unwrap_or_default();
    let api = dir.path().join("api.sock");

    // It waits (said once), alive, not ready.
    let deadline = tokio::time::Instant::now() + ANSWER;
    while !log().contains("waiting for it") {
        assert!(child.try_wait().unwrap().is_none(), "exited: {}", log());
        assert!(
            tokio::time::Instant::now() < deadline,
            "no word of waiting: {}",
            log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(health(&api).await.is_none(), "ready without a database");

    cluster.restart();
    let deadline = tokio::time::Instant::now() + ANSWER;
    loop {
        assert!(child.try_wait().unwrap().is_none(), "exited: {}", log());
        if let Some((200, v)) = health(&api).await {
            assert_eq!(v["status"], "ok", "{v}");
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "not ready after the database came up: {}",
            log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let text = log();
    assert_eq!(
        text.matches("cannot be reached at start").count(),
        1,
        "said once per wait: {text}"
    );
    assert!(text.contains("PostgreSQL answers; starting"), "{text}");
    // Not reported as an outage of a running daemon as well.
    assert!(!text.contains("cached redirects go on"), "{text}");
    assert!(!text.contains("key file"), "{text}");
    child.kill().unwrap();
    child.wait().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_login_at_start_is_an_error_naming_the_database() {
    let cluster = PgCluster::start("refused");
    let url = cluster.create_db("links");
    let dir = tempfile::tempdir().unwrap();
    shortlink_core::DeploymentKey::from_bytes(common::TEST_KEY)
        .write_new(&dir.path().join("key"))
        .unwrap();
    let wrong = dir.path().join("wrong-password");
    std::fs::write(&wrong, "not-the-password\n").unwrap();
    std::fs::set_permissions(&wrong, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let out = tokio::time::timeout(
        ANSWER,
        tokio::process::Command::new(BIN)
            .arg("serve")
            .arg("--data-dir")
            .arg(dir.path())
            .args(["--database", &url, "--database-password-file"])
            .arg(&wrong)
            .env_remove("SHORTLINKD_CONFIG")
            .output(),
    )
    .await
    .expect("a refused login stops the daemon, it is no outage to wait out")
    .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("cannot open the database postgres://")
            && err.contains("password authentication failed")
            && !err.contains("key file"),
        "{err}"
    );
}

/// Every row of `links` locked in a transaction of the test's own.
struct LinksLocked {
    release: tokio::sync::oneshot::Sender<()>,
    holder: tokio::task::JoinHandle<()>,
}

impl LinksLocked {
    /// Locks them; returns once the lock is held.
    async fn hold(cluster: &PgCluster, db: &str) -> Self {
        let (mut client, connection) =
            tokio_postgres::connect(&cluster.url_with_password(db), tokio_postgres::NoTls)
                .await
                .unwrap();
        tokio::spawn(connection);
        let (held_tx, held) = tokio::sync::oneshot::channel();
        let (release, released) = tokio::sync::oneshot::channel::<()>();
        let holder = tokio::spawn(async move {
            let tx = client.transaction().await.unwrap();
            tx.batch_execute("SELECT 1 FROM links FOR UPDATE")
                .await
                .unwrap();
            let _ = held_tx.send(());
            let _ = released.await;
            tx.rollback().await.unwrap();
        });
        held.await.expect("the lock is held");
        Self { release, holder }
    }

    /// Rolls the transaction back; returns once it is.
    async fn release(self) {
        let _ = self.release.send(());
        self.holder.await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_held_past_the_lock_timeout_is_a_503_not_a_500() {
    let cluster = PgCluster::start("locked");
    let url = cluster.create_db("links");
    let d = node(&cluster, &url).await;
    let made = d.create(json!({"url": "https://e.com/locked"})).await;
    let code = made["code"].as_str().expect("a code").to_string();
    let lock = LinksLocked::hold(&cluster, "links").await;
    let path = format!("/api/v1/links/{code}");
    let edit = || {
        answer(
            &d,
            "PATCH",
            &path,
            Some(json!({"url": "https://e.com/edited"})),
        )
    };
    // The edit waits for the row lock until lock_timeout (the
    // --database-timeout of 2 s) ends it.
    let (s, v) = edit().await;
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (503, Some("database_unavailable")),
        "{v}"
    );
    lock.release().await;
    let (s, v) = edit().await;
    assert_eq!(s, 200, "{v}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_on_a_server_that_hangs_mid_request_is_given_up() {
    let cluster = PgCluster::start("midhang");
    let url = cluster.create_db("links");
    let d = common::on_cluster(
        &cluster,
        &url,
        &[
            "--database-timeout",
            "2",
            "--database-statement-timeout",
            "3",
        ],
    )
    .await;
    let made = d.create(json!({"url": "https://e.com/midhang"})).await;
    let code = made["code"].as_str().expect("a code").to_string();
    let lock = LinksLocked::hold(&cluster, "links").await;
    // The edit reaches the server and waits for the lock; then the server
    // stops, so its lock_timeout never fires and nothing ever answers. The
    // daemon gives the request up (statement timeout + database timeout)
    // instead of waiting for ever.
    let edit = {
        let path = format!("/api/v1/links/{code}");
        let d = &d;
        async move {
            answer(
                d,
                "PATCH",
                &path,
                Some(json!({"url": "https://e.com/never"})),
            )
            .await
        }
    };
    let freeze = async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        cluster.freeze();
    };
    let ((s, v), ()) = tokio::join!(edit, freeze);
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (503, Some("database_unavailable")),
        "{v}"
    );
    cluster.thaw();
    lock.release().await;
    // The daemon works on once the server is back.
    let deadline = tokio::time::Instant::now() + ANSWER;
    loop {
        let (s, v) = answer(&d, "GET", &format!("/api/v1/links/{code}"), None).await;
        if s == 200 {
            assert_eq!(v["url"], "https://e.com/midhang", "{v}");
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{s} {v}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_url_listing_a_hung_server_first_reaches_the_live_one() {
    let hung = PgCluster::start("hungfirst");
    let live = PgCluster::start("livesecond");
    live.create_db("links");
    hung.freeze();
    // The hung server takes the TCP connection and never greets: its
    // attempt is bounded as a whole (--database-timeout 2), then the next
    // server is tried.
    let url = format!(
        "postgres://{}@127.0.0.1:{},127.0.0.1:{}/links?target_session_attrs=read-write",
        testpg::USER,
        hung.port,
        live.port
    );
    let d = node(&live, &url).await;
    let made = d
        .create(json!({"url": "https://e.com/past-the-hung"}))
        .await;
    let code = made["code"].as_str().expect("a code");
    let (s, v) = answer(&d, "GET", &format!("/api/v1/links/{code}"), None).await;
    assert_eq!(
        (s, v["url"].as_str()),
        (200, Some("https://e.com/past-the-hung"))
    );
    hung.thaw();
}
