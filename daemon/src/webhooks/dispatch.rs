//! The dispatcher: one task per daemon that sends the outbox. Every
//! `webhooks.poll_ms` it claims as many due deliveries as it has free
//! senders (at most `webhooks.concurrency` at once), each under a lease
//! longer than one attempt, so another node (or this one after a crash)
//! takes a row over only when its sender is gone. Senders are shared
//! fairly: one team holds at most half of them, and the team with the
//! fewest deliveries in flight is served first, so a team whose receivers
//! hang never delays another team's deliveries. Each attempt is recorded
//! as it ends: delivered on a 2xx, else retried after `retry_first`
//! doubling up to `retry_max`, until `give_up_after` has passed since the
//! event. Every few seconds it also sweeps for the time-driven events
//! (expiries, click summaries). Nothing here is awaited by a request.

use crate::outage_log::OutageLog;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::send::{self, Post};
use super::{open_secret, signature};
use crate::app::{App, SharedApp};
use crate::checker::probe::{system_tls, ProbeRules};
use crate::config::WebhookConfig;
use crate::links::LinkView;
use crate::store::{Attempt, Delivery, DueDelivery, FairShare};
use crate::timestamp::{unix_now, Timestamp};

/// Seconds a claim outlives one attempt's timeout.
const LEASE_MARGIN: i64 = 30;
/// How long a shutdown waits for attempts in flight.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);
/// Longest wait between two sweeps for time-driven events.
const MAX_SWEEP_EVERY: u64 = 10;

/// The JSON a receiver gets for `d`: the delivery's id, event and time,
/// and its payload with each link's code and short URL added; times in
/// RFC 3339, as in the API's replies.
pub fn body(app: &App, d: &Delivery) -> Vec<u8> {
    let stored: Value = serde_json::from_str(&d.payload).unwrap_or(Value::Null);
    let mut data = super::wire::with_rfc3339_times(stored);
    if let Some(link) = data.get_mut("link").and_then(Value::as_object_mut) {
        if let Some(id) = link.get("id").and_then(Value::as_u64) {
            let code = app.codec.encode(id).to_string();
            let base = app.config.base_url.trim_end_matches('/');
            link.insert("short_url".into(), json!(LinkView::short_url(base, &code)));
            link.insert("code".into(), json!(code));
        }
    }
    json!({
        "id": d.id,
        "event": d.event,
        "created_at": Timestamp(d.created_at),
        "redelivery_of": d.redelivery_of,
        "data": data,
    })
    .to_string()
    .into_bytes()
}

/// What an attempt that ended at `at` without a 2xx records: a retry
/// after the backoff, or, once `give_up_after` has passed since the event,
/// none.
fn failure(
    cfg: &WebhookConfig,
    d: &Delivery,
    at: i64,
    status: Option<u16>,
    error: String,
) -> Attempt {
    let given_up = at - d.created_at >= cfg.give_up_after as i64;
    let retry_at = (!given_up).then(|| at + cfg.backoff(d.attempts + 1) as i64);
    Attempt::Failed {
        status,
        error,
        retry_at,
    }
}

/// Deliveries in flight per team, for the fair share of the senders.
#[derive(Default, Clone)]
struct InFlight(Arc<Mutex<HashMap<i64, u32>>>);

impl InFlight {
    /// The share to claim by: each team at most `cap` at once.
    fn share(&self, cap: u32) -> FairShare {
        let flying = self.0.lock().expect("in-flight counts");
        FairShare {
            cap,
            in_flight: flying.iter().map(|(&t, &n)| (t, n)).collect(),
        }
    }

    /// Counts one delivery of `team` until the guard drops.
    fn start(&self, team: i64) -> Flying {
        *self
            .0
            .lock()
            .expect("in-flight counts")
            .entry(team)
            .or_default() += 1;
        Flying(self.clone(), team)
    }
}

/// One delivery in flight, counted for its team.
struct Flying(InFlight, i64);

impl Drop for Flying {
    fn drop(&mut self) {
        let mut flying = (self.0).0.lock().expect("in-flight counts");
        if let Some(n) = flying.get_mut(&self.1) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                flying.remove(&self.1);
            }
        }
    }
}

/// Senders one team may hold at once: half of them (at least one), so
/// one team's hanging receivers never hold up every other team's.
fn team_cap(concurrency: usize) -> u32 {
    (concurrency / 2).max(1) as u32
}

/// One attempt of a claimed delivery, recorded.
async fn deliver(
    app: SharedApp,
    rules: Arc<ProbeRules>,
    due: DueDelivery,
    _permit: OwnedSemaphorePermit,
    _flying: Flying,
) {
    let d = &due.delivery;
    let result = match open_secret(&app, &due.secret) {
        Ok(secret) => {
            let body = body(&app, d);
            let signature = signature::sign(&secret, unix_now(), &body);
            let post = Post {
                url: &due.url,
                body,
                signature,
                event: &d.event,
                delivery: d.id,
            };
            send::post(post, &rules).await
        }
        Err(e) => Err(e),
    };
    let at = unix_now();
    let cfg = &app.config.webhooks;
    let attempt = match result {
        Ok(status) if (200..300).contains(&status) => Attempt::Delivered { status },
        Ok(status) => failure(cfg, d, at, Some(status), format!("answered {status}")),
        Err(error) => failure(cfg, d, at, None, error),
    };
    match &attempt {
        Attempt::Delivered { .. } => {
            app.metrics.webhook_deliveries.delivered.inc();
            tracing::debug!(delivery = d.id, webhook = d.webhook_id, event = %d.event, "webhook delivered");
        }
        Attempt::Failed {
            error,
            retry_at: Some(_),
            ..
        } => {
            app.metrics.webhook_deliveries.retried.inc();
            tracing::info!(delivery = d.id, webhook = d.webhook_id, url = %due.url, %error, "webhook delivery failed, will retry");
        }
        Attempt::Failed { error, .. } => {
            app.metrics.webhook_deliveries.failed.inc();
            tracing::warn!(delivery = d.id, webhook = d.webhook_id, url = %due.url, %error, "webhook delivery given up");
        }
    }
    if let Err(e) = app.store.record_attempt(d.id, at, attempt).await {
        tracing::warn!(delivery = d.id, error = %e, "cannot record a webhook attempt; it is sent again when its claim ends");
    }
}

/// Sends the outbox until `token` is cancelled, then gives the attempts in
/// flight [`SHUTDOWN_GRACE`] to end and be recorded.
pub async fn run(app: SharedApp, token: CancellationToken) {
    let cfg = app.config.webhooks.clone();
    let tls = match system_tls() {
        Ok(tls) => tls,
        Err(e) => {
            tracing::error!(error = %e, "webhooks are not sent: no TLS configuration");
            return;
        }
    };
    let rules = Arc::new(ProbeRules {
        timeout: Duration::from_millis(cfg.timeout_ms),
        allow_private: cfg.private,
        tls,
    });
    let senders = Arc::new(Semaphore::new(cfg.concurrency));
    let mut sending = JoinSet::new();
    let in_flight = InFlight::default();
    let mut poll = tokio::time::interval(Duration::from_millis(cfg.poll_ms));
    poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let sweep_every = Duration::from_secs(cfg.summary_interval.clamp(1, MAX_SWEEP_EVERY));
    let mut swept: Option<Instant> = None;
    let summary_every = Duration::from_secs(cfg.summary_interval);
    let mut summarised: Option<Instant> = None;
    // While the database is down every tick fails: said once per outage.
    let mut sweeping = OutageLog::new("sweep for webhook events");
    let mut claiming = OutageLog::new("claim webhook deliveries");
    loop {
        tokio::select! {
            _ = token.cancelled() => break,
            _ = poll.tick() => {}
        }
        while sending.try_join_next().is_some() {}
        if swept.is_none_or(|t| t.elapsed() >= sweep_every) {
            swept = Some(Instant::now());
            // The click summary reads the link totals, where clicks of links
            // without a limit arrive with the fold of everything: fold
            // first, once per summary.
            if summarised.is_none_or(|t| t.elapsed() >= summary_every) {
                summarised = Some(Instant::now());
                if let Err(e) = crate::stats::fold(&app).await {
                    e.log("cannot fold clicks before the click summary");
                }
            }
            let every = cfg.summary_interval as i64;
            let swept = app.store.sweep_webhook_events(unix_now(), every).await;
            if let Some(s) = sweeping.record(swept) {
                if s.expired + s.summaries > 0 {
                    tracing::debug!(
                        expired = s.expired,
                        summaries = s.summaries,
                        "webhook events queued"
                    );
                }
            }
        }
        let free = senders.available_permits();
        if free == 0 {
            continue;
        }
        let now = unix_now();
        let lease = now + cfg.timeout_ms.div_ceil(1000) as i64 + LEASE_MARGIN;
        let share = in_flight.share(team_cap(cfg.concurrency));
        let claimed = app
            .store
            .claim_deliveries(now, lease, free as u32, share)
            .await;
        let Some(due) = claiming.record(claimed) else {
            continue;
        };
        for d in due {
            let Ok(permit) = Arc::clone(&senders).acquire_owned().await else {
                break;
            };
            let flying = in_flight.start(d.team_id);
            sending.spawn(deliver(
                Arc::clone(&app),
                Arc::clone(&rules),
                d,
                permit,
                flying,
            ));
        }
    }
    // A hung receiver must not hold the daemon's shutdown: attempts still
    // running after the grace are dropped unrecorded, and sent again when
    // their claim ends.
    let drained = async { while sending.join_next().await.is_some() {} };
    if tokio::time::timeout(SHUTDOWN_GRACE, drained).await.is_err() {
        tracing::info!("webhook attempts in flight at shutdown are sent again later");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_retry_with_backoff_until_the_give_up_time_has_passed() {
        let cfg = WebhookConfig::default();
        let mut d = Delivery {
            id: 1,
            webhook_id: 1,
            event: "link.created".into(),
            link_id: Some(7),
            payload: "{}".into(),
            status: crate::store::DeliveryStatus::Pending,
            attempts: 0,
            next_attempt_at: 1000,
            last_status: None,
            last_error: None,
            created_at: 1000,
            delivered_at: None,
            redelivery_of: None,
        };
        let retry = |d: &Delivery, at| match failure(&cfg, d, at, None, "x".into()) {
            Attempt::Failed { retry_at, .. } => retry_at,
            Attempt::Delivered { .. } => unreachable!(),
        };
        assert_eq!(retry(&d, 1000), Some(1010));
        d.attempts = 3;
        assert_eq!(retry(&d, 1100), Some(1180));
        d.attempts = 30;
        assert_eq!(retry(&d, 1000 + 86_399), Some(1000 + 86_399 + 3600));
        assert_eq!(retry(&d, 1000 + 86_400), None, "a day after the event");
    }
}
