//! The command line, with and without a running daemon.

mod common;

use common::{cli_in, stderr, stdout, unix, Daemon, BIN};
use serde_json::Value;

#[test]
fn keygen_writes_a_private_key_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("key");
    let out = std::process::Command::new(BIN)
        .arg("keygen")
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.trim().len(), 64);
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let again = std::process::Command::new(BIN)
        .arg("keygen")
        .arg(&path)
        .output()
        .unwrap();
    assert!(!again.status.success());
    assert!(stderr(&again).contains("exists"), "{}", stderr(&again));
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        text,
        "not overwritten"
    );
}

fn direct_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    shortlink_core::DeploymentKey::generate()
        .unwrap()
        .write_new(&dir.path().join("key"))
        .unwrap();
    dir
}

#[test]
fn works_without_a_daemon() {
    let dir = direct_dir();
    let run = |args: &[&str]| cli_in(dir.path(), args, "");
    let out = run(&[
        "key",
        "create",
        "--name",
        "ci",
        "--scopes",
        "links:read,stats:read",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let secret = stdout(&out);
    assert_eq!(secret.lines().count(), 1, "only the secret on stdout");
    assert!(secret.trim().starts_with("slk_") && secret.trim().len() == 56);
    let out = run(&["key", "create", "--name", "x", "--scopes", "links:fly"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("links:fly"));

    let out = run(&[
        "link",
        "create",
        "https://e.com/x",
        "--alias",
        "cli-made",
        "--tag",
        "a,b",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "http://localhost/cli-made");
    let out = run(&["link", "create", "notaurl"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("invalid_url"), "{}", stderr(&out));
    let out = run(&["link", "get", "cli-made"]);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["url"], "https://e.com/x");
    assert_eq!(v["tags"], serde_json::json!(["a", "b"]));
    let out = run(&["link", "list"]);
    assert!(
        stdout(&out).contains("cli-made\t0\tactive\thttps://e.com/x"),
        "{}",
        stdout(&out)
    );
    let out = run(&["stats", "cli-made", "--json"]);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["total"], 0);
    let out = run(&["link", "delete", "cli-made"]);
    assert!(out.status.success());
    let out = run(&["link", "get", "cli-made"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("HTTP 404"), "{}", stderr(&out));
    // Nothing is left listening.
    assert!(!dir.path().join("control.sock").exists());
}

#[test]
fn users_from_stdin() {
    let dir = direct_dir();
    let out = cli_in(
        dir.path(),
        &["user", "add", "alice", "--password-stdin"],
        "correct horse battery\n",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let out = cli_in(dir.path(), &["user", "add", "alice"], "another password\n");
    assert!(!out.status.success());
    assert!(stderr(&out).contains("already taken"), "{}", stderr(&out));
    let out = cli_in(dir.path(), &["user", "add", "bob"], "short\n");
    assert!(!out.status.success());
    assert!(stderr(&out).contains("weak_password"));
    let out = cli_in(
        dir.path(),
        &["user", "passwd", "alice"],
        "a new long password\n",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let out = cli_in(
        dir.path(),
        &["user", "passwd", "nobody"],
        "a new long password\n",
    );
    assert!(!out.status.success());
    // The stored hash verifies the new password only.
    let conn = rusqlite::Connection::open(dir.path().join("shortlink.db")).unwrap();
    let hash: String = conn
        .query_row(
            "SELECT password_hash FROM users WHERE name = 'alice'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(shortlinkd::users::verify_password(
        "a new long password",
        &hash
    ));
    assert!(!shortlinkd::users::verify_password(
        "correct horse battery",
        &hash
    ));
    // List (table and JSON) and delete.
    let out = cli_in(
        dir.path(),
        &["user", "add", "carol"],
        "carol's long password\n",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let out = cli_in(dir.path(), &["user", "list", "--json"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = list["users"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["alice", "carol"]);
    assert!(!String::from_utf8_lossy(&out.stdout).contains("argon2"));
    let out = cli_in(dir.path(), &["user", "delete", "alice"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let out = cli_in(dir.path(), &["user", "list"], "");
    let table = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        table.contains("carol") && !table.contains("alice"),
        "{table}"
    );
    let out = cli_in(dir.path(), &["user", "delete", "alice"], "");
    assert!(!out.status.success());
    assert!(stderr(&out).contains("404"), "{}", stderr(&out));
}

#[tokio::test]
async fn import_and_export_through_the_daemon() {
    let d = Daemon::start().await;
    let csv_path = d.data_dir().join("in.csv");
    std::fs::write(
        &csv_path,
        "url,alias,expires_at,tags\n\
         https://e.com/1,imp-one,,news\n\
         notaurl,,,\n\
         https://e.com/2,,2099-01-01T00:00:00Z,\"a,b\"\n\
         https://e.com/3,imp-one,,\n\
         https://e.com/4,,yesterday,\n\
         https://e.com/5,,,\n",
    )
    .unwrap();
    let out = d.cli(&["import", csv_path.to_str().unwrap()]);
    let err = stderr(&out);
    assert_eq!(
        out.status.code(),
        Some(2),
        "bad rows make the exit status 2: {err}"
    );
    assert!(err.contains("line 3: url: "), "{err}");
    assert!(err.contains("line 5: alias: "), "{err}");
    assert!(err.contains("line 6: expires_at: "), "{err}");
    assert!(
        err.contains("3 imported, 0 already present, 3 bad rows"),
        "{err}"
    );
    let (_, page) = d.req("GET", "/api/v1/links?limit=100", None).await;
    let urls: Vec<&str> = page["links"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["url"].as_str().unwrap())
        .collect();
    assert_eq!(
        urls,
        vec!["https://e.com/5", "https://e.com/2", "https://e.com/1"]
    );
    let (_, two) = d
        .req(
            "GET",
            &format!(
                "/api/v1/links/{}",
                page["links"][1]["code"].as_str().unwrap()
            ),
            None,
        )
        .await;
    assert_eq!(two["tags"], serde_json::json!(["a", "b"]));
    assert_eq!(unix(&two["expires_at"]), 4070908800i64);

    let out_path = d.data_dir().join("out.csv");
    let out = d.cli(&["export", out_path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let mut r = csv::Reader::from_path(&out_path).unwrap();
    assert_eq!(
        r.headers().unwrap().iter().collect::<Vec<_>>(),
        vec![
            "code",
            "url",
            "alias",
            "expires_at",
            "tags",
            "clicks",
            "bot_clicks",
            "created_at",
            "redirect",
            "max_visits",
            "disabled",
            "target_desktop",
            "target_mobile",
            "target_ios",
            "target_android",
            "forward_query",
            "country_targets",
            "protected",
            "variants",
            "check",
            "title",
            "renew_on_access",
            "team",
            "creator"
        ]
    );
    let rows: Vec<csv::StringRecord> = r.records().map(|x| x.unwrap()).collect();
    assert_eq!(rows.len(), 3);
    let one = rows.iter().find(|r| &r[1] == "https://e.com/1").unwrap();
    assert_eq!(&one[2], "imp-one");
    assert_eq!(&one[4], "news");
    let two = rows.iter().find(|r| &r[1] == "https://e.com/2").unwrap();
    assert_eq!(&two[3], "2099-01-01T00:00:00Z");
    assert_eq!(&two[4], "a,b");
    // The export imports back into a fresh database.
    let other = direct_dir();
    let out = cli_in(other.path(), &["import", out_path.to_str().unwrap()], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let out = cli_in(other.path(), &["link", "get", "imp-one"], "");
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["url"], "https://e.com/1");
}

#[tokio::test]
async fn cli_changes_go_through_the_running_daemon() {
    let d = Daemon::start().await;
    let out = d.cli(&[
        "link",
        "create",
        "https://e.com/live",
        "--alias",
        "via-daemon",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    // The daemon made it (its metrics count it) and the edge learnt the alias.
    assert_eq!(d.metric("shortlinkd_links_created_total").await, 1.0);
    let mut c = d.ipc().await;
    assert_eq!(c.subscribe(1).await, vec!["via-daemon".to_string()]);
    let out = d.cli(&["app", "list"]);
    assert!(out.status.success());
    assert!(stdout(&out).starts_with("ID\tAPP_ID"));
}

/// Flags beat the environment, which beats the file, which beats the
/// defaults; a flag may stand before or after the subcommand.
#[test]
fn settings_precedence() {
    let dir = direct_dir();
    let file = dir.path().join("c.toml");
    std::fs::write(
        &file,
        "base_url = \"https://file.example\"\nmin_length = 8\n",
    )
    .unwrap();
    let run = |env: &[(&str, &str)], args: &[&str]| {
        let mut cmd = std::process::Command::new(BIN);
        cmd.arg("--data-dir").arg(dir.path()).args(args);
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("SHORTLINKD_") {
                cmd.env_remove(name);
            }
        }
        let out = cmd
            .env_remove("RUST_LOG")
            .envs(env.iter().copied())
            .output()
            .unwrap();
        (out.status.success(), stdout(&out), stderr(&out))
    };
    let config = file.to_str().unwrap();
    let (ok, short, err) = run(&[], &["link", "create", "https://e.com/default"]);
    assert!(ok, "{err}");
    assert!(short.starts_with("http://localhost/"), "{short}");
    let (ok, short, err) = run(
        &[],
        &["--config", config, "link", "create", "https://e.com/f"],
    );
    assert!(ok, "{err}");
    assert!(short.starts_with("https://file.example/"), "{short}");
    assert_eq!(short.trim().rsplit('/').next().unwrap().len(), 8, "{short}");
    let env = [
        ("SHORTLINKD_CONFIG", config),
        ("SHORTLINKD_BASE_URL", "https://env.example"),
    ];
    let (ok, short, err) = run(&env, &["link", "create", "https://e.com/e"]);
    assert!(ok, "{err}");
    assert!(short.starts_with("https://env.example/"), "{short}");
    assert_eq!(short.trim().rsplit('/').next().unwrap().len(), 8, "{short}");
    for args in [
        &[
            "--base-url",
            "https://flag.example",
            "link",
            "create",
            "https://e.com/1",
        ][..],
        &[
            "link",
            "create",
            "https://e.com/2",
            "--base-url",
            "https://flag.example",
        ][..],
        &[
            "link",
            "--base-url",
            "https://flag.example",
            "create",
            "https://e.com/3",
        ][..],
    ] {
        let (ok, short, err) = run(&env, args);
        assert!(ok, "{args:?}: {err}");
        assert!(
            short.starts_with("https://flag.example/"),
            "{args:?}: {short}"
        );
    }
    // A comma-separated list from the environment.
    let (ok, _, err) = run(
        &[("SHORTLINKD_BLOCK_HOSTS", "x.example,e.com")],
        &["link", "create", "https://e.com/blocked"],
    );
    assert!(!ok);
    assert!(err.contains("invalid_url"), "{err}");
    // A bad value names its flag; a bad file value names its key.
    let (ok, _, err) = run(&[], &["link", "list", "--min-length", "x"]);
    assert!(!ok);
    assert!(err.contains("--min-length"), "{err}");
    let (ok, _, err) = run(&[("SHORTLINKD_MIN_LENGTH", "40")], &["link", "list"]);
    assert!(!ok);
    assert!(err.contains("min_length"), "{err}");
}
