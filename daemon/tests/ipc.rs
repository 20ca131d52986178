//! The IPC protocol as the nginx module speaks it.

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::{batch, eventually, unix, Daemon, Ipc};
use serde_json::json;
use shortlink_core::ipc::{
    BatchId, ChangePosition, ClickBatch, Event, LookupResult, Reply, Request, MAX_FRAME,
    PROTOCOL_VERSION,
};
use shortlink_core::{DeploymentKey, Fingerprint};

#[tokio::test]
async fn handshake_mismatches_are_refused_with_a_reason() {
    let d = Daemon::start().await;
    let other = DeploymentKey::generate().unwrap().fingerprint();
    let mut c = Ipc::connect(&d.ipc_path()).await;
    match c.hello(other, PROTOCOL_VERSION).await {
        Reply::Refused { reason } => {
            assert!(reason.contains("fingerprint"), "{reason}");
            assert!(reason.contains(&other.to_string()), "{reason}");
        }
        r => panic!("expected refusal, got {r:?}"),
    }
    assert_eq!(c.recv().await, None, "refused connections are closed");

    let mut c = Ipc::connect(&d.ipc_path()).await;
    match c.hello(d.fingerprint(), PROTOCOL_VERSION + 1).await {
        Reply::Refused { reason } => assert!(reason.contains("protocol"), "{reason}"),
        r => panic!("expected refusal, got {r:?}"),
    }
    assert_eq!(c.recv().await, None);

    let mut c = d.ipc().await;
    c.send(&Request::Ping { id: 7 }).await;
    assert_eq!(c.recv().await, Some(Reply::Pong { id: 7 }));
    assert_eq!(
        d.metric("shortlinkd_ipc_handshakes_refused_total").await,
        2.0
    );
    assert!(d.log().contains("refusing IPC client"));
    let _ = Fingerprint([0; 8]);
}

#[tokio::test]
async fn lookups_found_not_found_and_gone() {
    let d = Daemon::start().await;
    let a = d
        .create(json!({"url": "https://e.com/a", "alias": "spring-sale", "redirect": 308, "targets": {"ios": "https://apps.apple.com/x"}}))
        .await;
    // Long enough that a loaded machine still looks it up before it expires.
    let expiring = d.create(json!({"url": "https://e.com/b", "ttl": 4})).await;
    let disabled = d
        .create(json!({"url": "https://e.com/c", "disabled": true}))
        .await;
    let deleted = d.create(json!({"url": "https://e.com/d"})).await;
    let (s, _) = d
        .req(
            "DELETE",
            &format!("/api/v1/links/{}", deleted["code"].as_str().unwrap()),
            None,
        )
        .await;
    assert_eq!(s, 204);
    let mut c = d.ipc().await;
    let id = a["id"].as_u64().unwrap();
    for code in [a["generated_code"].as_str().unwrap(), "spring-sale"] {
        match c.lookup(1, code).await {
            LookupResult::Found(link) => {
                assert_eq!(link.id, id);
                assert_eq!(link.target, "https://e.com/a");
                assert_eq!(link.status.map(u16::from), Some(308));
                assert_eq!(
                    link.targets.ios.as_deref(),
                    Some("https://apps.apple.com/x")
                );
                assert!(!link.disabled);
                assert_eq!(link.expires_at, None);
            }
            r => panic!("{code}: {r:?}"),
        }
    }
    match c.lookup(2, expiring["code"].as_str().unwrap()).await {
        LookupResult::Found(link) => assert!(link.expires_at.is_some()),
        r => panic!("{r:?}"),
    }
    assert_eq!(
        c.lookup(3, disabled["code"].as_str().unwrap()).await,
        LookupResult::Gone
    );
    assert_eq!(
        c.lookup(4, deleted["code"].as_str().unwrap()).await,
        LookupResult::NotFound
    );
    assert_eq!(c.lookup(5, "no-such-alias").await, LookupResult::NotFound);
    assert_eq!(c.lookup(6, "!!").await, LookupResult::NotFound);
    // A valid code never allocated.
    let unused = d.codec().encode(3_000_000_000);
    assert_eq!(c.lookup(7, &unused).await, LookupResult::NotFound);
    let expires = unix(&expiring["expires_at"]);
    while shortlinkd::timestamp::unix_now() <= expires {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        c.lookup(8, expiring["code"].as_str().unwrap()).await,
        LookupResult::Gone
    );
    assert_eq!(d.metric("shortlinkd_ipc_lookups_total").await, 9.0);
}

#[tokio::test]
async fn many_requests_in_flight_answered_by_id() {
    let d = Daemon::start().await;
    let mut expected = HashMap::new();
    for i in 0..20u32 {
        let v = d.create(json!({"url": format!("https://e.com/{i}")})).await;
        expected.insert(i, v["id"].as_u64().unwrap());
    }
    let codes: Vec<String> = {
        let codec = d.codec();
        (0..20u32)
            .map(|i| codec.encode(expected[&i]).to_string())
            .collect()
    };
    let mut c = d.ipc().await;
    let mut bytes = Vec::new();
    for (i, code) in codes.iter().enumerate() {
        bytes.extend(
            shortlink_core::ipc::frame(&Request::Lookup {
                id: i as u32,
                code: code.clone(),
            })
            .unwrap(),
        );
        bytes.extend(
            shortlink_core::ipc::frame(&Request::Ping {
                id: 1000 + i as u32,
            })
            .unwrap(),
        );
    }
    c.send_raw(&bytes).await;
    let mut got = HashMap::new();
    let mut pongs = 0;
    while got.len() < 20 || pongs < 20 {
        match c.recv().await.unwrap() {
            Reply::Lookup {
                id,
                result: LookupResult::Found(l),
            } => {
                got.insert(id, l.id);
            }
            Reply::Pong { .. } => pongs += 1,
            r => panic!("{r:?}"),
        }
    }
    assert_eq!(got, expected);
}

#[tokio::test]
async fn click_batches_are_acked_and_counted_once() {
    let d = Daemon::start().await;
    let v = d.create(json!({"url": "https://e.com/"})).await;
    let code = v["code"].as_str().unwrap().to_string();
    let id = v["id"].as_u64().unwrap();
    let mut c = d.ipc().await;
    c.clicks(1, batch(1, id, 5, false)).await;
    // Acknowledged means committed: the API sees it at once.
    let (_, l) = d.req("GET", &format!("/api/v1/links/{code}"), None).await;
    assert_eq!(l["clicks"], 5);
    // Re-sent after a "reconnect": acked again, not counted again.
    drop(c);
    let mut c = d.ipc().await;
    c.clicks(2, batch(1, id, 5, false)).await;
    let (_, l) = d.req("GET", &format!("/api/v1/links/{code}"), None).await;
    assert_eq!(l["clicks"], 5);
    // A bot batch counts in the total and apart.
    c.clicks(3, batch(2, id, 2, true)).await;
    // Clicks for unknown links are ignored, the rest of the batch counts.
    let mut mixed = batch(3, id, 1, false);
    mixed.clicks.push(shortlink_core::ipc::ClickCount {
        link_id: 999_999_999,
        ..mixed.clicks[0].clone()
    });
    c.clicks(4, mixed).await;
    let (s, st) = d
        .req("GET", &format!("/api/v1/links/{code}/stats"), None)
        .await;
    assert_eq!(s, 200, "{st}");
    assert_eq!(st["total"], 8);
    assert_eq!(st["bots"], 2);
    assert_eq!(st["total_all_time"], 8);
    assert_eq!(st["devices"]["desktop"], 8);
    assert_eq!(st["referrers"][0]["host"], "news.example.com");
    assert_eq!(st["referrers"][0]["clicks"], 8);
    let series_sum: i64 = st["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["clicks"].as_i64().unwrap())
        .sum();
    assert_eq!(series_sum, 8);
    assert_eq!(st["series"].as_array().unwrap().len(), 7 * 24 + 1);
    let (_, day) = d
        .req(
            "GET",
            &format!("/api/v1/links/{code}/stats?granularity=day"),
            None,
        )
        .await;
    assert_eq!(
        day["series"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["clicks"].as_i64().unwrap())
            .sum::<i64>(),
        8
    );
    let (s, e) = d
        .req(
            "GET",
            &format!("/api/v1/links/{code}/stats?granularity=week"),
            None,
        )
        .await;
    assert_eq!(
        (s, e["error"]["field"].as_str()),
        (400, Some("granularity"))
    );
    let (s, e) = d
        .req(
            "GET",
            &format!("/api/v1/links/{code}/stats?from=2000&to=1000"),
            None,
        )
        .await;
    assert_eq!(
        (s, e["error"]["code"].as_str()),
        (422, Some("invalid_range"))
    );
    let (s, _) = d.req("GET", "/api/v1/links/nope-nope/stats", None).await;
    assert_eq!(s, 404);
    assert_eq!(d.metric("shortlinkd_click_batches_total").await, 4.0);
    assert_eq!(
        d.metric("shortlinkd_click_batches_duplicate_total").await,
        1.0
    );
    // Clicks are counted in this metric when folded into the tables (that
    // is when clicks for unknown links are dropped): links without a limit
    // fold with everything, every `FOLD_ALL_EVERY`.
    assert!(
        eventually(
            shortlinkd::stats::FOLD_ALL_EVERY + shortlinkd::stats::FOLD_EVERY * 3,
            || async { d.metric("shortlinkd_clicks_total").await == 8.0 }
        )
        .await,
        "clicks_total {}",
        d.metric("shortlinkd_clicks_total").await
    );
    assert_eq!(d.metric("shortlinkd_ipc_connections").await, 1.0);
}

/// The events of the next change push, up to its position.
async fn next_push(c: &mut Ipc) -> (Vec<Event>, ChangePosition) {
    let mut out = Vec::new();
    loop {
        match c.recv().await {
            Some(Reply::Event(Event::Position(p))) => return (out, p),
            Some(Reply::Event(e)) => out.push(e),
            other => panic!("expected an event, got {other:?}"),
        }
    }
}

/// A worker back after an outage (its connection gone, the daemon killed
/// and restarted, changes made meanwhile) is replayed exactly what changed
/// after its position, not reset; a position of another database, or past
/// the log, is reset.
#[tokio::test]
async fn a_returning_worker_is_replayed_what_it_missed_across_a_daemon_kill() {
    let mut d = Daemon::start().await;
    let kept = d
        .create(json!({"url": "https://e.com/kept", "alias": "kept-one"}))
        .await;
    let edited = d.create(json!({"url": "https://e.com/edit"})).await;
    let gone = d
        .create(json!({"url": "https://e.com/gone", "alias": "gone-one"}))
        .await;
    let mut c = d.ipc().await;
    let first = c.resume(1, None).await;
    assert!(first.reset);
    let at = first.position;
    assert!(at.seq >= 2, "two aliased creates are logged: {at:?}");
    drop(c);
    let code = |v: &serde_json::Value| v["generated_code"].as_str().unwrap().to_string();
    let (s, _) = d
        .req(
            "PATCH",
            &format!("/api/v1/links/{}", code(&edited)),
            Some(json!({"url": "https://e.com/edited"})),
        )
        .await;
    assert_eq!(s, 200);
    let (s, _) = d.req("DELETE", "/api/v1/links/gone-one", None).await;
    assert_eq!(s, 204);
    d.kill9();
    d.spawn().await;
    let mut c = d.ipc().await;
    let back = c.resume(1, Some(at)).await;
    assert!(!back.reset, "the daemon could replay: {back:?}");
    assert_eq!(back.aliases, vec!["kept-one".to_string()]);
    assert_eq!(back.position.store, at.store);
    assert_eq!(back.position.seq, at.seq + 2);
    let inv = |code: String| Event::Invalidate { code };
    for want in [
        inv(code(&edited)),
        inv(code(&gone)),
        inv("gone-one".into()),
        Event::AliasesRemoved {
            aliases: vec!["gone-one".into()],
        },
    ] {
        assert!(
            back.replayed.contains(&want),
            "{want:?} in {:?}",
            back.replayed
        );
    }
    assert!(
        !back.replayed.contains(&inv(code(&kept))),
        "only what changed: {:?}",
        back.replayed
    );
    // Live pushes follow the replay, with their positions.
    let (s, _) = d
        .req("DELETE", &format!("/api/v1/links/{}", code(&kept)), None)
        .await;
    assert_eq!(s, 204);
    let (ev, p) = next_push(&mut c).await;
    assert!(ev.contains(&inv("kept-one".into())), "{ev:?}");
    assert_eq!(p.seq, back.position.seq + 1);
    // Up to date: nothing to replay.
    let mut c2 = d.ipc().await;
    let current = c2.resume(1, Some(p)).await;
    assert!(!current.reset && current.replayed.is_empty(), "{current:?}");
    // Another database, or a position the log never reached: reset.
    for since in [
        ChangePosition {
            store: at.store ^ 1,
            seq: at.seq,
        },
        ChangePosition {
            store: at.store,
            seq: p.seq + 10,
        },
    ] {
        let mut c3 = d.ipc().await;
        assert!(c3.resume(1, Some(since)).await.reset, "{since:?}");
    }
}

#[tokio::test]
async fn subscribe_snapshot_and_live_alias_changes() {
    let d = Daemon::start().await;
    d.create(json!({"url": "https://e.com/1", "alias": "first-one"}))
        .await;
    d.create(json!({"url": "https://e.com/2"})).await;
    let mut c = d.ipc().await;
    assert_eq!(c.subscribe(1).await, vec!["first-one".to_string()]);
    assert_eq!(d.metric("shortlinkd_ipc_subscribers").await, 1.0);
    let v = d
        .create(json!({"url": "https://e.com/3", "alias": "second-one"}))
        .await;
    let gen = v["generated_code"].as_str().unwrap().to_string();
    let (ev, _) = next_push(&mut c).await;
    assert_eq!(
        ev,
        vec![
            Event::Invalidate { code: gen },
            Event::Aliases {
                aliases: vec!["second-one".into()]
            },
        ]
    );
    // Batch creates announce their aliases too.
    let (s, _) = d
        .req("POST", "/api/v1/links/batch", Some(json!({"links": [{"url": "https://e.com/4", "alias": "third-one"}, {"url": "https://e.com/5"}]})))
        .await;
    assert_eq!(s, 200);
    let (ev, _) = next_push(&mut c).await;
    assert!(
        ev.contains(&Event::Aliases {
            aliases: vec!["third-one".into()]
        }),
        "{ev:?}"
    );
    // A second subscriber gets everything in its snapshot.
    let mut c2 = d.ipc().await;
    let mut snap = c2.subscribe(9).await;
    snap.sort();
    assert_eq!(snap, vec!["first-one", "second-one", "third-one"]);
}

#[tokio::test]
async fn patch_and_delete_push_invalidations_before_the_reply() {
    let d = Daemon::start().await;
    let v = d
        .create(json!({"url": "https://e.com/1", "alias": "take-down"}))
        .await;
    let gen = v["generated_code"].as_str().unwrap().to_string();
    let mut c = d.ipc().await;
    c.subscribe(1).await;
    let mut c2 = d.ipc().await;
    c2.subscribe(1).await;

    let (s, _) = d
        .req(
            "PATCH",
            "/api/v1/links/take-down",
            Some(json!({"url": "https://e.com/2"})),
        )
        .await;
    assert_eq!(s, 200);
    // Both workers hold the invalidations already: they were in the socket
    // before the HTTP reply was sent.
    for conn in [&mut c, &mut c2] {
        let now = conn.ready_now();
        assert!(
            now.contains(&Reply::Event(Event::Invalidate { code: gen.clone() })),
            "{now:?}"
        );
        assert!(
            now.contains(&Reply::Event(Event::Invalidate {
                code: "take-down".into()
            })),
            "{now:?}"
        );
    }
    // Disable is a PATCH too; the lookup now says gone.
    let (s, _) = d
        .req(
            "PATCH",
            &format!("/api/v1/links/{gen}"),
            Some(json!({"disabled": true})),
        )
        .await;
    assert_eq!(s, 200);
    let now = c.ready_now();
    assert!(
        now.contains(&Reply::Event(Event::Invalidate { code: gen.clone() })),
        "{now:?}"
    );
    c2.ready_now();
    assert_eq!(c.lookup(5, &gen).await, LookupResult::Gone);

    let (s, _) = d.req("DELETE", "/api/v1/links/take-down", None).await;
    assert_eq!(s, 204);
    let now = c2.ready_now();
    assert!(
        now.contains(&Reply::Event(Event::Invalidate { code: gen.clone() })),
        "{now:?}"
    );
    assert!(
        now.contains(&Reply::Event(Event::Invalidate {
            code: "take-down".into()
        })),
        "{now:?}"
    );
    assert!(
        now.contains(&Reply::Event(Event::AliasesRemoved {
            aliases: vec!["take-down".into()]
        })),
        "{now:?}"
    );
    assert_eq!(c2.lookup(6, &gen).await, LookupResult::NotFound);
    // The CLI delete goes through the daemon and invalidates as well.
    let v = d.create(json!({"url": "https://e.com/3"})).await;
    let code = v["code"].as_str().unwrap().to_string();
    c.ready_now();
    let out = d.cli(&["link", "delete", &code]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let now = c.ready_now();
    assert!(
        now.contains(&Reply::Event(Event::Invalidate { code: code.clone() })),
        "{now:?}"
    );
}

#[tokio::test]
async fn max_visits_and_renew_on_access_invalidate_the_edge() {
    let d = Daemon::start().await;
    let capped = d
        .create(json!({"url": "https://e.com/", "max_visits": 3}))
        .await;
    let capped_code = capped["code"].as_str().unwrap().to_string();
    let capped_id = capped["id"].as_u64().unwrap();
    let mut c = d.ipc().await;
    c.subscribe(1).await;
    assert!(matches!(
        c.lookup(2, &capped_code).await,
        LookupResult::Found(_)
    ));
    c.clicks(3, batch(10, capped_id, 2, false)).await;
    // Bots do not use up visits.
    c.clicks(4, batch(11, capped_id, 5, true)).await;
    assert!(matches!(
        c.lookup(5, &capped_code).await,
        LookupResult::Found(_)
    ));
    let (acked, saw_invalidate) =
        clicks_and_invalidate(&mut c, 6, batch(12, capped_id, 1, false), &capped_code).await;
    assert!(acked);
    // The API counts the click as soon as it is acknowledged.
    let (_, l) = d
        .req("GET", &format!("/api/v1/links/{capped_code}"), None)
        .await;
    assert_eq!(l["clicks"], 8);
    assert_eq!(l["state"], "exhausted");
    assert!(
        saw_invalidate,
        "reaching max visits pushes an invalidation (at the next fold)"
    );
    assert_eq!(c.lookup(7, &capped_code).await, LookupResult::Gone);

    // Renew on access: clicks push the expiry forward.
    let r = d
        .create(json!({"url": "https://e.com/r", "ttl": 6, "renew_on_access": true}))
        .await;
    let r_code = r["code"].as_str().unwrap().to_string();
    let r_id = r["id"].as_u64().unwrap();
    let first_expiry = unix(&r["expires_at"]);
    tokio::time::sleep(Duration::from_millis(3500)).await;
    let (acked, saw) = clicks_and_invalidate(&mut c, 8, batch(13, r_id, 1, false), &r_code).await;
    assert!(acked);
    assert!(saw, "a renewed expiry pushes an invalidation");
    let (_, l) = d.req("GET", &format!("/api/v1/links/{r_code}"), None).await;
    assert!(unix(&l["expires_at"]) > first_expiry, "{l}");
    // Past the original expiry, still alive.
    while shortlinkd::timestamp::unix_now() < first_expiry {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(matches!(c.lookup(9, &r_code).await, LookupResult::Found(_)));
}

/// Sends a click batch; waits for its ack and for an `Invalidate` of
/// `code`, which comes with the fold after the ack (every
/// `shortlinkd::stats::FOLD_EVERY`), so within a few seconds.
async fn clicks_and_invalidate(
    c: &mut common::Ipc,
    id: u32,
    batch: ClickBatch,
    code: &str,
) -> (bool, bool) {
    c.send(&Request::Clicks { id, batch }).await;
    let deadline = tokio::time::Instant::now() + shortlinkd::stats::FOLD_EVERY * 3;
    let (mut acked, mut invalidated) = (false, false);
    while !(acked && invalidated) {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        match c.recv_timeout(left).await {
            Ok(Some(Reply::Event(Event::Invalidate { code: got }))) if got == code => {
                invalidated = true
            }
            Ok(Some(Reply::ClicksAck { id: got, .. })) if got == id => acked = true,
            Ok(Some(Reply::Event(_))) => {}
            Ok(Some(x)) => panic!("{x:?}"),
            Ok(None) | Err(()) => break,
        }
    }
    (acked, invalidated)
}

#[tokio::test]
async fn bad_frames_close_only_that_connection() {
    let d = Daemon::start().await;
    let v = d.create(json!({"url": "https://e.com/"})).await;
    let code = v["code"].as_str().unwrap().to_string();
    let mut good = d.ipc().await;

    // Malformed payload after the handshake.
    let mut bad = d.ipc().await;
    bad.send_raw(&[0, 0, 0, 2, 0xff, 0xff]).await;
    assert_eq!(bad.recv().await, None);
    // Oversized frame: refused from its header alone.
    let mut big = d.ipc().await;
    big.send_raw(&((MAX_FRAME + 1) as u32).to_be_bytes()).await;
    assert_eq!(big.recv().await, None);
    // A request before the hello.
    let mut early = Ipc::connect(&d.ipc_path()).await;
    early.send(&Request::Ping { id: 1 }).await;
    assert_eq!(early.recv().await, None);
    // Garbage as the very first bytes.
    let mut junk = Ipc::connect(&d.ipc_path()).await;
    junk.send_raw(b"GET / HTTP/1.1\r\n\r\n").await;
    assert_eq!(junk.recv().await, None);

    // Everyone else is still served.
    assert!(matches!(
        good.lookup(1, &code).await,
        LookupResult::Found(_)
    ));
    let mut fresh = d.ipc().await;
    assert!(matches!(
        fresh.lookup(1, &code).await,
        LookupResult::Found(_)
    ));
    assert!(d.metric("shortlinkd_ipc_protocol_errors_total").await >= 4.0);
    let log = d.log();
    assert!(log.contains("exceeds the limit"), "{log}");
    assert!(log.contains("malformed frame"), "{log}");
    assert!(
        eventually(Duration::from_secs(2), || async {
            d.metric("shortlinkd_ipc_connections").await == 2.0
        })
        .await
    );
}

#[tokio::test]
async fn batch_id_dedupe_survives_restart() {
    let mut d = Daemon::start().await;
    let v = d.create(json!({"url": "https://e.com/"})).await;
    let id = v["id"].as_u64().unwrap();
    let code = v["code"].as_str().unwrap().to_string();
    let b = ClickBatch {
        batch_id: BatchId([42; 16]),
        clicks: batch(0, id, 4, false).clicks,
    };
    let mut c = d.ipc().await;
    c.clicks(1, b.clone()).await;
    drop(c);
    d.kill9();
    d.spawn().await;
    let mut c = d.ipc().await;
    c.clicks(1, b).await;
    let (_, l) = d.req("GET", &format!("/api/v1/links/{code}"), None).await;
    assert_eq!(l["clicks"], 4);
}

#[tokio::test]
async fn a_client_with_the_fingerprint_but_not_the_key_is_refused() {
    let d = Daemon::start().await;
    let v = d
        .create(json!({"url": "https://e.com/", "max_visits": 2}))
        .await;
    let (code, id) = (
        v["code"].as_str().unwrap().to_string(),
        v["id"].as_u64().unwrap(),
    );
    Box::pin(proof_under_another_key(&d)).await;
    Box::pin(clicks_before_the_proof(&d, id)).await;
    Box::pin(replayed_proof(&d)).await;
    assert_eq!(
        d.metric("shortlinkd_ipc_handshakes_refused_total").await,
        2.0
    );
    let (_, l) = d.req("GET", &format!("/api/v1/links/{code}"), None).await;
    assert_eq!(l["clicks"], 0, "{l}");
    assert_eq!(l["state"], "active", "{l}");
    // The worker that holds the key is served.
    let mut c = d.ipc().await;
    assert!(matches!(c.lookup(1, &code).await, LookupResult::Found(_)));
}

/// The fingerprint is no secret: a hello with it gets a challenge, which
/// only the key answers. The refusal is logged with the peer's pid.
async fn proof_under_another_key(d: &Daemon) {
    let mut c = Ipc::connect(&d.ipc_path()).await;
    let challenge = match c.hello(d.fingerprint(), PROTOCOL_VERSION).await {
        Reply::Challenge { nonce } => nonce,
        r => panic!("expected a challenge, got {r:?}"),
    };
    let guess = DeploymentKey::generate().unwrap();
    match c.auth(&guess, challenge).await {
        (_, Some(Reply::Refused { reason })) => {
            assert!(reason.contains("authentication failed"), "{reason}")
        }
        r => panic!("expected a refusal, got {r:?}"),
    }
    assert_eq!(c.recv().await, None, "refused connections are closed");
    let log = d.log();
    let line = log
        .lines()
        .find(|l| l.contains("refusing IPC client") && l.contains("authentication failed"))
        .unwrap_or_else(|| panic!("no refusal logged:\n{log}"));
    assert!(
        line.contains(&format!("pid {}", std::process::id())),
        "the peer pid is logged: {line}"
    );
}

/// A client that skips the proof is closed before anything is served, and
/// its clicks never count.
async fn clicks_before_the_proof(d: &Daemon, id: u64) {
    let mut c = Ipc::connect(&d.ipc_path()).await;
    assert!(matches!(
        c.hello(d.fingerprint(), PROTOCOL_VERSION).await,
        Reply::Challenge { .. }
    ));
    c.send(&Request::Clicks {
        id: 1,
        batch: batch(1, id, 2, false),
    })
    .await;
    assert_eq!(c.recv().await, None);
}

/// A proof recorded on one connection fails on the next: new nonces.
async fn replayed_proof(d: &Daemon) {
    let mut honest = Ipc::connect(&d.ipc_path()).await;
    let Reply::Challenge { nonce: first } = honest.hello(d.fingerprint(), PROTOCOL_VERSION).await
    else {
        panic!("no challenge")
    };
    let (edge_nonce, reply) = honest.auth(&d.key, first).await;
    assert!(matches!(reply, Some(Reply::Welcome { .. })), "{reply:?}");
    let replayed = shortlink_core::handshake::LinkAuth::new(&d.key).edge_proof(
        &first,
        &edge_nonce,
        std::process::id(),
    );
    let mut replay = Ipc::connect(&d.ipc_path()).await;
    assert!(matches!(
        replay.hello(d.fingerprint(), PROTOCOL_VERSION).await,
        Reply::Challenge { .. }
    ));
    replay
        .send(&Request::Auth {
            nonce: edge_nonce,
            proof: replayed,
        })
        .await;
    assert!(
        matches!(replay.recv().await, Some(Reply::Refused { .. })),
        "a recorded proof does not pass a new challenge"
    );
}

#[tokio::test]
async fn forged_click_batches_are_refused_and_never_exhaust_a_link() {
    let d = Daemon::start().await;
    let v = d
        .create(json!({"url": "https://e.com/", "max_visits": 3}))
        .await;
    let (code, id) = (
        v["code"].as_str().unwrap().to_string(),
        v["id"].as_u64().unwrap(),
    );
    let mut c = d.ipc().await;
    let now_hour = (shortlinkd::timestamp::unix_now() / 3600) as u32;
    let forged = |n: u8, f: &dyn Fn(&mut shortlink_core::ipc::ClickCount)| {
        let mut b = batch(n, id, 1, false);
        f(&mut b.clicks[0]);
        b
    };
    let cases: Vec<(ClickBatch, &str)> = vec![
        (forged(1, &|c| c.count = u32::MAX), "count"),
        (forged(2, &|c| c.hour = now_hour + 24 * 365), "hour"),
        (forged(3, &|c| c.hour = u32::MAX), "hour"),
        (
            forged(4, &|c| c.referrer = Some("a".repeat(300))),
            "referrer",
        ),
        (
            forged(5, &|c| c.referrer = Some("Evil\r\nHost".into())),
            "referrer",
        ),
    ];
    for (i, (b, word)) in cases.into_iter().enumerate() {
        let req_id = 100 + i as u32;
        let batch_id = b.batch_id;
        c.send(&Request::Clicks {
            id: req_id,
            batch: b,
        })
        .await;
        match c.recv().await {
            Some(Reply::ClicksRefused {
                id: got,
                batch_id: b,
                reason,
            }) => {
                assert_eq!((got, b), (req_id, batch_id));
                assert!(reason.contains(word), "{reason} lacks {word}");
            }
            r => panic!("expected a refusal for {word}, got {r:?}"),
        }
    }
    // Nothing of them counted, and the connection still serves.
    let (_, l) = d.req("GET", &format!("/api/v1/links/{code}"), None).await;
    assert_eq!(l["clicks"], 0, "{l}");
    assert_eq!(l["state"], "active", "{l}");
    assert!(matches!(c.lookup(9, &code).await, LookupResult::Found(_)));
    c.clicks(10, batch(9, id, 2, false)).await;
    tokio::time::sleep(shortlinkd::stats::FOLD_EVERY * 2).await;
    let (_, l) = d.req("GET", &format!("/api/v1/links/{code}"), None).await;
    assert_eq!(
        (l["clicks"].as_u64(), l["state"].as_str()),
        (Some(2), Some("active")),
        "{l}"
    );
    assert!(matches!(c.lookup(11, &code).await, LookupResult::Found(_)));
    assert!(d.log().contains("refusing a click batch"));
}

#[tokio::test]
async fn a_subscriber_that_stops_reading_never_slows_edits() {
    let d = Daemon::start().await;
    // A snapshot bigger than a socket buffer, so a subscriber that reads
    // nothing leaves the daemon's writer stuck in the middle of it.
    let links: Vec<serde_json::Value> = (0..10_000)
        .map(|i| json!({"url": format!("https://e.com/{i}"), "alias": format!("{}-{i:05}", "a".repeat(52))}))
        .collect();
    let (s, v) = d
        .req(
            "POST",
            "/api/v1/links/batch",
            Some(json!({ "links": links })),
        )
        .await;
    assert_eq!(s, 200, "{v}");
    d.create(json!({"url": "https://e.com/0", "alias": "edit-me"}))
        .await;
    let mut healthy = d.ipc().await;
    assert_eq!(healthy.subscribe(1).await.len(), 10_001);
    let mut slow = d.ipc().await;
    slow.send(&Request::Subscribe { id: 1, since: None }).await;
    // Long enough for its writer to have made no progress for the flush
    // timeout (500 ms).
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(d.metric("shortlinkd_ipc_subscribers").await, 2.0);

    let started = std::time::Instant::now();
    let mut waited = 0;
    for i in 0..50 {
        let t = std::time::Instant::now();
        let (s, _) = d
            .req(
                "PATCH",
                "/api/v1/links/edit-me",
                Some(json!({"url": format!("https://e.com/v{i}")})),
            )
            .await;
        assert_eq!(s, 200);
        if t.elapsed() >= Duration::from_millis(400) {
            waited += 1;
        }
        // The healthy worker still has each invalidation before the reply.
        let now = healthy.ready_now();
        assert!(
            now.contains(&Reply::Event(Event::Invalidate {
                code: "edit-me".into()
            })),
            "edit {i}: {now:?}"
        );
    }
    let total = started.elapsed();
    println!("50 edits in {total:?}; {waited} waited on the slow subscriber");
    assert!(waited <= 1, "{waited} edits waited on the slow subscriber");
    assert!(total < Duration::from_secs(20), "{total:?}");
    // It was cut off: its connection ends after what the socket held.
    let mut closed = false;
    for _ in 0..100 {
        match slow.recv_timeout(Duration::from_secs(5)).await {
            Ok(Some(_)) => continue,
            Ok(None) => {
                closed = true;
                break;
            }
            Err(()) => break,
        }
    }
    assert!(closed, "the slow subscriber was never disconnected");
    assert_eq!(d.metric("shortlinkd_ipc_subscribers").await, 1.0);
    assert!(d.log().contains("cutting off an IPC subscriber"));
}
