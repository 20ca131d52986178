//! What every store promises about webhooks, checked through [`Store`]
//! alone on SQLite and on PostgreSQL (a private cluster): deliveries are
//! queued with the link writes only for a team subscribed to the event, a
//! claim leases a row (a second claim does not see it), failures come due
//! again at their retry time and end given up or delivered, redelivery
//! queues a copy, and the sweep queues each expiry and each click summary
//! once.

use shortlink_core::device::DeviceClass;
use shortlink_core::ipc::{BatchId, ClickBatch, ClickCount};

use super::{
    Attempt, DeliveryStatus, FairShare, ImportLink, LinkEdit, NewLink, NewWebhook, Store,
    WebhookEvent,
};
use crate::store::teams::DEFAULT_TEAM;
use crate::store::Link;
use crate::timestamp::unix_now;

fn link_of(id: u64, team_id: i64) -> Link {
    Link {
        id,
        url: format!("https://e.com/{id}"),
        team_id,
        ..Link::default()
    }
}

async fn insert(store: &Store, link: Link) {
    let new = NewLink {
        dedupe_hash: [link.id as u8; 32],
        link,
        dedupe: false,
        alias_targets: Vec::new(),
    };
    store.insert_links(vec![new], 1).await.unwrap();
}

fn edit(f: impl FnOnce(&mut Link) + Send + 'static) -> LinkEdit {
    LinkEdit {
        apply: Box::new(move |old: &Link| {
            let mut new = old.clone();
            f(&mut new);
            Ok(new)
        }),
        alias_targets: Vec::new(),
        check: Box::new(|_, _| None),
    }
}

/// `(event, link)` of every delivery of `hook`, oldest first.
async fn queued(store: &Store, hook: i64) -> Vec<(String, Option<u64>)> {
    let mut all = store.deliveries(hook, None, 100).await.unwrap();
    all.reverse();
    all.into_iter().map(|d| (d.event, d.link_id)).collect()
}

fn ev(e: WebhookEvent, id: u64) -> (String, Option<u64>) {
    (e.as_str().to_string(), Some(id))
}

/// Every webhook check, in order, on a fresh, empty store.
pub async fn check_webhooks(store: &Store) {
    use WebhookEvent::*;
    let sales = store.add_team("sales".into(), 1).await.unwrap().id;
    let hook = |team_id, events: Vec<WebhookEvent>| NewWebhook {
        team_id,
        url: "https://hooks.example/in".into(),
        secret: "sealed".into(),
        events,
        created_at: 1,
        created_by: "cli".into(),
    };
    let main = store
        .add_webhook(hook(
            DEFAULT_TEAM,
            vec![Created, Disabled, Deleted, Exhausted, Expired, Clicks],
        ))
        .await
        .unwrap();
    let other = store.add_webhook(hook(sales, vec![Created])).await.unwrap();
    assert_eq!(main.events.len(), 6);
    assert_eq!(
        store.webhooks(Some(sales)).await.unwrap(),
        vec![other.clone()]
    );
    assert_eq!(store.webhooks(None).await.unwrap().len(), 2);
    assert_eq!(store.webhook(main.id).await.unwrap().unwrap(), main);

    // Writes queue only what a team subscribed to.
    insert(store, link_of(1, DEFAULT_TEAM)).await;
    insert(store, link_of(2, sales)).await;
    store
        .update_link(1, edit(|l| l.url = "https://e.com/1b".into()))
        .await
        .unwrap();
    store
        .update_link(1, edit(|l| l.disabled = true))
        .await
        .unwrap();
    store.delete_link(1).await.unwrap();
    assert_eq!(
        queued(store, main.id).await,
        [ev(Created, 1), ev(Disabled, 1), ev(Deleted, 1)]
    );
    assert_eq!(queued(store, other.id).await, [ev(Created, 2)]);
    let first = store.deliveries(main.id, None, 100).await.unwrap();
    assert!(first[2].payload.contains("\"url\":\"https://e.com/1\""));

    // Edits and deletes queue at the time they are made: claims run later.
    let t = unix_now() + 10;
    // A claim leases what is due; a second claim sees none of it.
    let claimed = store
        .claim_deliveries(t, t + 100, 2, FairShare::unlimited())
        .await
        .unwrap();
    assert_eq!(claimed.len(), 2);
    assert_eq!(claimed[0].url, "https://hooks.example/in");
    let rest = store
        .claim_deliveries(t, t + 100, 10, FairShare::unlimited())
        .await
        .unwrap();
    assert_eq!(rest.len(), 2, "the other two");
    assert!(store
        .claim_deliveries(t, t + 100, 10, FairShare::unlimited())
        .await
        .unwrap()
        .is_empty());
    // Both are the `link.created` of time 1: main's and sales'.
    let (mine, theirs) = match claimed[0].delivery.webhook_id == main.id {
        true => (&claimed[0], &claimed[1]),
        false => (&claimed[1], &claimed[0]),
    };
    let (a, b) = (mine.delivery.id, theirs.delivery.id);
    let failed = Attempt::Failed {
        status: Some(503),
        error: "answered 503".into(),
        retry_at: Some(t + 10),
    };
    store.record_attempt(a, t + 1, failed).await.unwrap();
    assert!(store
        .claim_deliveries(t + 5, t + 100, 10, FairShare::unlimited())
        .await
        .unwrap()
        .is_empty());
    let again = store
        .claim_deliveries(t + 10, t + 200, 10, FairShare::unlimited())
        .await
        .unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].delivery.id, a);
    assert_eq!(again[0].delivery.attempts, 1);
    assert_eq!(again[0].delivery.last_status, Some(503));
    store
        .record_attempt(a, t + 11, Attempt::Delivered { status: 204 })
        .await
        .unwrap();
    let given_up = Attempt::Failed {
        status: None,
        error: "no answer".into(),
        retry_at: None,
    };
    store.record_attempt(b, t + 2, given_up).await.unwrap();
    // The leases of the other two end at t + 100: due again then.
    assert_eq!(
        store
            .claim_deliveries(t + 101, t + 1000, 10, FairShare::unlimited())
            .await
            .unwrap()
            .len(),
        2
    );
    let log = store.deliveries(main.id, None, 100).await.unwrap();
    let mut both = log.clone();
    both.extend(store.deliveries(other.id, None, 100).await.unwrap());
    let by_id = |id| both.iter().find(|d| d.id == id).unwrap().clone();
    let done = by_id(a);
    assert_eq!(done.status, DeliveryStatus::Delivered);
    assert_eq!((done.attempts, done.delivered_at), (2, Some(t + 11)));
    assert_eq!(done.last_error.as_deref(), Some("answered 503"));
    let gone = by_id(b);
    assert_eq!(gone.status, DeliveryStatus::Failed);
    assert_eq!(gone.last_error.as_deref(), Some("no answer"));

    // Paging, newest first; redelivery queues a copy, due now.
    let page = store.deliveries(main.id, Some(log[0].id), 1).await.unwrap();
    assert_eq!(page.len(), 1);
    assert_eq!(page[0].id, log[1].id);
    let copy = store.redeliver(main.id, a, t + 400).await.unwrap().unwrap();
    assert_eq!(copy.redelivery_of, Some(a));
    assert_eq!(
        (copy.event.as_str(), copy.status),
        ("link.created", DeliveryStatus::Pending)
    );
    assert_eq!(copy.payload, done.payload);
    assert!(store
        .redeliver(other.id, a, t + 400)
        .await
        .unwrap()
        .is_none());
    let due = store
        .claim_deliveries(t + 400, t + 500, 10, FairShare::unlimited())
        .await
        .unwrap();
    assert_eq!(
        due.iter().map(|d| d.delivery.id).collect::<Vec<_>>(),
        [copy.id]
    );

    // Exhaustion is queued with the clicks that reach the limit.
    let now = unix_now();
    insert(
        store,
        Link {
            max_visits: Some(2),
            ..link_of(3, DEFAULT_TEAM)
        },
    )
    .await;
    let click = |count| ClickCount {
        link_id: 3,
        hour: (now / 3600) as u32,
        device: DeviceClass::Desktop,
        bot: false,
        referrer: None,
        count,
        country: shortlink_core::country::UNKNOWN,
        variant: 0,
    };
    let batch = |n: u8, count| ClickBatch {
        batch_id: BatchId([n; 16]),
        clicks: vec![click(count)],
    };
    store.append_clicks(vec![batch(1, 1)], now).await.unwrap();
    store.fold_clicks().await.unwrap();
    store.append_clicks(vec![batch(2, 2)], now).await.unwrap();
    store.fold_clicks().await.unwrap();
    let exhausted =
        |q: &[(String, Option<u64>)]| q.iter().filter(|e| **e == ev(Exhausted, 3)).count();
    assert_eq!(
        exhausted(&queued(store, main.id).await),
        1,
        "once, when the limit is reached"
    );

    // The sweep: each expiry once, each link's clicks once per interval.
    insert(
        store,
        Link {
            expires_at: Some(now + 2),
            ..link_of(4, DEFAULT_TEAM)
        },
    )
    .await;
    let swept = store.sweep_webhook_events(now + 1, 1).await.unwrap();
    assert_eq!(swept.expired, 0);
    assert_eq!(swept.summaries, 1, "link 3's clicks");
    let swept = store.sweep_webhook_events(now + 3, 60).await.unwrap();
    assert_eq!((swept.expired, swept.summaries), (1, 0));
    let swept = store.sweep_webhook_events(now + 4, 1).await.unwrap();
    assert_eq!((swept.expired, swept.summaries), (0, 0), "nothing new");
    store.append_clicks(vec![batch(3, 4)], now).await.unwrap();
    store.fold_clicks().await.unwrap();
    let swept = store.sweep_webhook_events(now + 5, 1).await.unwrap();
    assert_eq!(swept.summaries, 1);
    let summaries: Vec<serde_json::Value> = store
        .deliveries(main.id, None, 100)
        .await
        .unwrap()
        .into_iter()
        .filter(|d| d.event == "link.clicks")
        .map(|d| serde_json::from_str(&d.payload).unwrap())
        .collect();
    let counted: Vec<i64> = summaries
        .iter()
        .map(|s| s["clicks"].as_i64().unwrap())
        .collect();
    assert_eq!(
        counted,
        [4, 3],
        "newest first: each summary counts its interval"
    );
    assert_eq!(summaries[0]["link"]["clicks"], 7);
    let q = queued(store, main.id).await;
    assert_eq!(q.iter().filter(|e| **e == ev(Expired, 4)).count(), 1);
    // (Sales' given-up delivery, of time 1, has left the log: done more
    // than 30 days before the sweeps.)
    assert!(
        queued(store, other.id).await.is_empty(),
        "sales subscribed to none of it"
    );

    // A takedown that switches a link off queues link.disabled.
    insert(store, link_of(9, DEFAULT_TEAM)).await;
    let taken = store
        .take_down(super::NewTakedown {
            kind: "host",
            selector: "e.com/9".into(),
            reason: "test".into(),
            by: "cli".into(),
            at: now,
            matcher: super::Matcher::Urls {
                contains: Some("e.com/9".into()),
                test: std::sync::Arc::new(|u: &str| u.ends_with("e.com/9")),
            },
            switch_off: true,
            once: false,
            unless_first: false,
        })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(taken.changed.len(), 1);
    let q = queued(store, main.id).await;
    assert_eq!(q.iter().filter(|e| **e == ev(Disabled, 9)).count(), 1);

    // A new link.clicks subscription reports clicks from when it was made.
    insert(store, link_of(6, sales)).await;
    let click6 = |n: u8, count| ClickBatch {
        batch_id: BatchId([n; 16]),
        clicks: vec![ClickCount {
            link_id: 6,
            ..click(count)
        }],
    };
    store.append_clicks(vec![click6(10, 5)], now).await.unwrap();
    store.fold_clicks().await.unwrap();
    let late = store.add_webhook(hook(sales, vec![Clicks])).await.unwrap();
    store.append_clicks(vec![click6(11, 2)], now).await.unwrap();
    store.fold_clicks().await.unwrap();
    let swept = store.sweep_webhook_events(now + 7, 1).await.unwrap();
    assert_eq!(swept.summaries, 1);
    let summary = &store.deliveries(late.id, None, 10).await.unwrap()[0];
    let summary: serde_json::Value = serde_json::from_str(&summary.payload).unwrap();
    assert_eq!(summary["clicks"], 2, "not the 5 from before the webhook");
    assert_eq!(summary["link"]["clicks"], 7);

    // Done deliveries leave the log after 30 days; pending ones stay.
    let pending = |log: &[super::Delivery]| {
        log.iter()
            .filter(|d| d.status == DeliveryStatus::Pending)
            .count()
    };
    let before = store.deliveries(main.id, None, 100).await.unwrap();
    let newest = before[0].id;
    store
        .record_attempt(newest, now, Attempt::Delivered { status: 200 })
        .await
        .unwrap();
    let far = now + crate::store::webhooks::KEEP_LOG + 100;
    store.sweep_webhook_events(far, 1).await.unwrap();
    let after = store.deliveries(main.id, None, 100).await.unwrap();
    assert_eq!(after.len(), before.len() - 1);
    assert!(after.iter().all(|d| d.id != newest));
    assert_eq!(pending(&after), pending(&before) - 1);

    // A team keeps its webhooks: it is deleted only without them.
    store.delete_link(2).await.unwrap();
    store.delete_link(6).await.unwrap();
    assert!(matches!(
        store.delete_team(sales).await,
        Err(crate::store::StoreError::InUse(m)) if m.contains("webhooks")
    ));
    store.delete_webhook(other.id).await.unwrap();
    store.delete_webhook(late.id).await.unwrap();
    store.delete_team(sales).await.unwrap();

    // Deleting a webhook takes its log with it.
    assert!(store.delete_webhook(main.id).await.unwrap());
    assert!(!store.delete_webhook(main.id).await.unwrap());
    assert!(store
        .deliveries(main.id, None, 10)
        .await
        .unwrap()
        .is_empty());
    assert!(store.webhook(main.id).await.unwrap().is_none());
}

/// A webhook of team `team_id` for `link.created` alone.
pub(crate) fn created_hook(team_id: i64) -> NewWebhook {
    NewWebhook {
        team_id,
        url: "https://hooks.example/in".into(),
        secret: "sealed".into(),
        events: vec![WebhookEvent::Created],
        created_at: 1,
        created_by: "cli".into(),
    }
}

/// Creates written together (a batch, an import chunk) queue their
/// `link.created` as creates one at a time do: for the links of a
/// subscribed team alone, in their order, each with its link.
pub async fn check_bulk_created(store: &Store) {
    let sales = store.add_team("sales".into(), 1).await.unwrap().id;
    let hook = store.add_webhook(created_hook(sales)).await.unwrap();
    let new = |id: u64, team_id| NewLink {
        dedupe_hash: [id as u8; 32],
        link: link_of(id, team_id),
        dedupe: false,
        alias_targets: Vec::new(),
    };
    let batch = vec![new(1, DEFAULT_TEAM), new(2, sales), new(3, sales)];
    store.insert_links(batch, 1).await.unwrap();
    let rows = [new(4, sales), new(5, DEFAULT_TEAM), new(6, sales)].map(|new| ImportLink {
        new,
        keep_id: None,
        advance: true,
        clicks: None,
        sees: None,
    });
    store.import_links(rows.into(), 1).await.unwrap();
    let created = |id| ev(WebhookEvent::Created, id);
    assert_eq!(
        queued(store, hook.id).await,
        [created(2), created(3), created(4), created(6)]
    );
    let newest = store.deliveries(hook.id, None, 1).await.unwrap();
    assert!(newest[0].payload.contains("\"url\":\"https://e.com/6\""));
}

#[tokio::test]
async fn sqlite_queues_created_links_written_together() {
    let (_dir, sqlite) = crate::store::sqlite::tests::temp_store();
    let store = Store::from(sqlite);
    check_bulk_created(&store).await;
    store.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_queues_created_links_written_together() {
    let (_cluster, store) = super::contract::postgres_store("contract-bulk-webhooks").await;
    check_bulk_created(&store).await;
    store.close();
}

/// Claims share the senders fairly: a team never past its cap counting
/// what it has in flight, the team with the fewest in flight first.
pub async fn check_fair_share(store: &Store) {
    let slow = store.add_team("slow".into(), 1).await.unwrap().id;
    let hook = |team_id| NewWebhook {
        team_id,
        url: format!("https://hooks.example/{team_id}"),
        secret: "sealed".into(),
        events: vec![WebhookEvent::Created],
        created_at: 1,
        created_by: "cli".into(),
    };
    store.add_webhook(hook(slow)).await.unwrap();
    store.add_webhook(hook(DEFAULT_TEAM)).await.unwrap();
    // The slow team's links first: its deliveries are the oldest.
    for id in 1..=6 {
        insert(store, link_of(id, slow)).await;
    }
    for id in 7..=8 {
        insert(store, link_of(id, DEFAULT_TEAM)).await;
    }
    let t = unix_now() + 10;
    let teams = |due: &[super::DueDelivery]| {
        let mut t: Vec<i64> = due.iter().map(|d| d.team_id).collect();
        t.sort_unstable();
        t
    };
    // The slow team holds two of its cap of three: the other team's come
    // first, then one more of the slow team's, no more.
    let share = FairShare {
        cap: 3,
        in_flight: vec![(slow, 2)],
    };
    let due = store
        .claim_deliveries(t, t + 100, 2, share.clone())
        .await
        .unwrap();
    assert_eq!(teams(&due), vec![DEFAULT_TEAM; 2], "{due:?}");
    let due = store.claim_deliveries(t, t + 100, 10, share).await.unwrap();
    assert_eq!(teams(&due), vec![slow], "{due:?}");
    // At its cap: nothing more for it, whatever the room.
    let share = FairShare {
        cap: 3,
        in_flight: vec![(slow, 3)],
    };
    assert!(store
        .claim_deliveries(t, t + 100, 10, share)
        .await
        .unwrap()
        .is_empty());
    // Alone, a team takes up to its cap.
    let share = FairShare {
        cap: 3,
        in_flight: Vec::new(),
    };
    let due = store.claim_deliveries(t, t + 100, 10, share).await.unwrap();
    assert_eq!(teams(&due), vec![slow; 3], "{due:?}");
}

#[tokio::test]
async fn sqlite_keeps_the_webhook_contract() {
    let (_dir, sqlite) = crate::store::sqlite::tests::temp_store();
    let store = Store::from(sqlite);
    check_webhooks(&store).await;
    store.close();
    let (_dir, sqlite) = crate::store::sqlite::tests::temp_store();
    let store = Store::from(sqlite);
    check_fair_share(&store).await;
    store.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_keeps_the_webhook_contract() {
    let (_cluster, store) = super::contract::postgres_store("contract-webhooks").await;
    check_webhooks(&store).await;
    store.close();
    let (_cluster, store) = super::contract::postgres_store("contract-fair-share").await;
    check_fair_share(&store).await;
    store.close();
}
