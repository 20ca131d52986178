//! The modes of the data directory and database files; app secrets sealed.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use rusqlite_migration::{Migrations, M};
use serde_json::{json, Value};
use shortlink_core::DeploymentKey;
use shortlinkd::auth::{sign, signing_string};
use shortlinkd::timestamp::unix_now;

use crate::common::{self, cli_in, eventually, http_unix, stderr, stdout};
use crate::serve::{mode, set_mode, KillOnDrop, Serve};

#[tokio::test]
async fn data_files_are_private_whatever_the_umask() {
    let scratch = tempfile::tempdir().unwrap();
    let key = scratch.path().join("key");
    DeploymentKey::generate().unwrap().write_new(&key).unwrap();
    let key_arg = ["--key-file", key.to_str().unwrap()];
    let log = scratch.path().join("daemon.log");

    // Sockets and spool elsewhere: the directory is the daemon's and its
    // group's.
    let sockets = scratch.path().join("run");
    std::fs::create_dir(&sockets).unwrap();
    let (ipc, api) = (sockets.join("ipc.sock"), sockets.join("api.sock"));
    let spool = scratch.path().join("spool");
    std::fs::create_dir(&spool).unwrap();
    let private = scratch.path().join("private");
    let mut args = key_arg.to_vec();
    args.extend(["--ipc-socket", ipc.to_str().unwrap()]);
    args.extend(["--api-socket", api.to_str().unwrap()]);
    args.extend(["--spool-dir", spool.to_str().unwrap()]);
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

    // The default layout has the sockets and spool inside: others may only
    // reach them.
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

/// Makes `db` a database at schema v4 (before app secrets were sealed)
/// with an app whose secret is kept in clear.
fn v4_database_with_clear_app(db: &Path, app_id: &str, secret: &str) {
    let mut conn = rusqlite::Connection::open(db).unwrap();
    Migrations::new(vec![
        M::up(include_str!("../../src/store/sqlite/schema_v1.sql")),
        M::up(include_str!("../../src/store/sqlite/schema_v2.sql")),
        M::up(include_str!("../../src/store/sqlite/schema_v3.sql")),
        M::up(include_str!("../../src/store/sqlite/schema_v4.sql")),
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
