//! Id recycling at the real edge (`[recycling]`): an expired link's code
//! answers 410 and the zone holds that answer; once its range is past the
//! grace period (the stored times are moved back, the 7-day minimum
//! stays) the daemon purges it, and the same code, handed to a new link,
//! redirects to the new target at every worker, never the old one.

use std::time::{Duration, Instant};

use serde_json::json;
use shortlink_e2e::{http_conf, Daemon, Nginx, Scratch, Stack};

/// Seconds the stored times are moved back (past the 7-day grace period).
const AGO: i64 = 100 * 86_400;

fn until(what: &str, within: Duration, mut ok: impl FnMut() -> bool) {
    let started = Instant::now();
    while !ok() {
        assert!(started.elapsed() < within, "{what} within {within:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    println!("{what} after {:?}", started.elapsed());
}

fn json_of(r: &shortlink_e2e::Response) -> serde_json::Value {
    serde_json::from_slice(&r.body).unwrap_or_else(|_| panic!("{}", r.body_text()))
}

#[test]
fn a_recycled_code_answers_with_its_new_target_at_every_worker_never_the_old() {
    let scratch = Scratch::new("recycling");
    let (key, codec) = scratch.key();
    let config = scratch.path("shortlinkd.toml");
    std::fs::write(
        &config,
        "segment_size = 4\n[recycling]\nenabled = true\ngrace_days = 7\nsweep_interval = 1\n",
    )
    .unwrap();
    let daemon = Daemon::start_with_config(&scratch, &key, Some(config));
    let http = http_conf(&key, &daemon, "300ms");
    let nginx = Nginx::start(&scratch, 2, &http);
    let s = Stack {
        nginx,
        daemon,
        codec,
        workers: 2,
        http,
        scratch,
    };
    // A first range of four links that expire in two seconds.
    let old: Vec<String> = (0..4)
        .map(|i| {
            s.daemon
                .create(json!({"url": format!("https://old.example/{i}"), "ttl": 2}))
        })
        .collect();
    let first = json_of(
        &s.daemon
            .api("GET", &format!("/api/v1/links/{}", old[0]), None),
    )["id"]
        .as_u64()
        .unwrap();
    for code in &old {
        let r = s.get(code, &[]);
        assert_eq!(r.status, 302);
        assert!(r
            .header("Location")
            .unwrap()
            .starts_with("https://old.example/"));
    }
    // Expired: 410, answered from the zone by both workers.
    until("the old codes answer 410", Duration::from_secs(6), || {
        old.iter().all(|c| s.get(c, &[]).status == 410)
    });
    for _ in 0..4 {
        assert_eq!(s.get(&old[0], &[]).header("X-Cache"), Some("EXPIRED"));
    }
    // The range is used up; its lease and expiries are moved past the grace.
    for i in 0..4 {
        s.daemon
            .create(json!({"url": format!("https://live.example/{i}")}));
    }
    let db = rusqlite::Connection::open(s.daemon.data_dir().join("shortlink.db")).unwrap();
    db.busy_timeout(Duration::from_secs(10)).unwrap();
    db.execute_batch(&format!(
        "UPDATE id_ranges SET leased_at = leased_at - {AGO} WHERE start = {first};
         UPDATE links SET expires_at = expires_at - {AGO} WHERE id >= {first} AND id < {first} + 4;"
    ))
    .unwrap();
    until("the range is recycled", Duration::from_secs(15), || {
        json_of(&s.daemon.api("GET", "/api/v1/ids?limit=0", None))["available"] == 1
    });
    // New links: the old first code comes back, lowest first.
    let mut new_target = None;
    for i in 0..12 {
        let url = format!("https://new.example/{i}");
        if s.daemon.create(json!({"url": url})) == old[0] {
            new_target = Some(url);
            break;
        }
    }
    let new_target = new_target.expect("the recycled code was not handed out again");
    // Every worker: the new target, never the old one nor the cached 410.
    for _ in 0..8 {
        let r = s.get(&old[0], &[]);
        assert_eq!(
            (r.status, r.header("Location")),
            (302, Some(new_target.as_str())),
            "X-Cache {:?} X-Pid {:?}",
            r.header("X-Cache"),
            r.header("X-Pid")
        );
    }
    // The codes of the range not handed out again are unknown, not gone.
    assert_eq!(s.get(&old[3], &[]).status, 404);
    s.nginx.assert_clean_log();
}
