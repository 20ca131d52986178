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

/// The worker the daemon pushes events to, once one subscribed.
fn subscribed_worker(s: &Stack) -> u32 {
    assert!(eventually(Duration::from_secs(5), || !s
        .daemon
        .subscriptions()
        .is_empty()));
    *s.daemon.subscriptions().last().unwrap()
}

/// Holds answers for `code` in the workers' sockets while `change` runs:
/// 1. the daemon is frozen, and requests on `connections` connections make
///    the workers send their lookups;
/// 2. the workers are stopped, and the daemon thawed: it answers, and the
///    answers wait in the workers' sockets;
/// 3. `change` edits a link (the API answers once the purge is written to
///    the subscribed worker);
/// 4. the subscribed worker `events_to` runs first and applies the purge,
///    then the others read their answer.
///
/// Returns what the requests got, and whether one was answered by a
/// worker other than `events_to`: only such an answer is read after the
/// purge (the subscribed worker reads its own answer before the purge, on
/// the same socket).
fn answer_across(
    s: &Stack,
    code: &str,
    connections: usize,
    events_to: u32,
    change: impl FnOnce(),
) -> (Vec<shortlink_e2e::Response>, bool) {
    let workers = s.nginx.workers();
    assert_eq!(workers.len(), 2);
    s.daemon.freeze();
    let served: Vec<_> = std::thread::scope(|scope| {
        let requests: Vec<_> = (0..connections)
            .map(|_| scope.spawn(|| s.get(code, &[])))
            .collect();
        std::thread::sleep(Duration::from_millis(300));
        for &w in &workers {
            signal(w, libc::SIGSTOP);
        }
        s.daemon.thaw();
        std::thread::sleep(Duration::from_millis(300));
        change();
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
    let crossed = served.iter().any(|r| {
        r.header("X-Pid")
            .is_some_and(|p| p != events_to.to_string())
    });
    (served, crossed)
}

/// Runs `attempt` with 0, 1, … (at most `most` times) until two of them
/// had an answer read after the purge (what each returns), then checks the
/// error log.
fn until_two_crossed(s: &Stack, most: usize, mut attempt: impl FnMut(usize) -> bool) {
    let mut crossed = 0;
    for i in 0..most {
        crossed += usize::from(attempt(i));
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

/// Points `code` at `url` through the API.
fn edit(s: &Stack, code: &str, url: String) {
    let r = s.daemon.api(
        "PATCH",
        &format!("/api/v1/links/{code}"),
        Some(&json!({ "url": url })),
    );
    assert_eq!(r.status, 200, "{}", r.body_text());
}

/// An edit acknowledged while an answer for the same link was on its way
/// to a worker: the old answer is not stored. Attempts go on until two
/// had an answer read after the purge.
#[test]
fn an_answer_that_crossed_a_change_is_not_cached() {
    // Long enough that no lookup times out while the workers are stopped.
    let s = Stack::start_with_timeout("stale-answer", 2, "10s");
    s.daemon
        .create(json!({"url": "https://example.com/warm-up"}));
    let events_to = subscribed_worker(&s);
    until_two_crossed(&s, 12, |attempt| {
        let code = s
            .daemon
            .create(json!({"url": format!("https://example.com/before/{attempt}")}));
        let after = format!("https://example.com/after/{attempt}");
        let (_, across) = answer_across(&s, &code, 6, events_to, || edit(&s, &code, after.clone()));
        for _ in 0..6 {
            let r = s.get(&code, &[]);
            assert_eq!(
                r.header("Location"),
                Some(after.as_str()),
                "attempt {attempt}: the edited link is served with its old target ({:?})",
                r.header("X-Cache")
            );
        }
        across
    });
}

/// An edit of another link, acknowledged while an answer was on its way:
/// that answer is stored all the same (the purge names another code), so
/// the next request is a hit. Before, any purge kept every answer then on
/// its way out of the zone: a worker that connected while aliases were
/// being named (its first subscription) cached nothing it had asked for.
#[test]
fn a_change_to_another_link_does_not_keep_an_answer_out() {
    let s = Stack::start_with_timeout("unrelated-purge", 2, "10s");
    let other = s.daemon.create(json!({"url": "https://example.com/other"}));
    let events_to = subscribed_worker(&s);
    until_two_crossed(&s, 24, |attempt| {
        let target = format!("https://example.com/kept/{attempt}");
        let code = s.daemon.create(json!({ "url": target }));
        // One request: when the worker without events answers it, no
        // other lookup for the code can have stored it.
        let (served, across) = answer_across(&s, &code, 1, events_to, || {
            edit(&s, &other, format!("https://example.com/other/{attempt}"))
        });
        assert_eq!(served[0].header("Location"), Some(target.as_str()));
        if across {
            let r = s.get(&code, &[]);
            assert_eq!(
                (r.header("Location"), r.header("X-Cache")),
                (Some(target.as_str()), Some("HIT")),
                "attempt {attempt}: the answer was not kept"
            );
        }
        across
    });
}
