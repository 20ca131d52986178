//! The rules a click batch must pass before the daemon counts it, whoever
//! sent it (a worker over IPC, or a spool file on disk): hours near now,
//! bounded counts, referrers that are host names. One home for the bounds,
//! so the module cuts its batches to fit them and the daemon refuses what
//! does not.

use crate::ipc::{ClickBatch, ClickCount};
use crate::variants::MAX_VARIANTS;

/// Most clicks one row of a batch may carry. A worker cuts a batch every
/// flush interval (a second by default) and splits rows past this, so only
/// a forged batch comes near it.
pub const MAX_ROW_COUNT: u32 = 1_000_000;
/// How far in the past an hour may lie: spool files written during a long
/// daemon outage are still counted when it comes back.
pub const MAX_AGE_HOURS: u32 = 90 * 24;
/// How far in the future an hour may lie (clock steps between processes).
pub const MAX_AHEAD_HOURS: u32 = 2;
/// Longest referrer host (a DNS name is at most 253 bytes).
pub const MAX_REFERRER_LEN: usize = 253;

/// Whether a click stamped `hour` (hours since the Unix epoch) can belong
/// to a link created at Unix second `created_at`: not when it is from
/// before the link existed. A late batch (a spool file delivered weeks
/// later) may name an id that was recycled meanwhile; its clicks were the
/// old link's and never count for the new one. The edge's clock may run
/// [`MAX_AHEAD_HOURS`] away from the daemon's, so a click up to that many
/// hours before the creation hour still counts; an id is reused only days
/// after its old link's last click (the grace period, never under 7 days).
pub fn counts_for(hour: i64, created_at: i64) -> bool {
    hour + i64::from(MAX_AHEAD_HOURS) >= created_at.div_euclid(3600)
}

/// Whether a click stamped `hour` is old enough at Unix second `now` that
/// its link's creation time must be checked ([`counts_for`]). A click that
/// is not late counts for any link that exists at `now`, so the stores read
/// a link's creation time only for late clicks, never on the live path.
pub fn is_late(hour: i64, now: i64) -> bool {
    !counts_for(hour, now)
}

/// Why a click batch was refused; names the row and the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClickBatchError {
    #[error("click row {row}: link id 0 is not a link")]
    NoLink { row: usize },
    #[error("click row {row}: hour {hour} is outside {from}..={to} (now - {MAX_AGE_HOURS} h .. now + {MAX_AHEAD_HOURS} h)")]
    Hour {
        row: usize,
        hour: u32,
        from: u32,
        to: u32,
    },
    #[error("click row {row}: count {count} is outside 1..={MAX_ROW_COUNT}")]
    Count { row: usize, count: u32 },
    #[error("click row {row}: referrer of {len} bytes is longer than {MAX_REFERRER_LEN}")]
    ReferrerTooLong { row: usize, len: usize },
    #[error("click row {row}: referrer {referrer:?} is not a lower-case host name")]
    ReferrerNotHost { row: usize, referrer: String },
    #[error("click row {row}: variant {variant} is outside 0..={MAX_VARIANTS} (0: no variant, i + 1: variant i)")]
    Variant { row: usize, variant: u8 },
}

impl ClickBatch {
    /// Checks every row against the bounds above, `now_unix` being the
    /// receiver's clock. A batch that fails is refused whole.
    pub fn validate(&self, now_unix: i64) -> Result<(), ClickBatchError> {
        let now_hour = u32::try_from(now_unix.max(0) / 3600).unwrap_or(u32::MAX);
        let from = now_hour.saturating_sub(MAX_AGE_HOURS);
        let to = now_hour.saturating_add(MAX_AHEAD_HOURS);
        for (row, click) in self.clicks.iter().enumerate() {
            check_row(row, click, from, to)?;
        }
        Ok(())
    }

    /// Clicks in the batch, as a wide sum (rows are bounded, the sum is not).
    pub fn total(&self) -> u64 {
        self.clicks.iter().map(|c| u64::from(c.count)).sum()
    }
}

impl ClickCount {
    /// This row as rows of at most [`MAX_ROW_COUNT`] clicks each, so a key
    /// counted past the bound (a long daemon outage) still passes
    /// [`ClickBatch::validate`]. The daemon sums rows with the same key.
    pub fn split(self) -> impl Iterator<Item = ClickCount> {
        let mut left = self.count;
        std::iter::from_fn(move || {
            if left == 0 {
                return None;
            }
            let part = left.min(MAX_ROW_COUNT);
            left -= part;
            Some(ClickCount {
                count: part,
                referrer: self.referrer.clone(),
                ..self
            })
        })
    }
}

fn check_row(row: usize, c: &ClickCount, from: u32, to: u32) -> Result<(), ClickBatchError> {
    if c.link_id == 0 {
        return Err(ClickBatchError::NoLink { row });
    }
    if c.hour < from || c.hour > to {
        return Err(ClickBatchError::Hour {
            row,
            hour: c.hour,
            from,
            to,
        });
    }
    if c.count == 0 || c.count > MAX_ROW_COUNT {
        return Err(ClickBatchError::Count {
            row,
            count: c.count,
        });
    }
    if usize::from(c.variant) > MAX_VARIANTS {
        return Err(ClickBatchError::Variant {
            row,
            variant: c.variant,
        });
    }
    if let Some(r) = &c.referrer {
        if r.len() > MAX_REFERRER_LEN {
            return Err(ClickBatchError::ReferrerTooLong { row, len: r.len() });
        }
        if !is_referrer_host(r.as_bytes()) {
            return Err(ClickBatchError::ReferrerNotHost {
                row,
                referrer: r.chars().take(64).collect(),
            });
        }
    }
    Ok(())
}

/// What [`crate::device::referrer_host`] can produce, lower-cased.
fn is_referrer_host(host: &[u8]) -> bool {
    !host.is_empty()
        && host.iter().all(|&b| {
            b.is_ascii_lowercase()
                || b.is_ascii_digit()
                || matches!(b, b'.' | b'-' | b'_' | b'[' | b']' | b':')
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::country::UNKNOWN;
    use crate::device::DeviceClass;
    use crate::ipc::BatchId;

    const NOW: i64 = 1_800_000_000;
    const HOUR: u32 = (NOW / 3600) as u32;

    fn row(hour: u32, count: u32, referrer: Option<&str>) -> ClickCount {
        ClickCount {
            link_id: 7,
            hour,
            device: DeviceClass::Desktop,
            bot: false,
            referrer: referrer.map(str::to_string),
            count,
            country: UNKNOWN,
            variant: 0,
        }
    }

    fn batch(rows: Vec<ClickCount>) -> ClickBatch {
        ClickBatch {
            batch_id: BatchId([1; 16]),
            clicks: rows,
        }
    }

    #[test]
    fn honest_batches_pass() {
        let b = batch(vec![
            row(HOUR, 1, None),
            row(HOUR - 1, MAX_ROW_COUNT, Some("news.example.com")),
            row(HOUR - MAX_AGE_HOURS, 3, Some("[::1]")),
            row(HOUR + MAX_AHEAD_HOURS, 3, Some("a-b_c.example:8080")),
        ]);
        assert_eq!(b.validate(NOW), Ok(()));
        assert_eq!(b.total(), 1 + u64::from(MAX_ROW_COUNT) + 6);
        assert_eq!(batch(vec![]).validate(NOW), Ok(()));
    }

    #[test]
    fn forged_rows_are_refused_with_their_reason() {
        let cases = [
            (row(HOUR + MAX_AHEAD_HOURS + 1, 1, None), "hour"),
            (row(u32::MAX, 1, None), "hour"),
            (row(HOUR - MAX_AGE_HOURS - 1, 1, None), "hour"),
            (row(HOUR, 0, None), "count"),
            (row(HOUR, u32::MAX, None), "count"),
            (row(HOUR, 1, Some(&"a".repeat(254))), "longer"),
            (row(HOUR, 1, Some("")), "host name"),
            (row(HOUR, 1, Some("Evil.com")), "host name"),
            (row(HOUR, 1, Some("x\r\ny")), "host name"),
            (row(HOUR, 1, Some("a b")), "host name"),
        ];
        for (bad, word) in cases {
            let b = batch(vec![row(HOUR, 1, None), bad.clone()]);
            let e = b.validate(NOW).expect_err(&format!("{bad:?} passed"));
            assert!(e.to_string().starts_with("click row 1:"), "{e}");
            assert!(e.to_string().contains(word), "{e} lacks {word}");
        }
        let mut variant = row(HOUR, 1, None);
        variant.variant = MAX_VARIANTS as u8 + 1;
        let e = batch(vec![row(HOUR, 1, None), variant])
            .validate(NOW)
            .unwrap_err();
        assert_eq!(e, ClickBatchError::Variant { row: 1, variant: 9 });
        assert!(e.to_string().starts_with("click row 1: variant 9"), "{e}");
        let mut last = row(HOUR, 1, None);
        last.variant = MAX_VARIANTS as u8;
        assert_eq!(batch(vec![last]).validate(NOW), Ok(()));
        let mut no_link = row(HOUR, 1, None);
        no_link.link_id = 0;
        assert_eq!(
            batch(vec![no_link]).validate(NOW),
            Err(ClickBatchError::NoLink { row: 0 })
        );
    }

    #[test]
    fn rows_past_the_bound_split_into_valid_rows() {
        let big = row(HOUR, u32::MAX, Some("news.example.com"));
        let parts: Vec<ClickCount> = big.clone().split().collect();
        assert_eq!(parts.len(), (u32::MAX / MAX_ROW_COUNT + 1) as usize);
        let b = batch(parts);
        assert_eq!(b.validate(NOW), Ok(()));
        assert_eq!(b.total(), u64::from(u32::MAX));
        assert!(b.clicks.iter().all(|c| c.referrer == big.referrer));
        assert_eq!(row(HOUR, 5, None).split().count(), 1);
        assert_eq!(row(HOUR, 0, None).split().count(), 0);
        let whole = batch(vec![big]).validate(NOW).unwrap_err();
        assert!(whole.to_string().contains("count"), "{whole}");
    }

    #[test]
    fn a_click_from_before_its_link_was_created_counts_only_within_the_clock_slack() {
        let created = 1_000 * 3600 + 1_800; // half past hour 1000
        assert!(counts_for(1_000, created));
        assert!(counts_for(1_001, created));
        assert!(counts_for(998, created), "an edge two hours behind");
        assert!(!counts_for(997, created));
        assert!(
            !counts_for(1_000 - 7 * 24, created),
            "the old link's, a week before"
        );
        // Late means: old enough that the creation time matters.
        let now = created;
        assert!(!is_late(998, now));
        assert!(is_late(997, now));
        // A click that is not late counts for every link that exists now.
        for hour in 998..1_003 {
            for created_at in [0, created - 86_400, now] {
                assert!(!is_late(hour, now) && counts_for(hour, created_at));
            }
        }
    }

    proptest::proptest! {
        /// What the edge counts as a referrer (the host `referrer_host`
        /// finds, lower-cased) always passes the daemon's check.
        #[test]
        fn every_referrer_the_edge_keeps_passes(referer in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300), tail in "[a-zA-Z0-9.:_\\[\\]-]{1,260}") {
            let mut with_scheme = b"https://".to_vec();
            with_scheme.extend_from_slice(tail.as_bytes());
            for raw in [referer, with_scheme] {
                if let Some(host) = crate::device::referrer_host(&raw) {
                    let host = String::from_utf8(host.to_ascii_lowercase()).unwrap();
                    let b = batch(vec![row(HOUR, 1, Some(&host))]);
                    proptest::prop_assert_eq!(b.validate(NOW), Ok(()));
                }
            }
        }
    }
}
