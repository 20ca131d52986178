//! Process lifecycle: crash safety, graceful shutdown, sockets, spool files.

mod common;

use std::collections::HashSet;
use std::time::Duration;

use common::{batch, eventually, stderr, Daemon};
use serde_json::json;
use shortlink_core::ipc::{self, BatchId, ClickBatch};
use shortlink_core::spool::SpoolSeal;

#[tokio::test]
async fn sigkill_loses_nothing_acknowledged() {
    let mut d = Daemon::start().await;
    let mut created = Vec::new();
    for i in 0..30 {
        let v = d
            .create(json!({"url": format!("https://e.com/{i}"), "alias": format!("crash-{i}")}))
            .await;
        created.push((
            v["code"].as_str().unwrap().to_string(),
            v["id"].as_u64().unwrap(),
        ));
    }
    let (s, b) = d
        .req(
            "POST",
            "/api/v1/links/batch",
            Some(json!({"links": (0..200).map(|i| json!({"url": format!("https://e.com/b{i}")})).collect::<Vec<_>>()})),
        )
        .await;
    assert_eq!(s, 200);
    for r in b["results"].as_array().unwrap() {
        created.push((
            r["link"]["code"].as_str().unwrap().to_string(),
            r["link"]["id"].as_u64().unwrap(),
        ));
    }
    let mut c = d.ipc().await;
    for (i, (_, id)) in created.iter().take(10).enumerate() {
        c.clicks(i as u32, batch(100 + i as u8, *id, 3, false))
            .await;
    }
    // The moment the last ack is in, kill -9.
    d.kill9();
    d.spawn().await;
    let mut codes = HashSet::new();
    for (i, (code, _)) in created.iter().enumerate() {
        let (s, l) = d.req("GET", &format!("/api/v1/links/{code}"), None).await;
        assert_eq!(s, 200, "{code} lost after SIGKILL");
        assert_eq!(l["clicks"], if i < 10 { 3 } else { 0 }, "{code}");
        codes.insert(l["generated_code"].as_str().unwrap().to_string());
    }
    // New ids never reuse one handed out before the crash.
    for i in 0..50 {
        let v = d
            .create(json!({"url": format!("https://e.com/after{i}")}))
            .await;
        assert!(
            codes.insert(v["code"].as_str().unwrap().to_string()),
            "id reused after crash"
        );
    }
}

/// Clicks acknowledged across several folds, then SIGKILL the moment the
/// last ack is in (some batches folded into the tables, the rest only in
/// the click log): after a restart every acknowledged click is counted
/// once, in the totals and in the hourly stats, also when every batch is
/// sent again (as workers do with batches whose ack they did not get), and
/// after the recovered batches are folded and the daemon restarted again.
#[tokio::test]
async fn sigkill_between_folds_counts_every_acked_click_once() {
    let mut d = Daemon::start().await;
    let mut links = Vec::new();
    for i in 0..3 {
        let v = d.create(json!({"url": format!("https://e.com/{i}")})).await;
        links.push((
            v["code"].as_str().unwrap().to_string(),
            v["id"].as_u64().unwrap(),
        ));
    }
    let mut sent = Vec::new();
    let mut expected = [0i64; 3];
    let mut c = d.ipc().await;
    // Spread over more than one fold interval.
    let rounds = 24u8;
    let pause = shortlinkd::stats::FOLD_EVERY * 3 / rounds as u32;
    for i in 0..rounds {
        let mut b = batch(150 + i, links[0].1, 1 + i as u32 % 3, i % 5 == 0);
        b.clicks
            .push(batch(0, links[(i % 2 + 1) as usize].1, 2, false).clicks[0].clone());
        expected[0] += (1 + i as u32 % 3) as i64;
        expected[(i % 2 + 1) as usize] += 2;
        c.clicks(i as u32, b.clone()).await;
        sent.push(b);
        tokio::time::sleep(pause).await;
    }
    d.kill9();
    d.spawn().await;
    check_clicks(&d, &links, expected).await;
    // Everything sent again: acknowledged, not counted.
    let mut c = d.ipc().await;
    for (i, b) in sent.iter().enumerate() {
        c.clicks(1000 + i as u32, b.clone()).await;
    }
    check_clicks(&d, &links, expected).await;
    assert_eq!(
        d.metric("shortlinkd_click_batches_duplicate_total").await,
        rounds as f64
    );
    // Past a fold, and across a clean restart.
    tokio::time::sleep(shortlinkd::stats::FOLD_EVERY * 2).await;
    check_clicks(&d, &links, expected).await;
    assert!(d.sigterm().success());
    d.spawn().await;
    check_clicks(&d, &links, expected).await;
}

/// Totals, stats totals and series sums of each link are `expected`.
async fn check_clicks(d: &Daemon, links: &[(String, u64)], expected: [i64; 3]) {
    for ((code, _), want) in links.iter().zip(expected) {
        let (_, l) = d.req("GET", &format!("/api/v1/links/{code}"), None).await;
        assert_eq!(l["clicks"], want, "{code}: {l}");
        let (_, st) = d
            .req("GET", &format!("/api/v1/links/{code}/stats"), None)
            .await;
        assert_eq!(st["total"], want, "{code}: {st}");
        let series: i64 = st["series"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["clicks"].as_i64().unwrap())
            .sum();
        assert_eq!(series, want, "{code}");
    }
}

#[tokio::test]
async fn sigterm_finishes_and_closes_cleanly() {
    let mut d = Daemon::start().await;
    let v = d.create(json!({"url": "https://e.com/"})).await;
    let id = v["id"].as_u64().unwrap();
    let code = v["code"].as_str().unwrap().to_string();
    let mut c = d.ipc().await;
    // Fire many batches without waiting, then SIGTERM: every batch the
    // daemon acknowledged must be stored.
    for i in 0..50u32 {
        c.send(&ipc::Request::Clicks {
            id: i,
            batch: batch(i as u8, id, 1, false),
        })
        .await;
    }
    let mut acked = 0;
    while acked < 10 {
        if let Some(ipc::Reply::ClicksAck { .. }) = c.recv().await {
            acked += 1;
        }
    }
    let status = d.sigterm();
    assert!(status.success(), "exit status {status}");
    while let Ok(Some(reply)) = c.recv_timeout(Duration::from_secs(2)).await {
        if let ipc::Reply::ClicksAck { .. } = reply {
            acked += 1;
        }
    }
    assert!(!d.api_path().exists(), "API socket removed");
    assert!(!d.data_dir().join("control.sock").exists());
    let log = d.log();
    assert!(
        log.contains("SIGTERM received") && log.contains("database closed"),
        "{log}"
    );
    d.spawn().await;
    let (_, l) = d.req("GET", &format!("/api/v1/links/{code}"), None).await;
    assert!(
        l["clicks"].as_i64().unwrap() >= acked,
        "acked {acked}, stored {}",
        l["clicks"]
    );
}

#[tokio::test]
async fn refuses_a_socket_held_by_a_live_daemon_and_clears_a_stale_one() {
    let mut d = Daemon::start().await;
    let out = std::process::Command::new(common::BIN)
        .args(["serve", "--data-dir"])
        .arg(d.data_dir())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("in use by a running daemon"), "{err}");
    // The first daemon is unharmed.
    let (s, _) = d.req("GET", "/api/v1/links", None).await;
    assert_eq!(s, 200);
    // After a crash the socket files stay behind; a new daemon removes them.
    d.kill9();
    assert!(d.ipc_path().exists());
    d.spawn().await;
    let mut c = d.ipc().await;
    c.send(&ipc::Request::Ping { id: 1 }).await;
    assert_eq!(c.recv().await, Some(ipc::Reply::Pong { id: 1 }));
    assert!(d.log().contains("removing stale socket"));
    // Socket modes.
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&d.ipc_path()), 0o660);
    assert_eq!(mode(&d.api_path()), 0o660);
    assert_eq!(mode(&d.data_dir().join("control.sock")), 0o600);
}

fn frames(batches: &[ClickBatch]) -> Vec<u8> {
    let mut out = Vec::new();
    for b in batches {
        ipc::write_frame(b, &mut out).unwrap();
    }
    out
}

/// A spool file as a worker writes it: sealed with the deployment key.
fn spool_bytes(key: &shortlink_core::DeploymentKey, batches: &[ClickBatch]) -> Vec<u8> {
    SpoolSeal::new(key).seal(&frames(batches))
}

#[tokio::test]
async fn spool_files_are_imported_once() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("c.toml");
    std::fs::write(&cfg, "spool_interval = 1\n").unwrap();
    let cfg_s = cfg.to_str().unwrap().to_string();
    let mut d = Daemon::start_with(&["--config", &cfg_s]).await;
    let v = d.create(json!({"url": "https://e.com/"})).await;
    let id = v["id"].as_u64().unwrap();
    let code = v["code"].as_str().unwrap().to_string();
    let spool = d.data_dir().join("spool");
    // One batch also delivered over IPC: it must count once.
    let shared = ClickBatch {
        batch_id: BatchId([7; 16]),
        clicks: batch(0, id, 2, false).clicks,
    };
    let mut c = d.ipc().await;
    c.clicks(1, shared.clone()).await;
    let file = spool.join("worker-1.spool");
    let own = ClickBatch {
        batch_id: BatchId([8; 16]),
        clicks: batch(0, id, 5, false).clicks,
    };
    std::fs::write(&file, spool_bytes(&d.key, &[shared, own])).unwrap();
    // A half-written file (no rename yet) is left alone.
    let tmp = spool.join("worker-2.spool.tmp");
    std::fs::write(&tmp, b"partial").unwrap();
    assert!(
        eventually(Duration::from_secs(5), || async { !file.exists() }).await,
        "spool file not imported"
    );
    let (_, l) = d.req("GET", &format!("/api/v1/links/{code}"), None).await;
    assert_eq!(l["clicks"], 7);
    assert!(tmp.exists());

    // A corrupt file: the good batch before the damage counts, the file is
    // set aside as .bad.
    let mut body = frames(&[ClickBatch {
        batch_id: BatchId([9; 16]),
        clicks: batch(0, id, 1, false).clicks,
    }]);
    body.extend_from_slice(&[0, 0, 0, 3, 0xff, 0xff, 0xff]);
    let bytes = SpoolSeal::new(&d.key).seal(&body);
    let bad = spool.join("worker-3.spool");
    std::fs::write(&bad, bytes).unwrap();
    let renamed = spool.join("worker-3.bad");
    assert!(eventually(Duration::from_secs(5), || async { renamed.exists() }).await);
    assert!(!bad.exists());
    let (_, l) = d.req("GET", &format!("/api/v1/links/{code}"), None).await;
    assert_eq!(l["clicks"], 8);
    assert!(d.log().contains("corrupt click spool file"));
    assert_eq!(d.metric("shortlinkd_spool_files_bad_total").await, 1.0);

    // Files present at start are imported before serving.
    d.kill9();
    let early = ClickBatch {
        batch_id: BatchId([10; 16]),
        clicks: batch(0, id, 4, false).clicks,
    };
    std::fs::write(spool.join("worker-4.spool"), spool_bytes(&d.key, &[early])).unwrap();
    d.spawn().await;
    let (_, l) = d.req("GET", &format!("/api/v1/links/{code}"), None).await;
    assert_eq!(l["clicks"], 12);
    assert!(!spool.join("worker-4.spool").exists());
}

/// Spool files another local user could have dropped: none of them counts,
/// each is set aside once with its reason, and nothing secret reaches the log.
#[tokio::test]
async fn untrusted_spool_files_are_refused_and_set_aside() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("c.toml");
    std::fs::write(&cfg, "spool_interval = 1\n").unwrap();
    let cfg_s = cfg.to_str().unwrap().to_string();
    let d = Daemon::start_with(&["--config", &cfg_s]).await;
    let v = d
        .create(json!({"url": "https://e.com/limited", "max_visits": 5}))
        .await;
    let id = v["id"].as_u64().unwrap();
    let code = v["code"].as_str().unwrap().to_string();
    let spool = d.data_dir().join("spool");
    let one = |n: u8, count: u32| ClickBatch {
        batch_id: BatchId([n; 16]),
        clicks: batch(0, id, count, false).clicks,
    };
    let key_path = d.data_dir().join("key");
    let key_text = std::fs::read_to_string(&key_path).unwrap();
    let mut cases: Vec<(&str, &str)> = Vec::new();

    // Not sealed: what a forger without the key writes.
    std::fs::write(spool.join("forged.spool"), frames(&[one(20, 3)])).unwrap();
    cases.push(("forged", "bad magic"));
    // Sealed, but with another deployment's key.
    let other = shortlink_core::DeploymentKey::generate().unwrap();
    std::fs::write(
        spool.join("otherkey.spool"),
        spool_bytes(&other, &[one(21, 3)]),
    )
    .unwrap();
    cases.push(("otherkey", "seal does not match"));
    // A symbolic link to the key file: never opened through.
    std::os::unix::fs::symlink(&key_path, spool.join("link.spool")).unwrap();
    cases.push(("link", "symbolic link"));
    // Bigger than any worker writes (sparse: nothing is read).
    let huge = std::fs::File::create(spool.join("huge.spool")).unwrap();
    huge.set_len(shortlink_core::spool::MAX_SPOOL_FILE + 1)
        .unwrap();
    drop(huge);
    cases.push(("huge", "more than the limit"));
    // Sealed (as if a worker key leaked), but with counts no worker sends.
    let mut forged = one(22, 3);
    forged.clicks[0].count = u32::MAX;
    std::fs::write(spool.join("counts.spool"), spool_bytes(&d.key, &[forged])).unwrap();
    cases.push(("counts", "count 4294967295"));
    let mut future = one(23, 1);
    future.clicks[0].hour += 24 * 365;
    std::fs::write(spool.join("future.spool"), spool_bytes(&d.key, &[future])).unwrap();
    cases.push(("future", "hour"));
    // Owned by a stranger (only root can make one).
    if nix::unistd::geteuid().is_root() {
        let p = spool.join("stranger.spool");
        std::fs::write(&p, spool_bytes(&d.key, &[one(24, 3)])).unwrap();
        std::os::unix::fs::chown(&p, Some(54_321), Some(54_321)).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        cases.push(("stranger", "uid 54321"));
    }

    for (name, _) in &cases {
        let bad = spool.join(format!("{name}.bad"));
        assert!(
            eventually(Duration::from_secs(10), || async { bad.exists() }).await,
            "{name}.spool was not set aside:\n{}",
            d.log()
        );
        assert!(!spool.join(format!("{name}.spool")).exists(), "{name}");
    }
    let log = d.log();
    for (name, reason) in &cases {
        let line = log
            .lines()
            .find(|l| l.contains(&format!("{name}.spool")) && l.contains("refused"))
            .unwrap_or_else(|| panic!("no refusal logged for {name}:\n{log}"));
        assert!(line.contains(reason), "{name}: {line}");
    }
    assert!(!log.contains(key_text.trim()), "the key reached the log");
    assert!(
        !log.contains(&key_text.trim()[..16]),
        "key bytes reached the log"
    );
    let (_, l) = d.req("GET", &format!("/api/v1/links/{code}"), None).await;
    assert_eq!(l["clicks"], 0, "a refused file was counted: {l}");
    assert_eq!(l["state"], "active");
    assert_eq!(
        d.metric("shortlinkd_spool_files_bad_total").await,
        cases.len() as f64
    );
    // The link itself is untouched, and a later sealed file still counts.
    std::fs::write(spool.join("good.spool"), spool_bytes(&d.key, &[one(25, 2)])).unwrap();
    assert!(
        eventually(Duration::from_secs(10), || async {
            !spool.join("good.spool").exists()
        })
        .await
    );
    let (_, l) = d.req("GET", &format!("/api/v1/links/{code}"), None).await;
    assert_eq!(l["clicks"], 2);
}

#[tokio::test]
async fn config_env_and_flags_layer() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    shortlink_core::DeploymentKey::generate()
        .unwrap()
        .write_new(&data.join("key"))
        .unwrap();
    let cfg = dir.path().join("c.toml");
    std::fs::write(
        &cfg,
        format!(
            "data_dir = {:?}\nmin_length = 8\nbase_url = \"https://file.example\"\n",
            data
        ),
    )
    .unwrap();
    // env beats file, flag beats env.
    let run = |extra: &[&str]| {
        let mut cmd = std::process::Command::new(common::BIN);
        cmd.arg("--config")
            .arg(&cfg)
            .env("SHORTLINKD_MIN_LENGTH", "7")
            .env("SHORTLINKD_BASE_URL", "https://env.example");
        cmd.args(extra);
        cmd.output().unwrap()
    };
    let out = run(&["link", "create", "https://e.com/"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let url = common::stdout(&out).trim().to_string();
    let code = url.rsplit('/').next().unwrap();
    assert!(url.starts_with("https://env.example/"), "{url}");
    assert_eq!(code.len(), 7, "{url}");
    let out = run(&[
        "--min-length",
        "9",
        "--base-url",
        "https://flag.example",
        "link",
        "create",
        "https://e.com/2",
    ]);
    let url = common::stdout(&out).trim().to_string();
    assert!(url.starts_with("https://flag.example/"), "{url}");
    assert_eq!(url.rsplit('/').next().unwrap().len(), 9, "{url}");
    // A bad file stops everything with the setting named.
    std::fs::write(&cfg, "min_length = 99\n").unwrap();
    let out = run(&["--min-length", "99", "link", "list"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("min_length"), "{}", stderr(&out));
}

#[tokio::test]
async fn socket_group_and_json_logs() {
    use std::os::unix::fs::MetadataExt;
    let gid = nix::unistd::getgid().as_raw().to_string();
    let d = Daemon::start_with(&["--socket-group", &gid, "--log-json"]).await;
    for p in [d.ipc_path(), d.api_path()] {
        assert_eq!(std::fs::metadata(&p).unwrap().gid().to_string(), gid);
    }
    let log = d.log();
    let ready = log
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["fields"]["message"] == "shortlinkd ready");
    assert!(ready.is_some(), "{log}");
    let other = tempfile::tempdir().unwrap();
    shortlink_core::DeploymentKey::generate()
        .unwrap()
        .write_new(&other.path().join("key"))
        .unwrap();
    let out = std::process::Command::new(common::BIN)
        .args(["serve", "--socket-group", "no-such-group-xyz", "--data-dir"])
        .arg(other.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("socket_group \"no-such-group-xyz\" does not exist"),
        "{}",
        stderr(&out)
    );
}
