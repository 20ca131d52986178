//! Webhooks through the real daemon (on the suite's store) and a real
//! receiver: an axum server on 127.0.0.1 inside the test that checks
//! every signature, answers 500 first, then holds requests past the
//! daemon's timeout, then recovers. Every event arrives exactly once after
//! the recovery, the delivery log shows the attempts and the last error,
//! API calls finish while the receiver holds a delivery, a redelivery
//! arrives again, and clicks arrive as summaries. On PostgreSQL, two
//! daemons on one database send each delivery once.

mod common;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use common::{batch, eventually, on_postgres, stderr, stdout, suite_database, Daemon};
use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use sha2::Sha256;

/// What the receiver does with the next request.
const FAIL: u8 = 0;
const HANG: u8 = 1;
const OK: u8 = 2;

/// One request the receiver got.
#[derive(Debug, Clone)]
struct Received {
    delivery: i64,
    event: String,
    body: Value,
    /// The status it answered (`None`: held until the sender gave up).
    answered: Option<u16>,
}

#[derive(Default)]
struct Receiver {
    mode: AtomicU8,
    /// The webhook's secret, once known.
    secret: Mutex<String>,
    got: Mutex<Vec<Received>>,
    /// Requests held right now.
    held: AtomicUsize,
    /// Requests whose signature did not verify.
    bad_signatures: AtomicUsize,
}

impl Receiver {
    fn got(&self) -> Vec<Received> {
        self.got.lock().unwrap().clone()
    }

    /// The requests answered 200.
    fn delivered(&self) -> Vec<Received> {
        self.got()
            .into_iter()
            .filter(|r| r.answered == Some(200))
            .collect()
    }
}

/// Decrements the held count when a held request ends (the sender hung up
/// and the server dropped the handler).
struct Held(Arc<Receiver>);

impl Drop for Held {
    fn drop(&mut self) {
        self.0.held.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The receiver's check, as the documentation tells a receiver to make it.
fn verifies(secret: &str, header: &str, body: &[u8]) -> bool {
    let mut t = None;
    let mut v1 = None;
    for part in header.split(',') {
        match part.split_once('=') {
            Some(("t", v)) => t = Some(v.to_string()),
            Some(("v1", v)) => v1 = hex::decode(v).ok(),
            _ => {}
        }
    }
    let (Some(t), Some(v1)) = (t, v1) else {
        return false;
    };
    let age = shortlinkd::timestamp::unix_now() - t.parse::<i64>().unwrap_or(0);
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("{t}.").as_bytes());
    mac.update(body);
    age.abs() <= 300 && mac.verify_slice(&v1).is_ok()
}

async fn receive(State(r): State<Arc<Receiver>>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let header = |n: &str| {
        headers
            .get(n)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string()
    };
    let secret = r.secret.lock().unwrap().clone();
    if !verifies(&secret, &header("shortlink-signature"), &body) {
        r.bad_signatures.fetch_add(1, Ordering::SeqCst);
        return StatusCode::UNAUTHORIZED;
    }
    let mut got = Received {
        delivery: header("shortlink-delivery").parse().unwrap_or(-1),
        event: header("shortlink-event"),
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        answered: None,
    };
    match r.mode.load(Ordering::SeqCst) {
        FAIL => {
            got.answered = Some(500);
            r.got.lock().unwrap().push(got);
            StatusCode::INTERNAL_SERVER_ERROR
        }
        HANG => {
            r.got.lock().unwrap().push(got);
            r.held.fetch_add(1, Ordering::SeqCst);
            let _held = Held(Arc::clone(&r));
            tokio::time::sleep(Duration::from_secs(120)).await;
            StatusCode::OK
        }
        _ => {
            got.answered = Some(200);
            r.got.lock().unwrap().push(got);
            StatusCode::OK
        }
    }
}

async fn receiver(mode: u8) -> (SocketAddr, Arc<Receiver>) {
    let r = Arc::new(Receiver::default());
    r.mode.store(mode, Ordering::SeqCst);
    let app = axum::Router::new()
        .route("/hook", axum::routing::post(receive))
        .with_state(Arc::clone(&r));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (addr, r)
}

/// The daemon flags of these tests: loopback receivers allowed, a short
/// schedule (retry after 1 s, 2 s at most, 2 s timeout), 2 s summaries.
const FAST: &[&str] = &[
    "--webhook-private=true",
    "--webhook-retry-first",
    "1",
    "--webhook-retry-max",
    "2",
    "--webhook-timeout-ms",
    "2000",
    "--webhook-poll-ms",
    "100",
    "--webhook-summary-interval",
    "2",
];

async fn add_webhook(d: &Daemon, addr: SocketAddr, r: &Receiver, events: &[&str]) -> i64 {
    let (s, v) = d
        .req(
            "POST",
            "/api/v1/webhooks",
            Some(json!({ "url": format!("http://{addr}/hook"), "events": events })),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    let secret = v["secret"].as_str().unwrap();
    assert!(secret.starts_with("whsec_"), "{v}");
    *r.secret.lock().unwrap() = secret.to_string();
    v["id"].as_i64().unwrap()
}

/// A new team `team` with a webhook of `events` to `addr` (whose secret
/// `r` learns); the webhook's id.
async fn team_webhook(
    d: &Daemon,
    team: &str,
    addr: SocketAddr,
    r: &Receiver,
    events: &[&str],
) -> i64 {
    let (s, _) = d
        .req("POST", "/api/v1/teams", Some(json!({ "name": team })))
        .await;
    assert_eq!(s, 201);
    let (s, v) = d
        .req(
            "POST",
            "/api/v1/webhooks",
            Some(json!({"url": format!("http://{addr}/hook"), "events": events, "team": team})),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    *r.secret.lock().unwrap() = v["secret"].as_str().unwrap().to_string();
    v["id"].as_i64().unwrap()
}

/// A key with `scopes` of a new member `user` of `team`.
async fn member_key(d: &Daemon, team: &str, user: &str, scopes: &[&str]) -> String {
    let body =
        json!({"name": user, "password": "correct horse battery", "team": team, "role": "member"});
    let (s, v) = d.req("POST", "/api/v1/users", Some(body)).await;
    assert_eq!(s, 201, "{v}");
    let body = json!({"name": format!("{user}'s key"), "scopes": scopes, "user": user});
    let (s, v) = d.req("POST", "/api/v1/keys", Some(body)).await;
    assert_eq!(s, 201, "{v}");
    v["secret"].as_str().unwrap().to_string()
}

async fn log(d: &Daemon, hook: i64) -> Vec<Value> {
    let (s, v) = d
        .req(
            "GET",
            &format!("/api/v1/webhooks/{hook}/deliveries?limit=1000"),
            None,
        )
        .await;
    assert_eq!(s, 200, "{v}");
    v["deliveries"].as_array().unwrap().clone()
}

/// A time as the API writes it: an RFC 3339 string, not Unix seconds.
fn assert_rfc3339(v: &Value) {
    let text = v
        .as_str()
        .unwrap_or_else(|| panic!("{v} is not an RFC 3339 string"));
    assert!(
        shortlinkd::timestamp::parse_time(text).is_ok() && text.ends_with('Z'),
        "{text}"
    );
}

/// The code of a link reply.
fn code(link: &Value) -> String {
    link["code"].as_str().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deliveries_survive_a_failing_then_hanging_receiver_and_arrive_once() {
    let (addr, r) = receiver(FAIL).await;
    let d = Daemon::start_with(FAST).await;

    // Bad requests are refused with the field named; the secret is never
    // listed.
    for (body, field) in [
        (
            json!({"url": "ftp://x.example/", "events": ["link.created"]}),
            "url",
        ),
        (
            json!({"url": format!("http://{addr}/hook"), "events": ["link.moved"]}),
            "events",
        ),
        (
            json!({"url": format!("http://{addr}/hook"), "events": []}),
            "events",
        ),
    ] {
        let (s, v) = d.req("POST", "/api/v1/webhooks", Some(body)).await;
        assert_eq!(s, 422, "{v}");
        assert_eq!(v["error"]["field"], field, "{v}");
    }
    let hook = add_webhook(&d, addr, &r, &["link.*"]).await;
    let (_, listed) = d.req("GET", "/api/v1/webhooks", None).await;
    assert_eq!(listed["webhooks"][0]["id"], hook, "{listed}");
    assert!(!listed.to_string().contains("whsec_"), "{listed}");

    // Failing: the receiver answers 500; the log says so, and retries come.
    let a = d.create(json!({"url": "https://example.com/a"})).await;
    assert!(
        eventually(Duration::from_secs(10), || async {
            r.got().iter().filter(|g| g.answered == Some(500)).count() >= 2
        })
        .await,
        "two attempts answered 500: {:?}",
        r.got()
    );
    let pending = log(&d, hook).await;
    assert_eq!(pending.len(), 1, "{pending:?}");
    assert_eq!(pending[0]["status"], "pending");
    assert_eq!(pending[0]["last_status"], 500);
    assert_eq!(pending[0]["last_error"], "answered 500");
    assert!(pending[0]["attempts"].as_u64().unwrap() >= 1);

    // Hanging: while the receiver holds a delivery, the API answers.
    r.mode.store(HANG, Ordering::SeqCst);
    assert!(
        eventually(Duration::from_secs(10), || async {
            r.held.load(Ordering::SeqCst) > 0
        })
        .await,
        "a delivery reached the hanging receiver"
    );
    let held_at = Instant::now();
    let (s, _) = d
        .req(
            "PATCH",
            &format!("/api/v1/links/{}", code(&a)),
            Some(json!({"url": "https://example.com/a2"})),
        )
        .await;
    assert_eq!(s, 200);
    let gone = d.create(json!({"url": "https://example.com/d"})).await;
    let (s, _) = d
        .req(
            "PATCH",
            &format!("/api/v1/links/{}", code(&gone)),
            Some(json!({"disabled": true})),
        )
        .await;
    assert_eq!(s, 200);
    let (s, _) = d
        .req("DELETE", &format!("/api/v1/links/{}", code(&gone)), None)
        .await;
    assert_eq!(s, 204);
    let capped = d
        .create(json!({"url": "https://example.com/b", "max_visits": 2}))
        .await;
    let expiring = d
        .create(json!({"url": "https://example.com/c", "ttl": 2}))
        .await;
    let api_time = held_at.elapsed();
    assert!(
        r.held.load(Ordering::SeqCst) > 0,
        "six API calls finished while the receiver still held a delivery"
    );

    // Clicks in several batches: link A 5 clicks over 3 batches, B its 2.
    let mut ipc = d.ipc().await;
    let a_id = d.codec().decode(code(&a).as_bytes()).unwrap();
    let b_id = d.codec().decode(code(&capped).as_bytes()).unwrap();
    ipc.clicks(1, batch(1, a_id, 2, false)).await;
    ipc.clicks(2, batch(2, a_id, 2, false)).await;
    ipc.clicks(3, batch(3, a_id, 1, true)).await;
    ipc.clicks(4, batch(4, b_id, 2, false)).await;

    // Let the held attempt time out and fail once more, then recover.
    assert!(
        eventually(Duration::from_secs(10), || async {
            log(&d, hook).await.iter().any(|x| {
                x["last_error"]
                    .as_str()
                    .is_some_and(|e| e.starts_with("no answer within 2000 ms"))
            })
        })
        .await,
        "a timeout is in the log"
    );
    r.mode.store(OK, Ordering::SeqCst);

    let want: Vec<(&str, String)> = vec![
        ("link.created", code(&a)),
        ("link.updated", code(&a)),
        ("link.created", code(&gone)),
        ("link.disabled", code(&gone)),
        ("link.deleted", code(&gone)),
        ("link.created", code(&capped)),
        ("link.created", code(&expiring)),
        ("link.exhausted", code(&capped)),
        ("link.expired", code(&expiring)),
    ];
    let arrived = |event: &str, c: &str| {
        r.delivered()
            .iter()
            .filter(|g| g.event == event && g.body["data"]["link"]["code"] == c)
            .count()
    };
    let clicks_of = |c: &str| -> (u64, usize) {
        let summaries: Vec<Received> = r
            .delivered()
            .into_iter()
            .filter(|g| g.event == "link.clicks" && g.body["data"]["link"]["code"] == c)
            .collect();
        let n = summaries
            .iter()
            .map(|g| g.body["data"]["clicks"].as_u64().unwrap())
            .sum();
        (n, summaries.len())
    };
    let all_in = eventually(Duration::from_secs(30), || async {
        want.iter().all(|(e, c)| arrived(e, c) >= 1)
            && clicks_of(&code(&a)).0 == 5
            && clicks_of(&code(&capped)).0 == 2
            && log(&d, hook)
                .await
                .iter()
                .all(|x| x["status"] == "delivered")
    })
    .await;
    assert!(all_in, "every event arrived: {:#?}", r.got());

    // Exactly once each: one 200 per delivery id, one delivery per event.
    let mut per_delivery: HashMap<i64, usize> = HashMap::new();
    for g in r.delivered() {
        *per_delivery.entry(g.delivery).or_default() += 1;
    }
    assert!(per_delivery.values().all(|n| *n == 1), "{per_delivery:?}");
    for (e, c) in &want {
        assert_eq!(arrived(e, c), 1, "{e} of {c}");
    }
    // Every time in RFC 3339, as in the API's replies.
    for g in r.delivered() {
        assert_rfc3339(&g.body["created_at"]);
        if g.event == "link.clicks" {
            assert_rfc3339(&g.body["data"]["from"]);
            assert_rfc3339(&g.body["data"]["to"]);
        } else {
            assert_rfc3339(&g.body["data"]["link"]["created_at"]);
            assert_rfc3339(&g.body["data"]["link"]["updated_at"]);
        }
    }
    let (a_clicks, a_summaries) = clicks_of(&code(&a));
    assert_eq!(a_clicks, 5);
    assert!(
        a_summaries <= 2,
        "5 clicks in 3 batches came in {a_summaries} summaries"
    );
    let a_bots: u64 = r
        .delivered()
        .iter()
        .filter(|g| g.event == "link.clicks" && g.body["data"]["link"]["code"] == code(&a))
        .map(|g| g.body["data"]["bot_clicks"].as_u64().unwrap())
        .sum();
    assert_eq!(a_bots, 1);
    assert_eq!(r.bad_signatures.load(Ordering::SeqCst), 0);

    // The log: the first delivery failed with 500, then timed out, then
    // arrived: its attempts and last error say so.
    let entries = log(&d, hook).await;
    let first = entries
        .iter()
        .find(|x| x["event"] == "link.created" && x["code"] == code(&a).as_str())
        .unwrap();
    assert_eq!(first["status"], "delivered");
    assert_eq!(first["last_status"], 200);
    assert!(first["attempts"].as_u64().unwrap() >= 3, "{first}");
    assert!(
        first["last_error"]
            .as_str()
            .unwrap()
            .starts_with("no answer within"),
        "{first}"
    );
    assert_eq!(first["payload"]["link"]["url"], "https://example.com/a");

    // Figures.
    let delivered = entries.len();
    let retries: u64 = entries
        .iter()
        .map(|x| x["attempts"].as_u64().unwrap() - 1)
        .sum();
    let longest = entries
        .iter()
        .map(|x| common::unix(&x["delivered_at"]) - common::unix(&x["created_at"]))
        .max()
        .unwrap();
    println!(
        "webhooks ({}): {delivered} events delivered, {retries} retries, longest delay from event to delivery {longest} s; six API calls took {api_time:?} while the receiver held a delivery",
        if on_postgres() { "PostgreSQL" } else { "SQLite" }
    );

    let counted = d
        .metric("shortlinkd_webhook_attempts_total{result=\"delivered\"}")
        .await;
    assert_eq!(counted as usize, delivered);
    assert!(
        d.metric("shortlinkd_webhook_attempts_total{result=\"retried\"}")
            .await
            >= 2.0
    );

    // Redelivery: the same event and data, a new delivery id.
    let before = r.delivered().len();
    let first_id = first["id"].as_i64().unwrap();
    let (s, again) = d
        .req(
            "POST",
            &format!("/api/v1/webhooks/{hook}/deliveries/{first_id}/redeliver"),
            None,
        )
        .await;
    assert_eq!(s, 202, "{again}");
    assert_eq!(again["redelivery_of"], first_id);
    let again_id = again["id"].as_i64().unwrap();
    assert!(
        eventually(Duration::from_secs(10), || async {
            r.delivered().iter().any(|g| g.delivery == again_id)
        })
        .await
    );
    let resent = r
        .delivered()
        .into_iter()
        .find(|g| g.delivery == again_id)
        .unwrap();
    assert_eq!(resent.body["redelivery_of"], first_id);
    assert_eq!(resent.body["data"]["link"]["code"], code(&a).as_str());
    assert_eq!(r.delivered().len(), before + 1);
    let (s, v) = d
        .req(
            "POST",
            &format!("/api/v1/webhooks/{hook}/deliveries/999999/redeliver"),
            None,
        )
        .await;
    assert_eq!(s, 404, "{v}");

    // A viewer reads the log but manages nothing.
    let (s, key) = d
        .req(
            "POST",
            "/api/v1/keys",
            Some(json!({"name": "viewer", "scopes": ["links:read"]})),
        )
        .await;
    assert_eq!(s, 201, "{key}");
    let viewer = key["secret"].as_str().unwrap();
    let (s, _, v) = d
        .req_with(
            "GET",
            &format!("/api/v1/webhooks/{hook}/deliveries"),
            &[("x-api-key", viewer)],
            None,
        )
        .await;
    assert_eq!(s, 200, "{v}");
    for (method, path) in [
        (
            "POST",
            format!("/api/v1/webhooks/{hook}/deliveries/{first_id}/redeliver"),
        ),
        ("DELETE", format!("/api/v1/webhooks/{hook}")),
    ] {
        let (s, _, v) = d
            .req_with(method, &path, &[("x-api-key", viewer)], None)
            .await;
        assert_eq!(s, 403, "{method} {path}: {v}");
    }

    // The CLI lists the webhook and its log, and refuses a bad event.
    let out = d.cli(&["webhook", "list"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains(&format!("http://{addr}/hook")));
    let out = d.cli(&["webhook", "deliveries", &hook.to_string()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("link.exhausted"), "{}", stdout(&out));
    assert!(stdout(&out).contains("delivered"));
    let out = d.cli(&[
        "webhook",
        "add",
        "http://127.0.0.1:9/x",
        "--events",
        "link.moved",
    ]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("\"link.moved\""), "{}", stderr(&out));

    // Deleting the webhook stops its deliveries.
    let (s, _) = d
        .req("DELETE", &format!("/api/v1/webhooks/{hook}"), None)
        .await;
    assert_eq!(s, 204);
    let count = r.got().len();
    d.create(json!({"url": "https://example.com/after"})).await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(
        r.got().len(),
        count,
        "nothing is sent for a deleted webhook"
    );
}

/// A team subscribed to one event hears of that event alone, and of its
/// own links alone; nothing is queued for a team with no webhook.
#[tokio::test]
async fn only_subscribed_events_of_the_team_are_queued() {
    let (addr, r) = receiver(OK).await;
    let d = Daemon::start_with(FAST).await;
    let hook = team_webhook(&d, "sales", addr, &r, &["link.deleted"]).await;
    // The admin's links are in the default team: no delivery.
    let l = d.create(json!({"url": "https://example.com/x"})).await;
    let (s, _) = d
        .req("DELETE", &format!("/api/v1/links/{}", code(&l)), None)
        .await;
    assert_eq!(s, 204);
    // A key of the sales team makes and deletes a link: one delivery.
    let sales_key = member_key(&d, "sales", "sam", &["links:write", "links:read"]).await;
    let (s, _, made) = d
        .req_with(
            "POST",
            "/api/v1/links",
            &[("x-api-key", &sales_key)],
            Some(json!({"url": "https://example.com/s"})),
        )
        .await;
    assert_eq!(s, 201, "{made}");
    let (s, _, _) = d
        .req_with(
            "DELETE",
            &format!("/api/v1/links/{}", code(&made)),
            &[("x-api-key", &sales_key)],
            None,
        )
        .await;
    assert_eq!(s, 204);
    assert!(
        eventually(Duration::from_secs(10), || async {
            !r.delivered().is_empty()
        })
        .await
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    let got = r.delivered();
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].event, "link.deleted");
    assert_eq!(got[0].body["data"]["link"]["code"], code(&made).as_str());
    // The link's times as the API wrote them when it was made.
    assert_rfc3339(&got[0].body["created_at"]);
    assert_eq!(
        got[0].body["data"]["link"]["created_at"],
        made["created_at"]
    );
    let logged = log(&d, hook).await;
    assert_eq!(logged.len(), 1);
    assert_eq!(
        logged[0]["payload"]["link"]["created_at"],
        made["created_at"]
    );
}

/// Two daemons on one PostgreSQL database: each delivery is sent once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_send_each_delivery_once() {
    if !on_postgres() {
        eprintln!("skipped: needs with-pg");
        return;
    }
    let (addr, r) = receiver(OK).await;
    let db = suite_database();
    let mut args: Vec<&str> = db.iter().map(String::as_str).collect();
    args.extend_from_slice(FAST);
    let a = Daemon::start_with(&args).await;
    let b = Daemon::start_with(&args).await;
    let hook = add_webhook(&a, addr, &r, &["link.created"]).await;
    let mut codes = Vec::new();
    for i in 0..20 {
        let node = if i % 2 == 0 { &a } else { &b };
        codes.push(code(
            &node
                .create(json!({"url": format!("https://example.com/{i}")}))
                .await,
        ));
    }
    assert!(
        eventually(Duration::from_secs(20), || async {
            r.delivered().len() >= 20
        })
        .await,
        "{:?}",
        r.got()
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    let got = r.got();
    assert_eq!(
        got.len(),
        20,
        "each delivery sent once, by one node: {got:#?}"
    );
    let mut ids: Vec<i64> = got.iter().map(|g| g.delivery).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 20);
    assert_eq!(log(&b, hook).await.len(), 20);
}

/// The admin UI: an admin adds a webhook (the secret shown once), reads
/// its delivery log and sends a delivery again.
#[tokio::test]
async fn the_admin_ui_adds_webhooks_shows_the_log_and_redelivers() {
    use common::admin::{send, sign_in};
    let (addr, r) = receiver(OK).await;
    let d = Daemon::start_with(FAST).await;
    let admin = sign_in(&d).await;
    let get = |path: String| {
        let cookie = admin.cookie.clone();
        let d = &d;
        async move {
            let (s, _, v) = send(d, "GET", &path, &[("cookie", &cookie)], None).await;
            (s, v.as_str().unwrap_or_default().to_string())
        }
    };
    let url = format!("http://{addr}/hook");
    let (s, page) = admin
        .post(
            &d,
            "/admin/webhooks",
            &[
                ("url", &url),
                ("team", "default"),
                ("events", "link.created"),
                ("events", "link.deleted"),
            ],
        )
        .await;
    assert_eq!(s, 303, "{page}");
    let (s, page) = get("/admin/webhooks".into()).await;
    assert_eq!(s, 200);
    let start = page.find("id=\"secret\"").expect("the secret, once");
    let secret = page[start..]
        .split("value=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .to_string();
    assert!(secret.starts_with("whsec_"), "{secret}");
    *r.secret.lock().unwrap() = secret.clone();
    assert!(page.contains(&url), "{page}");
    let (_, again) = get("/admin/webhooks".into()).await;
    assert!(!again.contains(&secret), "the secret is shown once");
    let (_, listed) = d.req("GET", "/api/v1/webhooks", None).await;
    let hook = listed["webhooks"][0]["id"].as_i64().unwrap();
    assert_eq!(
        listed["webhooks"][0]["events"],
        json!(["link.created", "link.deleted"])
    );

    let link = d.create(json!({"url": "https://example.com/ui"})).await;
    assert!(
        eventually(Duration::from_secs(10), || async {
            r.delivered().len() == 1
        })
        .await
    );
    let (s, log_page) = get(format!("/admin/webhooks/{hook}")).await;
    assert_eq!(s, 200);
    assert!(log_page.contains("data-status=\"delivered\""), "{log_page}");
    assert!(log_page.contains(&code(&link)), "{log_page}");
    let delivery = r.delivered()[0].delivery;
    let (s, _) = admin
        .post(
            &d,
            &format!("/admin/webhooks/{hook}/deliveries/{delivery}/redeliver"),
            &[],
        )
        .await;
    assert_eq!(s, 303);
    assert!(
        eventually(Duration::from_secs(10), || async {
            r.delivered().len() == 2
        })
        .await
    );
    assert_eq!(r.delivered()[1].body["redelivery_of"], delivery);
    let (s, _) = admin
        .post(&d, &format!("/admin/webhooks/{hook}/delete"), &[])
        .await;
    assert_eq!(s, 303);
    let (_, page) = get("/admin/webhooks".into()).await;
    assert!(!page.contains(&url));
}

/// A receiver on a private address is refused when it is added, unless
/// `webhooks.private` allows it (the link checker's rule), whatever form
/// the address takes; and one added while they were allowed is refused at
/// each delivery once they are not: the log says why, and the receiver
/// gets nothing.
#[tokio::test]
async fn private_receivers_are_refused_unless_allowed() {
    let (addr, r) = receiver(OK).await;
    let strict: Vec<&str> = FAST
        .iter()
        .copied()
        .filter(|a| !a.starts_with("--webhook-private"))
        .collect();
    let strict_daemon = Daemon::start_with(&strict).await;
    let port = addr.port();
    for url in [
        format!("http://127.0.0.1:{port}/hook"),
        format!("http://[::ffff:127.0.0.1]:{port}/hook"),
        format!("http://[::1]:{port}/hook"),
        format!("http://localhost:{port}/hook"),
        "http://10.1.2.3/hook".to_string(),
        "http://169.254.169.254/latest/meta-data".to_string(),
        "http://[fd00::1]/hook".to_string(),
    ] {
        let (s, v) = strict_daemon
            .req(
                "POST",
                "/api/v1/webhooks",
                Some(json!({ "url": url, "events": ["link.created"] })),
            )
            .await;
        assert_eq!(
            (s, v["error"]["field"].as_str()),
            (422, Some("url")),
            "{url}: {v}"
        );
        assert!(
            v["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("private")),
            "{url}: {v}"
        );
    }
    let (_, v) = strict_daemon.req("GET", "/api/v1/webhooks", None).await;
    assert_eq!(v["webhooks"], json!([]), "none was added: {v}");
    drop(strict_daemon);

    let mut d = Daemon::start_with(FAST).await;
    let hook = add_webhook(&d, addr, &r, &["link.created"]).await;
    d.restart_without("--webhook-private").await;
    d.create(json!({"url": "https://example.com/p"})).await;
    assert!(
        eventually(Duration::from_secs(10), || async {
            log(&d, hook).await.first().is_some_and(|x| {
                x["last_error"]
                    .as_str()
                    .is_some_and(|e| e.starts_with("refused: ") && e.contains("private address"))
            })
        })
        .await,
        "{:?}",
        log(&d, hook).await
    );
    assert!(r.got().is_empty());
}

/// One team's receivers hang (each request held past the test): they hold
/// at most half the senders, and another team's deliveries go out at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_teams_hanging_receivers_never_hold_up_another_teams() {
    let (hang_addr, hanging) = receiver(HANG).await;
    let (ok_addr, ok) = receiver(OK).await;
    // Four senders; an attempt may take a minute.
    let d = Daemon::start_with(&[
        "--webhook-private=true",
        "--webhook-concurrency",
        "4",
        "--webhook-timeout-ms",
        "60000",
        "--webhook-poll-ms",
        "100",
    ])
    .await;
    team_webhook(&d, "slow", hang_addr, &hanging, &["link.created"]).await;
    add_webhook(&d, ok_addr, &ok, &["link.created"]).await;
    let slow_key = member_key(&d, "slow", "sly", &["links:write"]).await;
    for i in 0..6 {
        let (s, _, v) = d
            .req_with(
                "POST",
                "/api/v1/links",
                &[("x-api-key", &slow_key)],
                Some(json!({"url": format!("https://example.com/slow/{i}")})),
            )
            .await;
        assert_eq!(s, 201, "{v}");
    }
    // The slow team's receiver holds its share of the senders.
    assert!(
        eventually(Duration::from_secs(10), || async {
            hanging.held.load(Ordering::SeqCst) == 2
        })
        .await,
        "held: {}",
        hanging.held.load(Ordering::SeqCst)
    );
    // Another team's link: delivered while the slow ones still hang.
    let made = d.create(json!({"url": "https://example.com/fast"})).await;
    assert!(
        eventually(Duration::from_secs(10), || async {
            !ok.delivered().is_empty()
        })
        .await,
        "the other team's delivery waited behind the hanging ones"
    );
    assert_eq!(
        ok.delivered()[0].body["data"]["link"]["code"],
        code(&made).as_str()
    );
    assert_eq!(
        hanging.held.load(Ordering::SeqCst),
        2,
        "never past its share"
    );
    assert_eq!(hanging.got().len(), 2);
}
