//! What the health probe tells whom, and that it tells the truth when the
//! database cannot store writes (a full disk, a WAL deleted under the
//! daemon); the modes of the files the daemon makes and that app secrets
//! are not in them in clear.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{batch, cli_in, eventually, http_unix, stderr, stdout, Daemon};
use rusqlite_migration::{Migrations, M};
use serde_json::{json, Value};
use shortlink_core::ipc::{Reply, Request};
use shortlink_core::DeploymentKey;
use shortlinkd::auth::{sign, signing_string};
use shortlinkd::store::unix_now;

const ADMIN_SCOPES: &str = "links:write,links:read,stats:read,admin";

/// A `shortlinkd serve` on a data directory the test chose, started from
/// a shell with umask 022 (what a daemon started by hand usually gets).
struct Serve {
    data: PathBuf,
    log: PathBuf,
    child: Child,
    admin_key: String,
}

impl Serve {
    async fn start(data: &Path, log: &Path, extra: &[&str]) -> Serve {
        let child = Command::new("sh")
            .arg("-c")
            .arg("umask 022; exec \"$0\" \"$@\"")
            .arg(common::BIN)
            .arg("serve")
            .arg("--data-dir")
            .arg(data)
            .args(extra)
            .env("RUST_LOG", "info")
            .env_remove("SHORTLINKD_CONFIG")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(log).unwrap())
            .spawn()
            .unwrap();
        let mut s = Serve {
            data: data.to_path_buf(),
            log: log.to_path_buf(),
            child,
            admin_key: String::new(),
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while !matches!(s.health(None).await, Ok((200, _))) {
            if let Some(status) = s.child.try_wait().unwrap() {
                panic!("daemon exited with {status}: {}", s.log());
            }
            assert!(Instant::now() < deadline, "not ready: {}", s.log());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let out = cli_in(
            data,
            &["key", "create", "--name", "admin", "--scopes", ADMIN_SCOPES],
            "",
        );
        assert!(out.status.success(), "key create: {}", stderr(&out));
        s.admin_key = stdout(&out).trim().to_string();
        s
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    async fn health(&self, key: Option<&str>) -> Result<(u16, Value), String> {
        let headers: Vec<(&str, &str)> = key.map(|k| ("x-api-key", k)).into_iter().collect();
        http_unix(
            &self.data.join("api.sock"),
            "GET",
            "/api/v1/health",
            &headers,
            None,
        )
        .await
        .map(|(s, _, v)| (s, v))
    }

    /// SIGTERM and wait.
    fn stop(&mut self) {
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        )
        .unwrap();
        self.child.wait().unwrap();
    }

    async fn post_link(&self, url: &str) -> (u16, Value) {
        let (s, _, v) = http_unix(
            &self.data.join("api.sock"),
            "POST",
            "/api/v1/links",
            &[("x-api-key", &self.admin_key)],
            Some(json!({ "url": url }).to_string().into_bytes()),
        )
        .await
        .unwrap();
        (s, v)
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A small tmpfs, unmounted when dropped (mounting needs root, which the
/// test suite runs as).
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, size: &str) -> Tmpfs {
        std::fs::create_dir_all(dir).unwrap();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size},mode=0700")])
            .arg("tmpfs")
            .arg(dir)
            .output()
            .expect("run mount");
        assert!(
            out.status.success(),
            "cannot mount a tmpfs at {} (needs root): {}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        Tmpfs(dir.to_path_buf())
    }

    /// Fills the file system; returns the filler file.
    fn fill(&self) -> PathBuf {
        use std::io::Write;
        let path = self.0.join("filler");
        let mut f = std::fs::File::create(&path).unwrap();
        for size in [64 * 1024, 4096, 1] {
            let chunk = vec![0u8; size];
            while f.write_all(&chunk).is_ok() {}
        }
        path
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

fn fields(v: &Value) -> Vec<String> {
    let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
    k.sort();
    k
}

#[tokio::test]
async fn health_tells_details_only_to_a_valid_key() {
    let d = Daemon::start().await;
    d.create(json!({"url": "https://example.com/x"})).await;

    let (s, _, v) = d.req_with("GET", "/api/v1/health", &[], None).await;
    assert_eq!(s, 200);
    assert_eq!(fields(&v), ["status", "version"], "{v}");
    assert_eq!(v["status"], "ok");
    let fp = d.fingerprint().to_string();
    assert!(!v.to_string().contains(&fp));

    let (s, v) = d.req("GET", "/api/v1/health", None).await;
    assert_eq!(s, 200);
    assert_eq!(v["status"], "ok");
    assert_eq!(v["key_fingerprint"], fp);
    assert_eq!(v["links"], 1);
    assert!(
        v["uptime_seconds"].is_u64() && v["ipc_connections"].is_i64(),
        "{v}"
    );
    assert!(v.get("problem").is_none(), "{v}");

    // A key with the fewest scopes will do; a wrong one is refused.
    let out = d.cli(&["key", "create", "--name", "probe", "--scopes", "stats:read"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let probe = stdout(&out).trim().to_string();
    let (s, _, v) = d
        .req_with("GET", "/api/v1/health", &[("x-api-key", &probe)], None)
        .await;
    assert_eq!((s, v["key_fingerprint"].as_str()), (200, Some(fp.as_str())));
    let wrong = format!("{}0", &d.admin_key[..d.admin_key.len() - 1]);
    let (s, _, v) = d
        .req_with("GET", "/api/v1/health", &[("x-api-key", &wrong)], None)
        .await;
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (401, Some("invalid_api_key"))
    );
    assert!(!v.to_string().contains(&fp));
}

#[tokio::test]
async fn a_full_disk_degrades_health_and_every_write_fails_until_space_is_back() {
    let scratch = tempfile::tempdir().unwrap();
    let data = scratch.path().join("data");
    let disk = Tmpfs::mount(&data, "3m");
    DeploymentKey::generate()
        .unwrap()
        .write_new(&data.join("key"))
        .unwrap();
    let s = Serve::start(&data, &scratch.path().join("daemon.log"), &[]).await;
    let (status, v) = s.post_link("https://example.com/before").await;
    assert_eq!(status, 201, "{v}");

    let filler = disk.fill();
    // Small writes may still fit in WAL pages already allocated; big ones
    // soon need new blocks.
    let long = format!("https://example.com/{}", "x".repeat(1800));
    let mut refused = None;
    for i in 0..400 {
        let (status, v) = s.post_link(&format!("{long}{i}")).await;
        if status != 201 {
            refused = Some((status, v));
            break;
        }
    }
    let (status, v) = refused.expect("some write must fail on a full disk");
    assert!(status >= 500, "{status} {v}");
    assert!(
        v["error"]["message"].as_str().unwrap().contains("full"),
        "{v}"
    );
    let (code, v) = s.health(Some(&s.admin_key)).await.unwrap();
    assert_eq!((code, v["status"].as_str()), (503, Some("degraded")), "{v}");
    assert!(v["problem"].as_str().unwrap().contains("full"), "{v}");
    let (code, v) = s.health(None).await.unwrap();
    assert_eq!(
        (code, fields(&v)),
        (503, vec!["status".into(), "version".into()])
    );
    assert!(
        s.log().contains("the database cannot store writes"),
        "{}",
        s.log()
    );

    std::fs::remove_file(filler).unwrap();
    let (status, v) = s.post_link("https://example.com/after").await;
    assert_eq!(status, 201, "{v}");
    let (code, v) = s.health(Some(&s.admin_key)).await.unwrap();
    assert_eq!((code, v["status"].as_str()), (200, Some("ok")), "{v}");
    assert!(s.log().contains("the database stores writes again"));
    drop(s);
}

#[tokio::test]
async fn a_deleted_wal_degrades_health_logs_once_and_refuses_writes() {
    let d = Daemon::start().await;
    let before = d.create(json!({"url": "https://example.com/kept"})).await;
    let wal = d.data_dir().join("shortlink.db-wal");
    assert!(wal.exists());
    std::fs::remove_file(&wal).unwrap();

    let degraded = eventually(Duration::from_secs(5), || async {
        let (s, v) = d.req("GET", "/api/v1/health", None).await;
        s == 503 && v["status"] == "degraded"
    })
    .await;
    assert!(degraded, "health did not notice: {}", d.log());
    let (_, v) = d.req("GET", "/api/v1/health", None).await;
    assert!(
        v["problem"]
            .as_str()
            .unwrap()
            .contains("shortlink.db-wal was deleted"),
        "{v}"
    );
    let (s, _, v) = d.req_with("GET", "/api/v1/health", &[], None).await;
    assert_eq!((s, v["status"].as_str()), (503, Some("degraded")));

    // Writes are refused, not acknowledged into a file nobody will read.
    let (s, v) = d
        .req(
            "POST",
            "/api/v1/links",
            Some(json!({"url": "https://example.com/lost"})),
        )
        .await;
    assert!(s >= 500, "{s} {v}");
    assert!(
        v["error"]["message"].as_str().unwrap().contains("deleted"),
        "{v}"
    );
    let mut ipc = d.ipc().await;
    ipc.send(&Request::Clicks {
        id: 7,
        batch: batch(1, 1, 3, false),
    })
    .await;
    match ipc.recv().await {
        Some(Reply::Error { id: 7, message }) => assert!(message.contains("deleted"), "{message}"),
        other => panic!("expected an error for the click batch, got {other:?}"),
    }
    // Reads still work: redirects go on.
    let code = before["code"].as_str().unwrap();
    let (s, _) = d.req("GET", &format!("/api/v1/links/{code}"), None).await;
    assert_eq!(s, 200);

    let log = d.log();
    assert_eq!(
        log.matches("a database file is gone").count(),
        1,
        "one error line: {log}"
    );
}

fn mode(p: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .permissions()
        .mode()
        & 0o7777
}

fn set_mode(p: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[tokio::test]
async fn data_files_are_private_whatever_the_umask() {
    let scratch = tempfile::tempdir().unwrap();
    let key = scratch.path().join("key");
    DeploymentKey::generate().unwrap().write_new(&key).unwrap();
    let key_arg = ["--key-file", key.to_str().unwrap()];
    let log = scratch.path().join("daemon.log");

    // Sockets elsewhere: the directory is the daemon's and its group's.
    let sockets = scratch.path().join("run");
    std::fs::create_dir(&sockets).unwrap();
    let (ipc, api) = (sockets.join("ipc.sock"), sockets.join("api.sock"));
    let private = scratch.path().join("private");
    let mut args = key_arg.to_vec();
    args.extend(["--ipc-socket", ipc.to_str().unwrap()]);
    args.extend(["--api-socket", api.to_str().unwrap()]);
    let child = Command::new("sh")
        .arg("-c")
        .arg("umask 022; exec \"$0\" \"$@\"")
        .arg(common::BIN)
        .args(["serve", "--data-dir", private.to_str().unwrap()])
        .args(&args)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let mut child = KillOnDrop(child);
    let ready = eventually(Duration::from_secs(10), || async {
        matches!(
            http_unix(&api, "GET", "/api/v1/health", &[], None).await,
            Ok((200, _, _))
        )
    })
    .await;
    assert!(
        ready,
        "{}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    assert_eq!(mode(&private), 0o750);
    for f in ["shortlink.db", "shortlink.db-wal", "shortlink.db-shm"] {
        assert_eq!(mode(&private.join(f)), 0o600, "{f}");
    }
    let _ = child.0.kill();
    let _ = child.0.wait();

    // The default layout has the sockets inside: others may only reach them.
    let data = scratch.path().join("data");
    let mut s = Serve::start(&data, &log, &key_arg).await;
    assert_eq!(mode(&data), 0o711);
    for f in ["shortlink.db", "shortlink.db-wal", "shortlink.db-shm"] {
        assert_eq!(mode(&data.join(f)), 0o600, "{f}");
    }
    s.stop();

    // What an earlier daemon left open to everyone is tightened, and said.
    set_mode(&data, 0o755);
    set_mode(&data.join("shortlink.db"), 0o644);
    let s = Serve::start(&data, &log, &key_arg).await;
    assert_eq!(mode(&data), 0o751);
    for f in ["shortlink.db", "shortlink.db-wal", "shortlink.db-shm"] {
        assert_eq!(mode(&data.join(f)) & 0o137, 0, "{f}");
    }
    let log = s.log();
    assert!(
        log.contains("the data directory was open to every local user"),
        "{log}"
    );
    assert!(
        log.contains("a database file was readable or writable beyond"),
        "{log}"
    );
}

/// Kills the child when dropped.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Makes `db` a database at schema v4 (before app secrets were sealed)
/// with an app whose secret is kept in clear.
fn v4_database_with_clear_app(db: &Path, app_id: &str, secret: &str) {
    let mut conn = rusqlite::Connection::open(db).unwrap();
    Migrations::new(vec![
        M::up(include_str!("../src/store/schema_v1.sql")),
        M::up(include_str!("../src/store/schema_v2.sql")),
        M::up(include_str!("../src/store/schema_v3.sql")),
        M::up(include_str!("../src/store/schema_v4.sql")),
    ])
    .to_latest(&mut conn)
    .unwrap();
    conn.execute(
        "INSERT INTO apps (app_id, name, secret, scopes, created_at) \
         VALUES (?1, 'old', ?2, 'links:write,links:read', 1)",
        [app_id, secret],
    )
    .unwrap();
}

async fn signed_post(api: &Path, app_id: &str, secret: &str, url: &str) -> (u16, Value) {
    let body = json!({ "url": url }).to_string();
    let ts = unix_now();
    let sig = sign(
        secret,
        &signing_string(ts, "POST", "/api/v1/links", body.as_bytes()),
    );
    let ts = ts.to_string();
    let headers = [
        ("x-app-id", app_id),
        ("x-timestamp", ts.as_str()),
        ("x-signature", sig.as_str()),
    ];
    let (s, _, v) = http_unix(
        api,
        "POST",
        "/api/v1/links",
        &headers,
        Some(body.into_bytes()),
    )
    .await
    .unwrap();
    (s, v)
}

#[tokio::test]
async fn app_secrets_are_sealed_in_the_database_and_old_apps_still_sign() {
    let scratch = tempfile::tempdir().unwrap();
    let data = scratch.path().join("data");
    std::fs::create_dir(&data).unwrap();
    DeploymentKey::generate()
        .unwrap()
        .write_new(&data.join("key"))
        .unwrap();
    let old_secret = "0f".repeat(32);
    v4_database_with_clear_app(
        &data.join("shortlink.db"),
        "app_0123456789abcdef",
        &old_secret,
    );

    let s = Serve::start(&data, &scratch.path().join("daemon.log"), &[]).await;
    let api = data.join("api.sock");
    let (status, v) =
        signed_post(&api, "app_0123456789abcdef", &old_secret, "https://e.com/o").await;
    assert_eq!(status, 201, "an app made before the migration signs: {v}");

    let out = cli_in(
        &data,
        &["app", "create", "--name", "new", "--scopes", "links:write"],
        "",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let field = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{k}=")))
            .unwrap()
            .to_string()
    };
    let (new_id, new_secret) = (field("app_id"), field("secret"));
    let (status, v) = signed_post(&api, &new_id, &new_secret, "https://e.com/n").await;
    assert_eq!(status, 201, "{v}");

    // What someone who copies the database gets: no secret.
    let copy = rusqlite::Connection::open_with_flags(
        data.join("shortlink.db"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap();
    let stored: Vec<String> = copy
        .prepare("SELECT secret FROM apps")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(stored.len(), 2);
    for s in &stored {
        assert!(s.starts_with("sealed1:"), "{s}");
        assert!(!s.contains(&old_secret) && !s.contains(&new_secret), "{s}");
    }
    drop(copy);
    for f in ["shortlink.db", "shortlink.db-wal"] {
        let bytes = std::fs::read(data.join(f)).unwrap();
        for clear in [&old_secret, &new_secret] {
            assert!(
                !bytes.windows(clear.len()).any(|w| w == clear.as_bytes()),
                "a secret in clear in {f}"
            );
        }
    }
    drop(s);
}
