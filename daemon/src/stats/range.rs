//! A stats query's range: `[from, to)` rounded out to whole buckets, an
//! hour or a day each, days in the query's time zone ([`StatsZone`]).
//! Clicks are counted per hour, so an hour counts in the bucket its start
//! falls in; hour buckets are the stored hours whatever the zone.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::zone::StatsZone;
use crate::store::LinkError;
use crate::timestamp::{self, unix_now, Timestamp};

/// Most buckets one stats query returns.
pub const MAX_BUCKETS: i64 = 24 * 400;
/// Bucket size of a series.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Granularity {
    /// One bucket per hour.
    #[default]
    Hour,
    /// One bucket per day (UTC, or the query's `tz`).
    Day,
}

/// One point of a series.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Point {
    /// Bucket start.
    pub t: Timestamp,
    /// Clicks in the bucket, bots included.
    pub clicks: i64,
}

/// `[from, to)` and where each bucket starts.
#[derive(Debug, Clone)]
pub(super) struct Range {
    pub from: i64,
    pub to: i64,
    pub granularity: Granularity,
    /// The start of every bucket, ascending; the last ends at `to`.
    starts: Vec<i64>,
    /// The store sums the buckets itself (hours, or UTC days).
    store_buckets: bool,
}

fn invalid(field: &'static str, message: String) -> LinkError {
    LinkError::Invalid {
        field,
        code: "invalid_range",
        message,
    }
}

fn too_many(buckets: i64) -> LinkError {
    invalid(
        "from",
        format!(
            "the range spans {buckets} buckets; at most {MAX_BUCKETS} (use granularity=day or a shorter range)"
        ),
    )
}

impl Range {
    /// The range of `[from, to)` (Unix seconds; defaults: the last 7 days)
    /// in `granularity` buckets of `zone`, refused when empty or over
    /// [`MAX_BUCKETS`].
    pub fn new(
        from: Option<i64>,
        to: Option<i64>,
        granularity: Granularity,
        zone: &StatsZone,
    ) -> Result<Self, LinkError> {
        // Both ends, rounded out to whole buckets, are written back in RFC
        // 3339: years 0000 to 9999, less the day a bucket may round up.
        let (earliest, latest) = (timestamp::EARLIEST, timestamp::LATEST - 86_400);
        for (field, t) in [("from", from), ("to", to)] {
            if let Some(t) = t.filter(|t| !(earliest..=latest).contains(t)) {
                return Err(invalid(
                    field,
                    format!(
                        "{field} ({t}) must lie between {earliest} and {latest} \
                         (the years 0000 to 9999, less a day)"
                    ),
                ));
            }
        }
        let to = to.unwrap_or(unix_now() + 1);
        let from = from.unwrap_or(to - 7 * 86_400);
        if from >= to {
            return Err(invalid(
                "from",
                format!("from ({from}) must be before to ({to})"),
            ));
        }
        let zoned_days = granularity == Granularity::Day && !zone.is_utc();
        if !zoned_days {
            let bucket = match granularity {
                Granularity::Hour => 3600,
                Granularity::Day => 86_400,
            };
            let (from, to) = (
                from.div_euclid(bucket) * bucket,
                (to + bucket - 1).div_euclid(bucket) * bucket,
            );
            let buckets = (to - from) / bucket;
            if buckets > MAX_BUCKETS {
                return Err(too_many(buckets));
            }
            return Ok(Range {
                from,
                to,
                granularity,
                starts: (0..buckets).map(|i| from + i * bucket).collect(),
                store_buckets: true,
            });
        }
        let out_of_zone = || invalid("from", format!("the range is beyond {}", zone.name()));
        let first = zone.day_start(from).ok_or_else(out_of_zone)?;
        let mut starts = vec![first];
        let mut end = zone.next_day_start(first).ok_or_else(out_of_zone)?;
        while end < to {
            if starts.len() as i64 >= MAX_BUCKETS {
                return Err(too_many((to - first) / 86_400 + 1));
            }
            starts.push(end);
            end = zone.next_day_start(end).ok_or_else(out_of_zone)?;
        }
        if first < earliest || end > timestamp::LATEST {
            return Err(out_of_zone());
        }
        Ok(Range {
            from: first,
            to: end,
            granularity,
            starts,
            store_buckets: false,
        })
    }

    /// The stored hours the range covers, first and last: those that
    /// start in it.
    pub fn hours(&self) -> (i64, i64) {
        (
            (self.from + 3599).div_euclid(3600),
            (self.to + 3599).div_euclid(3600) - 1,
        )
    }

    /// Whether the store is to sum UTC days (else it answers hours, which
    /// [`Range::series`] puts in the zone's days).
    pub fn store_daily(&self) -> bool {
        self.store_buckets && self.granularity == Granularity::Day
    }

    /// Every bucket of the range, zeros included, filled from `(start,
    /// clicks)` pairs of the store's buckets.
    pub fn series(&self, counts: impl IntoIterator<Item = (i64, i64)>) -> Vec<Point> {
        let mut series: Vec<Point> = self
            .starts
            .iter()
            .map(|&t| Point {
                t: Timestamp(t),
                clicks: 0,
            })
            .collect();
        for (t, n) in counts {
            let i = self.starts.partition_point(|&s| s <= t);
            if let Some(p) = i.checked_sub(1).and_then(|i| series.get_mut(i)) {
                if t < self.to {
                    p.clicks += n;
                }
            }
        }
        series
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: i64 = 86_400;

    #[test]
    fn utc_days_are_whole_days_of_the_store() {
        let r = Range::new(
            Some(10 * DAY + 5),
            Some(12 * DAY + 1),
            Granularity::Day,
            &StatsZone::default(),
        )
        .unwrap();
        assert_eq!((r.from, r.to), (10 * DAY, 13 * DAY));
        assert!(r.store_daily());
        let s = r.series([(10 * DAY, 2), (12 * DAY, 3)]);
        assert_eq!(s.iter().map(|p| p.clicks).collect::<Vec<_>>(), [2, 0, 3]);
    }

    #[test]
    fn zoned_days_gather_the_hours_of_local_days() {
        let paris = StatsZone::parse(Some("Europe/Paris")).unwrap();
        // 2024-03-30 to 2024-04-01 in Paris; the 31st is 23 hours long.
        let from = 1_711_753_200; // 2024-03-30T00:00:00+01:00
        let r = Range::new(Some(from), Some(from + 2 * DAY), Granularity::Day, &paris).unwrap();
        assert!(!r.store_daily());
        assert_eq!(r.from, from);
        let starts: Vec<i64> = r.series([]).iter().map(|p| p.t.unix()).collect();
        assert_eq!(starts, [from, from + DAY, from + 2 * DAY - 3600]);
        // The hour from 23:00 in Paris is the 30th's, the next the 31st's.
        let s = r.series([(from, 1), (from + DAY - 3600, 4), (from + DAY, 2)]);
        assert_eq!(s.iter().map(|p| p.clicks).collect::<Vec<_>>(), [5, 2, 0]);
        let (h0, h1) = r.hours();
        assert_eq!((h0 * 3600, (h1 + 1) * 3600), (r.from, r.to));
    }

    #[test]
    fn too_many_zoned_days_are_refused() {
        let paris = StatsZone::parse(Some("Europe/Paris")).unwrap();
        let e = Range::new(
            Some(0),
            Some(MAX_BUCKETS * DAY + 10 * DAY),
            Granularity::Day,
            &paris,
        );
        assert!(matches!(e, Err(LinkError::Invalid { field: "from", .. })));
    }
}
