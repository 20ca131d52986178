//! The `[webhooks]` table: how the outbox of webhook deliveries is sent
//! (`crate::webhooks`). The retry schedule is here so an operator (or a
//! test) can shorten it; the defaults retry for a day.

use clap::Args;
use serde::{Deserialize, Serialize};

/// How deliveries are sent and retried.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Args)]
#[serde(default, deny_unknown_fields)]
pub struct WebhookConfig {
    /// Requests at once (1-256).
    #[arg(
        id = "webhook_concurrency",
        long = "webhook-concurrency",
        env = "SHORTLINKD_WEBHOOK_CONCURRENCY"
    )]
    pub concurrency: usize,
    /// Milliseconds one delivery may take before it counts as failed
    /// (100-60000).
    #[arg(
        id = "webhook_timeout_ms",
        long = "webhook-timeout-ms",
        env = "SHORTLINKD_WEBHOOK_TIMEOUT_MS"
    )]
    pub timeout_ms: u64,
    /// Seconds before the first retry; each further retry waits twice as
    /// long as the one before (at least 1).
    #[arg(
        id = "webhook_retry_first",
        long = "webhook-retry-first",
        env = "SHORTLINKD_WEBHOOK_RETRY_FIRST"
    )]
    pub retry_first: u64,
    /// Longest wait between two retries, in seconds.
    #[arg(
        id = "webhook_retry_max",
        long = "webhook-retry-max",
        env = "SHORTLINKD_WEBHOOK_RETRY_MAX"
    )]
    pub retry_max: u64,
    /// Seconds after the event when a delivery still failing is given up
    /// (default one day).
    #[arg(
        id = "webhook_give_up_after",
        long = "webhook-give-up-after",
        env = "SHORTLINKD_WEBHOOK_GIVE_UP_AFTER"
    )]
    pub give_up_after: u64,
    /// Seconds between two click summaries of a link (at least 1).
    #[arg(
        id = "webhook_summary_interval",
        long = "webhook-summary-interval",
        env = "SHORTLINKD_WEBHOOK_SUMMARY_INTERVAL"
    )]
    pub summary_interval: u64,
    /// Milliseconds between two looks at the outbox for due deliveries
    /// (10-60000).
    #[arg(
        id = "webhook_poll_ms",
        long = "webhook-poll-ms",
        env = "SHORTLINKD_WEBHOOK_POLL_MS"
    )]
    pub poll_ms: u64,
    /// Deliver to private, loopback and link-local addresses too (default
    /// false: such receivers are refused, as the link checker refuses them).
    #[arg(
        id = "webhook_private",
        long = "webhook-private",
        env = "SHORTLINKD_WEBHOOK_PRIVATE",
        action = clap::ArgAction::Set,
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "true"
    )]
    pub private: bool,
}

impl Default for WebhookConfig {
    fn default() -> Self {
        Self {
            concurrency: 8,
            timeout_ms: 10_000,
            retry_first: 10,
            retry_max: 3600,
            give_up_after: 86_400,
            summary_interval: 300,
            poll_ms: 1000,
            private: false,
        }
    }
}

impl WebhookConfig {
    /// The first setting out of range, by file key, and why.
    pub fn invalid(&self) -> Option<(&'static str, String)> {
        if !(1..=256).contains(&self.concurrency) {
            return Some((
                "webhooks.concurrency",
                format!("{} is outside 1..=256", self.concurrency),
            ));
        }
        if !(100..=60_000).contains(&self.timeout_ms) {
            return Some((
                "webhooks.timeout_ms",
                format!("{} is outside 100..=60000", self.timeout_ms),
            ));
        }
        if self.retry_first == 0 {
            return Some(("webhooks.retry_first", "must be at least 1 second".into()));
        }
        if self.retry_max < self.retry_first {
            return Some((
                "webhooks.retry_max",
                format!(
                    "{} is shorter than retry_first ({})",
                    self.retry_max, self.retry_first
                ),
            ));
        }
        if self.give_up_after == 0 {
            return Some(("webhooks.give_up_after", "must be at least 1 second".into()));
        }
        if self.summary_interval == 0 {
            return Some((
                "webhooks.summary_interval",
                "must be at least 1 second".into(),
            ));
        }
        if !(10..=60_000).contains(&self.poll_ms) {
            return Some((
                "webhooks.poll_ms",
                format!("{} is outside 10..=60000", self.poll_ms),
            ));
        }
        None
    }

    /// Seconds to wait before retrying after `attempts` failed attempts:
    /// `retry_first` doubling, capped at `retry_max`.
    pub fn backoff(&self, attempts: u32) -> u64 {
        let doublings = attempts.saturating_sub(1).min(40);
        self.retry_first
            .saturating_mul(1u64 << doublings)
            .min(self.retry_max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap_and_the_defaults_retry_for_a_day() {
        let c = WebhookConfig::default();
        assert_eq!(c.invalid(), None);
        let waits: Vec<u64> = (1..=11).map(|n| c.backoff(n)).collect();
        assert_eq!(
            waits,
            [10, 20, 40, 80, 160, 320, 640, 1280, 2560, 3600, 3600]
        );
        assert_eq!(c.backoff(1000), 3600);
        assert!(c.give_up_after >= 86_400);
        let bad = WebhookConfig {
            retry_max: 5,
            ..WebhookConfig::default()
        };
        assert_eq!(bad.invalid().unwrap().0, "webhooks.retry_max");
    }
}
