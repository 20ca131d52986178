//! `backup` while the daemon creates links, `restore` into another data
//! directory, a daemon started on it finds every link acknowledged before
//! the backup began; `restore` refuses while a daemon runs, a file that is
//! not a database, and a database of another deployment key.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{cli_in, http_unix, stderr, Daemon};
use serde_json::json;
use shortlink_core::DeploymentKey;

/// `(code, url)` of every link the loop had acknowledged, in order.
type Acked = Arc<Mutex<Vec<(String, String)>>>;

/// Creates links through the API until `stop`, recording each one
/// acknowledged (201).
fn create_loop(api: PathBuf, key: String, acked: Acked, stop: Arc<AtomicBool>) {
    tokio::spawn(async move {
        let mut i = 0u64;
        while !stop.load(Ordering::Relaxed) {
            i += 1;
            let url = format!("https://e.com/load/{i}");
            let body = json!({ "url": url }).to_string().into_bytes();
            let headers = [
                ("x-api-key", key.as_str()),
                ("content-type", "application/json"),
            ];
            let (s, _, v) = http_unix(&api, "POST", "/api/v1/links", &headers, Some(body))
                .await
                .unwrap();
            assert_eq!(s, 201, "{v}");
            acked
                .lock()
                .unwrap()
                .push((v["code"].as_str().unwrap().to_string(), url));
        }
    });
}

async fn wait_for(acked: &Acked, n: usize) {
    let ok = common::eventually(Duration::from_secs(20), || async {
        acked.lock().unwrap().len() >= n
    })
    .await;
    assert!(ok, "the create loop made fewer than {n} links");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_under_writes_restores_every_acknowledged_link() {
    let a = Daemon::start_on_sqlite().await;
    // A sealed app secret: the restore checks the key with it.
    let out = a.cli(&["app", "create", "--name", "ci", "--scopes", "links:read"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let acked: Acked = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    create_loop(
        a.api_path(),
        a.admin_key.clone(),
        acked.clone(),
        stop.clone(),
    );
    wait_for(&acked, 50).await;

    let backup = a.data_dir().join("backup.db");
    let before = acked.lock().unwrap().clone();
    let (dir, file) = (a.data_dir().to_path_buf(), backup.clone());
    let out =
        tokio::task::spawn_blocking(move || cli_in(&dir, &["backup", file.to_str().unwrap()], ""))
            .await
            .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("integrity ok"), "{}", stderr(&out));
    // The loop went on during and after the backup.
    wait_for(&acked, before.len() + 20).await;
    stop.store(true, Ordering::Relaxed);
    let mode = std::fs::metadata(&backup).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);

    let mut b = Daemon::start_on_sqlite().await;
    // Refused while b runs: the database stays b's.
    let out = b.cli(&["restore", backup.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("a daemon is running") && stderr(&out).contains("control.sock"),
        "{}",
        stderr(&out)
    );
    b.sigterm();

    // Not a database: refused, nothing replaced.
    let junk = b.data_dir().join("junk.db");
    std::fs::write(&junk, "code,url\n".repeat(200)).unwrap();
    let out = b.cli(&["restore", junk.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("not an SQLite database"),
        "{}",
        stderr(&out)
    );

    // Another deployment key: its sealed secrets do not open.
    let key = b.data_dir().join("key");
    std::fs::remove_file(&key).unwrap();
    DeploymentKey::from_bytes([9; 32]).write_new(&key).unwrap();
    let out = b.cli(&["restore", backup.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("another deployment key"),
        "{}",
        stderr(&out)
    );
    std::fs::remove_file(&key).unwrap();
    b.key.write_new(&key).unwrap();

    let out = b.cli(&["--json", "restore", backup.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(&common::stdout(&out)).unwrap();
    assert_eq!(v["file"], backup.to_str().unwrap());
    assert!(v["schema_version"].as_i64().unwrap() >= 7, "{v}");
    // Another history: the workers' change positions do not carry over.
    let store_id = |p: &std::path::Path| -> i64 {
        let c = rusqlite::Connection::open(p).unwrap();
        c.query_row("SELECT store_id FROM store_meta", [], |r| r.get(0))
            .unwrap()
    };
    assert_ne!(
        store_id(&backup),
        store_id(&b.data_dir().join("shortlink.db"))
    );
    b.spawn().await;
    // The restored database has a's keys.
    b.admin_key = a.admin_key.clone();
    for (code, url) in &before {
        let (s, v) = b.req("GET", &format!("/api/v1/links/{code}"), None).await;
        assert_eq!(s, 200, "{code} acknowledged before the backup: {v}");
        assert_eq!(v["url"], url.as_str());
    }
    // And new creates there take no restored code.
    let fresh = b
        .create(json!({"url": "https://e.com/after-restore"}))
        .await;
    assert!(!before.iter().any(|(c, _)| fresh["code"] == c.as_str()));
}

#[test]
fn backup_refuses_to_replace_a_file_without_force() {
    let dir = tempfile::tempdir().unwrap();
    DeploymentKey::generate()
        .unwrap()
        .write_new(&dir.path().join("key"))
        .unwrap();
    // The first admin command makes the database.
    let out = cli_in(dir.path(), &["key", "list"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let file = dir.path().join("older-backup.db");
    std::fs::write(&file, "an older backup").unwrap();
    let out = cli_in(dir.path(), &["backup", file.to_str().unwrap()], "");
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains(file.to_str().unwrap()) && err.contains("--force"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "an older backup");

    let out = cli_in(
        dir.path(),
        &["backup", "--force", file.to_str().unwrap()],
        "",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("integrity ok"), "{}", stderr(&out));
    let head = std::fs::read(&file).unwrap();
    assert!(head.starts_with(b"SQLite format 3\0"), "not replaced");
}
