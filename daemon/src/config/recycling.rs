//! The `[recycling]` table: reuse of expired and deleted links' ids (see
//! `crate::recycle`). Off by default: a reused code may sit in an old
//! message someone opens after the grace period, and then leads to the new
//! link.

use clap::Args;
use serde::{Deserialize, Serialize};

/// The shortest grace period allowed, in days: a week of old messages
/// still being opened is the least an operator should assume.
pub const MIN_GRACE_DAYS: u64 = 7;

/// How ids are recycled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Args)]
#[serde(default, deny_unknown_fields)]
pub struct RecyclingConfig {
    /// Reuse the ids of links expired or deleted more than the grace period
    /// ago, by whole leased ranges (default false). Every node on one
    /// PostgreSQL must set the same.
    #[arg(
        id = "recycle_ids",
        long = "recycle-ids",
        env = "SHORTLINKD_RECYCLE_IDS",
        action = clap::ArgAction::Set,
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "true"
    )]
    pub enabled: bool,
    /// Days a range's lease and every link in it must be past (expired or
    /// deleted) before its ids are reused (default 90, at least 7).
    #[arg(long = "recycle-grace-days", env = "SHORTLINKD_RECYCLE_GRACE_DAYS")]
    pub grace_days: u64,
    /// Seconds between two sweeps for recyclable ranges (default one hour).
    #[arg(
        long = "recycle-sweep-interval",
        env = "SHORTLINKD_RECYCLE_SWEEP_INTERVAL"
    )]
    pub sweep_interval: u64,
}

impl Default for RecyclingConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            grace_days: 90,
            sweep_interval: 3600,
        }
    }
}

impl RecyclingConfig {
    /// The grace period in seconds.
    pub fn grace_secs(&self) -> i64 {
        (self.grace_days.min(36_500) * 86_400) as i64
    }

    /// How long a daemon may hold a leased segment in memory: half the
    /// grace period, so a range older than it is in no daemon's hands.
    pub fn hold_limit(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.grace_secs() as u64 / 2)
    }

    /// The first setting out of range, by file key, and why.
    pub fn invalid(&self) -> Option<(&'static str, String)> {
        if self.grace_days < MIN_GRACE_DAYS {
            return Some((
                "recycling.grace_days",
                format!(
                    "{} is below the minimum of {MIN_GRACE_DAYS} days: a recycled code may \
                     still be in messages people open",
                    self.grace_days
                ),
            ));
        }
        if self.grace_days > 36_500 {
            return Some((
                "recycling.grace_days",
                format!("{} is above 36500 (100 years)", self.grace_days),
            ));
        }
        if self.sweep_interval == 0 {
            return Some((
                "recycling.sweep_interval",
                "must be at least 1 second".into(),
            ));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grace_period_under_a_week_is_refused_by_name() {
        let short = RecyclingConfig {
            grace_days: 6,
            ..Default::default()
        };
        let (field, message) = short.invalid().unwrap();
        assert_eq!(field, "recycling.grace_days");
        assert!(message.contains("minimum of 7 days"), "{message}");
        let week = RecyclingConfig {
            grace_days: 7,
            ..Default::default()
        };
        assert_eq!(week.invalid(), None);
        assert_eq!(week.hold_limit().as_secs(), 7 * 86_400 / 2);
        assert!(!RecyclingConfig::default().enabled);
    }
}
