//! The `[checker]` table: the background checker of link targets (dead
//! and unsafe destinations, `crate::checker`). Off by default: probing
//! every target is traffic an operator chooses to send.

use clap::Args;
use serde::{Deserialize, Serialize};

/// How the checker probes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Args)]
#[serde(default, deny_unknown_fields)]
pub struct CheckerConfig {
    /// Probe link targets in the background (default false).
    #[arg(
        long = "check-links",
        env = "SHORTLINKD_CHECK_LINKS",
        action = clap::ArgAction::Set,
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "true"
    )]
    pub enabled: bool,
    /// Seconds between two probes of one link (default one day).
    #[arg(long = "check-interval", env = "SHORTLINKD_CHECK_INTERVAL")]
    pub interval: u64,
    /// Probes at once (1-256).
    #[arg(long = "check-concurrency", env = "SHORTLINKD_CHECK_CONCURRENCY")]
    pub concurrency: usize,
    /// Milliseconds between two probes of one host.
    #[arg(
        long = "check-host-interval-ms",
        env = "SHORTLINKD_CHECK_HOST_INTERVAL_MS"
    )]
    pub host_interval_ms: u64,
    /// Seconds one probe may take, redirects included (1-120).
    #[arg(long = "check-timeout", env = "SHORTLINKD_CHECK_TIMEOUT")]
    pub timeout: u64,
    /// Probe private, loopback and link-local addresses too (default
    /// false: such targets are reported as not probed).
    #[arg(
        long = "check-private",
        env = "SHORTLINKD_CHECK_PRIVATE",
        action = clap::ArgAction::Set,
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "true"
    )]
    pub private: bool,
    /// Failed probes in a row after which the edge sends a link's
    /// visitors to the fallback instead of the dead target, until a probe
    /// finds it healthy again (0: never).
    #[arg(long = "check-fallback-after", env = "SHORTLINKD_CHECK_FALLBACK_AFTER")]
    pub fallback_after: u32,
}

impl Default for CheckerConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            interval: 86_400,
            concurrency: 8,
            host_interval_ms: 1000,
            timeout: 10,
            private: false,
            fallback_after: 0,
        }
    }
}

impl CheckerConfig {
    /// The first setting out of range, by file key, and why.
    pub fn invalid(&self) -> Option<(&'static str, String)> {
        if self.interval == 0 {
            return Some(("checker.interval", "must be at least 1 second".into()));
        }
        if !(1..=256).contains(&self.concurrency) {
            return Some((
                "checker.concurrency",
                format!("{} is outside 1..=256", self.concurrency),
            ));
        }
        if !(1..=120).contains(&self.timeout) {
            return Some((
                "checker.timeout",
                format!("{} is outside 1..=120", self.timeout),
            ));
        }
        None
    }
}
