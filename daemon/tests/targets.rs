//! Target host lists against a real daemon: every spelling of a blocked host
//! is refused on every path a target comes in by, and a list entry that is
//! not a host stops the daemon at start.

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{http_unix, Daemon};
use serde_json::{json, Value};

/// Spellings of blocked hosts, with the normal form the error must name.
const BYPASSES: &[(&str, &str)] = &[
    ("https://evil.com./", "evil.com"),
    ("https://EVIL.COM/", "evil.com"),
    ("https://a.evil.com./x", "a.evil.com"),
    ("https://evil.com:443/", "evil.com"),
    ("https://evil.com.:8443/", "evil.com"),
    ("https://user@evil.com/", "evil.com"),
    ("https://user:pw@A.Evil.Com./", "a.evil.com"),
    ("https://%65vil.com/", "evil.com"),
    ("https://ev%69l%2Ecom/", "evil.com"),
    ("https://xn--bcher-kva.example/", "xn--bcher-kva.example"),
    ("https://www.BÜCHER.example./", "www.xn--bcher-kva.example"),
];

async fn blocking_daemon() -> Daemon {
    Daemon::start_with(&["--block-hosts", "evil.com,bücher.example"]).await
}

/// The error names the host in its normal form and says it is blocked.
fn assert_names_host(path: &str, url: &str, host: &str, message: &str) {
    assert!(
        message.contains(&format!("\"{host}\"")) && message.contains("blocked"),
        "{path}: {url} was refused without naming {host}: {message}"
    );
}

/// A refused create: 422 invalid_url on `field`, naming the host.
fn assert_refused(path: &str, url: &str, host: &str, field: &str, (s, v): (u16, Value)) {
    assert_eq!(s, 422, "{path}: {url} was accepted: {v}");
    assert_eq!(v["error"]["code"], "invalid_url", "{path}: {url}: {v}");
    assert_eq!(v["error"]["field"], field, "{path}: {url}: {v}");
    assert_names_host(path, url, host, v["error"]["message"].as_str().unwrap());
}

#[tokio::test]
async fn create_and_batch_refuse_every_spelling_of_a_blocked_host() {
    let d = blocking_daemon().await;
    for &(url, host) in BYPASSES {
        let r = d
            .req("POST", "/api/v1/links", Some(json!({ "url": url })))
            .await;
        assert_refused("create", url, host, "url", r);
        let r = d
            .req(
                "POST",
                "/api/v1/links",
                Some(json!({"url": "https://ok.example/", "targets": {"ios": url}})),
            )
            .await;
        assert_refused("create targets.ios", url, host, "targets.ios", r);
    }
    let items: Vec<Value> = BYPASSES
        .iter()
        .map(|(url, _)| json!({ "url": url }))
        .chain([json!({"url": "https://ok.example/"})])
        .collect();
    let (s, v) = d
        .req(
            "POST",
            "/api/v1/links/batch",
            Some(json!({ "links": items })),
        )
        .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(
        (v["created"].as_u64(), v["failed"].as_u64()),
        (Some(1), Some(BYPASSES.len() as u64))
    );
    for (i, &(url, host)) in BYPASSES.iter().enumerate() {
        let item = &v["results"][i];
        assert_eq!(item["status"], 422, "batch: {url}: {item}");
        assert_names_host(
            "batch",
            url,
            host,
            item["error"]["message"].as_str().unwrap(),
        );
    }
    // Only the good item was stored.
    let (_, page) = d.req("GET", "/api/v1/links", None).await;
    assert_eq!(page["links"].as_array().unwrap().len(), 1, "{page}");
}

#[tokio::test]
async fn patch_refuses_every_spelling_of_a_blocked_host() {
    let d = blocking_daemon().await;
    let code = d.create(json!({"url": "https://ok.example/"})).await["code"]
        .as_str()
        .unwrap()
        .to_string();
    let path = format!("/api/v1/links/{code}");
    for &(url, host) in BYPASSES {
        let r = d.req("PATCH", &path, Some(json!({ "url": url }))).await;
        assert_refused("patch url", url, host, "url", r);
        for device in ["desktop", "mobile", "ios", "android"] {
            let r = d
                .req("PATCH", &path, Some(json!({"targets": { device: url }})))
                .await;
            assert_refused("patch targets", url, host, &format!("targets.{device}"), r);
        }
    }
    let (_, got) = d.req("GET", &path, None).await;
    assert_eq!(got["url"], "https://ok.example/");
    assert_eq!(got["targets"]["ios"], Value::Null);
}

#[tokio::test]
async fn import_refuses_every_spelling_of_a_blocked_host() {
    let d = blocking_daemon().await;
    let rows: Vec<Value> = BYPASSES
        .iter()
        .enumerate()
        .map(|(i, (url, _))| json!([i + 2, url, null, null, null]))
        .chain([json!([100, "https://ok.example/", null, null, null])])
        .collect();
    let (s, _, v) = http_unix(
        &d.data_dir().join("control.sock"),
        "POST",
        "/api/v1/import",
        &[],
        Some(json!({ "rows": rows }).to_string().into_bytes()),
    )
    .await
    .unwrap();
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["imported"], 1, "{v}");
    let errors = v["errors"].as_array().unwrap();
    assert_eq!(errors.len(), BYPASSES.len(), "{v}");
    for (i, &(url, host)) in BYPASSES.iter().enumerate() {
        assert_eq!(errors[i]["line"], i + 2);
        assert_eq!(errors[i]["field"], "url");
        assert_names_host("import", url, host, errors[i]["message"].as_str().unwrap());
    }
}

#[tokio::test]
async fn the_allow_list_matches_normal_forms_too() {
    let d = Daemon::start_with(&["--allow-hosts", "Good.Example."]).await;
    for url in [
        "https://good.example/",
        "https://WWW.good.example.:8443/x",
        "https://g%6Fod.example/",
    ] {
        let (s, v) = d
            .req("POST", "/api/v1/links", Some(json!({ "url": url })))
            .await;
        assert_eq!(s, 201, "{url}: {v}");
    }
    for (url, host) in [
        ("https://good.example.evil.com/", "good.example.evil.com"),
        ("https://evilgood.example/", "evilgood.example"),
    ] {
        let (s, v) = d
            .req("POST", "/api/v1/links", Some(json!({ "url": url })))
            .await;
        assert_eq!(s, 422, "{url}: {v}");
        let message = v["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(&format!("\"{host}\"")) && message.contains("allowed"),
            "{message}"
        );
    }
}

/// `shortlinkd serve` with `args` and a key (so nothing else stops it):
/// it must exit at once with an error; returns what it said.
fn serve_fails(dir: &std::path::Path, args: &[&str]) -> String {
    let mut child = Command::new(common::BIN)
        .arg("serve")
        .arg("--data-dir")
        .arg(dir)
        .args(args)
        .env_remove("SHORTLINKD_CONFIG")
        .env_remove("SHORTLINKD_BLOCK_HOSTS")
        .env_remove("SHORTLINKD_ALLOW_HOSTS")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("serve {args:?} started and kept running");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success(), "serve {args:?} exited 0");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_bad_list_entry_stops_the_daemon_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let key = shortlink_core::DeploymentKey::generate().unwrap();
    key.write_new(&dir.path().join("key")).unwrap();
    let err = serve_fails(dir.path(), &["--block-hosts", "ok.example,evil.com/path"]);
    assert!(
        err.contains("evil.com/path") && err.contains("--block-hosts"),
        "{err}"
    );
    let err = serve_fails(dir.path(), &["--allow-hosts", "user@good.example"]);
    assert!(
        err.contains("user@good.example") && err.contains("--allow-hosts"),
        "{err}"
    );
    let file = dir.path().join("shortlinkd.toml");
    std::fs::write(&file, "[targets]\nblock_hosts = [\"evil.com\", \"a..b\"]\n").unwrap();
    let err = serve_fails(dir.path(), &["--config", file.to_str().unwrap()]);
    assert!(
        err.contains("targets.block_hosts") && err.contains("\"a..b\""),
        "{err}"
    );
    assert!(!dir.path().join("api.sock").exists(), "nothing was served");
}
