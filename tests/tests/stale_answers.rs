//! A lookup answered before a change but read after the change's purge
//! must not stay in the zone: the edit was acknowledged, so the edge may
//! not serve the old target from then on.

use std::time::Duration;

use serde_json::json;
use shortlink_e2e::{eventually, Stack};

fn signal(pid: u32, sig: i32) {
    // SAFETY: kill(2) on a worker of our own nginx.
    unsafe { libc::kill(pid as i32, sig) };
}

/// Each attempt holds an answer in a worker's socket while the link
/// changes:
/// 1. the daemon is frozen, and requests on six connections make the
///    workers send their lookups;
/// 2. the workers are stopped, and the daemon thawed: it answers with the
///    old target, and the answers wait in the workers' sockets;
/// 3. the link is edited (the API answers once the purge is written to the
///    subscribed worker);
/// 4. the subscribed worker runs first and applies the purge, then the
///    others read their old answer.
///
/// An answer read by a worker that is not the subscribed one is the case
/// that went stale (the subscribed worker reads its own answer before the
/// purge, on the same socket); attempts go on until one had it.
#[test]
fn an_answer_that_crossed_a_change_is_not_cached() {
    // Long enough that no lookup times out while the workers are stopped.
    let s = Stack::start_with_timeout("stale-answer", 2, "10s");
    s.daemon
        .create(json!({"url": "https://example.com/warm-up"}));
    assert!(eventually(Duration::from_secs(5), || !s
        .daemon
        .subscriptions()
        .is_empty()));
    // The worker the daemon pushes events to.
    let events_to = *s.daemon.subscriptions().last().unwrap();
    let workers = s.nginx.workers();
    assert_eq!(workers.len(), 2);
    let mut crossed = 0;
    for attempt in 0..12 {
        let code = s
            .daemon
            .create(json!({"url": format!("https://example.com/before/{attempt}")}));
        s.daemon.freeze();
        let served: Vec<_> = std::thread::scope(|scope| {
            let requests: Vec<_> = (0..6).map(|_| scope.spawn(|| s.get(&code, &[]))).collect();
            std::thread::sleep(Duration::from_millis(300));
            for &w in &workers {
                signal(w, libc::SIGSTOP);
            }
            s.daemon.thaw();
            std::thread::sleep(Duration::from_millis(300));
            let edit = json!({"url": format!("https://example.com/after/{attempt}")});
            let r = s
                .daemon
                .api("PATCH", &format!("/api/v1/links/{code}"), Some(&edit));
            assert_eq!(r.status, 200, "{}", r.body_text());
            signal(events_to, libc::SIGCONT);
            std::thread::sleep(Duration::from_millis(300));
            for &w in &workers {
                signal(w, libc::SIGCONT);
            }
            requests.into_iter().map(|t| t.join().unwrap()).collect()
        });
        for r in &served {
            assert_eq!(r.status, 302, "{}", r.body_text());
        }
        let other_worker_answered = served.iter().any(|r| {
            r.header("X-Pid")
                .is_some_and(|p| p != events_to.to_string())
        });
        for _ in 0..6 {
            let r = s.get(&code, &[]);
            assert_eq!(
                r.header("Location"),
                Some(format!("https://example.com/after/{attempt}").as_str()),
                "attempt {attempt}: the edited link is served with its old target ({:?})",
                r.header("X-Cache")
            );
        }
        crossed += usize::from(other_worker_answered);
        if crossed >= 2 {
            break;
        }
    }
    assert!(
        crossed >= 2,
        "only {crossed} attempts had a lookup answered on the worker without events"
    );
    s.nginx.assert_clean_log();
}
