//! The checker's loop: sweeps the links on by id, a page at a time,
//! claims those due (not probed within `checker.interval`, not claimed by
//! another node), and probes them with at most `checker.concurrency` at
//! once and at most one probe per host every `checker.host_interval_ms`.
//! Each result is recorded at once; after each full sweep the count of
//! failing links goes to the metrics.

use shortlink_core::check_mode::fallback_after;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use super::probe::{self, Outcome, ProbeRules};
use crate::app::SharedApp;
use crate::edge::LinkChange;
use crate::store::{CheckResult, CheckTarget};
use crate::timestamp::unix_now;

/// Links read and claimed at a time.
const PAGE: u32 = 200;

/// When each host may be probed next.
#[derive(Default)]
struct HostPace {
    next: Mutex<HashMap<String, Instant>>,
    every: Duration,
}

impl HostPace {
    /// How long to wait before probing `host`; books the slot.
    fn wait(&self, host: &str) -> Duration {
        let mut next = self.next.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        let at = next.get(host).copied().unwrap_or(now).max(now);
        next.insert(host.to_string(), at + self.every);
        if next.len() > 100_000 {
            next.retain(|_, t| *t > now);
        }
        at - now
    }
}

/// What a probe's outcome records.
fn result(link_id: u64, outcome: &Outcome) -> CheckResult {
    let (status, error, failed) = match outcome {
        Outcome::Status(s) => (
            Some(*s),
            (*s >= 400).then(|| format!("answered {s}")),
            Some(*s >= 400),
        ),
        Outcome::Skipped(why) => (None, Some(why.clone()), None),
        Outcome::Failed(why) => (None, Some(why.clone()), Some(true)),
    };
    CheckResult {
        link_id,
        checked_at: unix_now(),
        status,
        error,
        failed,
    }
}

/// Probes one claimed link and records the result.
async fn check(app: &SharedApp, rules: &ProbeRules, pace: &HostPace, target: CheckTarget) {
    let host = url::Url::parse(&target.url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
        .unwrap_or_default();
    tokio::time::sleep(pace.wait(&host)).await;
    let outcome = probe::probe(&target.url, rules).await;
    match &outcome {
        Outcome::Status(s) if *s < 400 => app.metrics.link_probes_ok.inc(),
        Outcome::Skipped(_) => app.metrics.link_probes_skipped.inc(),
        _ => app.metrics.link_probes_failed.inc(),
    };
    let r = result(target.link_id, &outcome);
    let fallback_after = fallback_after(target.check, app.config.checker.fallback_after);
    match app.store.record_check(r, fallback_after).await {
        Ok(recorded) => {
            if outcome.is_failure() {
                tracing::debug!(
                    link = target.link_id, url = %target.url, ?outcome,
                    failures = recorded.failures, "link target failed its probe"
                );
            }
            if let Some((id, alias)) = &recorded.switched {
                let broken = recorded.failures >= fallback_after && outcome.is_failure();
                tracing::info!(
                    link = id, url = %target.url, failures = recorded.failures, broken,
                    "{}",
                    if broken {
                        "link target keeps failing: visitors get the fallback"
                    } else {
                        "link target recovered: visitors get it again"
                    }
                );
                app.edge()
                    .links_changed([LinkChange::in_place(*id, alias.as_deref())])
                    .await;
            }
        }
        Err(e) => tracing::warn!(error = %e, link = target.link_id, "cannot record a link check"),
    }
}

/// Runs the checker until `stop` (nothing when `checker.enabled` is off).
pub async fn run(app: SharedApp, stop: CancellationToken) {
    let config = app.config.checker.clone();
    if !config.enabled {
        return;
    }
    let tls = match probe::system_tls() {
        Ok(tls) => tls,
        Err(e) => {
            tracing::error!(error = %e, "the link checker cannot start");
            return;
        }
    };
    let rules = Arc::new(ProbeRules {
        timeout: Duration::from_secs(config.timeout),
        allow_private: config.private,
        tls,
    });
    let pace = Arc::new(HostPace {
        every: Duration::from_millis(config.host_interval_ms),
        ..HostPace::default()
    });
    let slots = Arc::new(Semaphore::new(config.concurrency));
    let interval = config.interval as i64;
    // A claim outlives any probe: the timeout, the host pacing of a page.
    let claim_for =
        (config.timeout * 4) as i64 + (config.host_interval_ms / 1000) as i64 * PAGE as i64;
    let rest = Duration::from_secs((config.interval / 10).clamp(1, 60));
    tracing::info!(
        interval,
        concurrency = config.concurrency,
        "link checker started"
    );
    let mut after = 0u64;
    loop {
        let now = unix_now();
        let due_before = now - interval + 1;
        let page = match app
            .store
            .check_candidates(after, PAGE, now, due_before)
            .await
        {
            Ok(page) => page,
            Err(e) => {
                tracing::debug!(error = %e, "link checker cannot read links now");
                Vec::new()
            }
        };
        if page.len() < PAGE as usize {
            // The end of a sweep: the figure, then a rest before the next.
            after = 0;
            if let Ok(n) = app.store.count_failing(1).await {
                app.metrics.links_failing.set(n as i64);
            }
        } else if let Some(last) = page.last() {
            after = last.link_id;
        }
        let ids: Vec<u64> = page.iter().map(|t| t.link_id).collect();
        let claimed = if ids.is_empty() {
            Vec::new()
        } else {
            app.store
                .claim_checks(ids, now, due_before, now + claim_for)
                .await
                .unwrap_or_default()
        };
        let mut tasks = tokio::task::JoinSet::new();
        for target in page.into_iter().filter(|t| claimed.contains(&t.link_id)) {
            let Ok(permit) = Arc::clone(&slots).acquire_owned().await else {
                break;
            };
            let (app, rules, pace) = (app.clone(), Arc::clone(&rules), Arc::clone(&pace));
            tasks.spawn(async move {
                check(&app, &rules, &pace, target).await;
                drop(permit);
            });
            if stop.is_cancelled() {
                break;
            }
        }
        tokio::select! {
            _ = stop.cancelled() => {
                tasks.abort_all();
                return;
            }
            _ = async { while tasks.join_next().await.is_some() {} } => {}
        }
        if after == 0 {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(rest) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_host_is_probed_at_the_pace_set_others_at_once() {
        let pace = HostPace {
            every: Duration::from_millis(500),
            ..HostPace::default()
        };
        assert_eq!(pace.wait("a.example"), Duration::ZERO);
        let second = pace.wait("a.example");
        assert!(second > Duration::from_millis(400), "{second:?}");
        assert!(pace.wait("a.example") > second);
        assert_eq!(pace.wait("b.example"), Duration::ZERO);
    }

    #[test]
    fn outcomes_record_as_failures_healthy_or_skipped() {
        let r = result(1, &Outcome::Status(404));
        assert_eq!((r.status, r.failed), (Some(404), Some(true)));
        assert_eq!(r.error.as_deref(), Some("answered 404"));
        let r = result(1, &Outcome::Status(200));
        assert_eq!(
            (r.status, r.failed, r.error),
            (Some(200), Some(false), None)
        );
        let r = result(1, &Outcome::Skipped("private".into()));
        assert_eq!((r.status, r.failed), (None, None));
        let r = result(1, &Outcome::Failed("timeout".into()));
        assert_eq!(
            (r.failed, r.error.as_deref()),
            (Some(true), Some("timeout"))
        );
    }
}
