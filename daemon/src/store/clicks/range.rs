//! Click stats of one link over a range of hours: the `clicks` table plus
//! the pending clicks.

use std::collections::{BTreeMap, HashMap};

use rusqlite::{params, Connection};

use super::pending::ClickOverlay;
use crate::store::error::StoreResult;

/// Most referrers a stats query returns.
const TOP_REFERRERS: usize = 50;

/// Click numbers of one link over a range of hours.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RangeStats {
    /// Clicks in the range, bots included.
    pub total: i64,
    /// Bot clicks in the range.
    pub bots: i64,
    /// `(bucket start in Unix seconds, clicks)` for every bucket with clicks.
    pub series: Vec<(i64, i64)>,
    /// Clicks per device class (its `u8` value).
    pub devices: Vec<(u8, i64)>,
    /// Top referrer hosts.
    pub referrers: Vec<(String, i64)>,
}

/// Stats of `link_id` for hours `from_hour..=to_hour`, in hour or day
/// buckets: the `clicks` table plus the pending clicks in `overlay`.
pub fn range_stats(
    conn: &Connection,
    overlay: &ClickOverlay<'_>,
    link_id: u64,
    from_hour: i64,
    to_hour: i64,
    daily: bool,
) -> StoreResult<RangeStats> {
    let id = link_id as i64;
    let bucket_hours: i64 = if daily { 24 } else { 1 };
    let mut total = 0i64;
    let mut bots = 0i64;
    let mut series: BTreeMap<i64, i64> = BTreeMap::new();
    let mut devices: BTreeMap<u8, i64> = BTreeMap::new();
    let mut referrers: HashMap<String, i64> = HashMap::new();
    {
        let mut st = conn.prepare_cached(
            "SELECT hour, device, bot, referrer, count FROM clicks \
             WHERE link_id = ?1 AND hour BETWEEN ?2 AND ?3",
        )?;
        let mut rows = st.query(params![id, from_hour, to_hour])?;
        while let Some(r) = rows.next()? {
            let hour: i64 = r.get(0)?;
            let device: i64 = r.get(1)?;
            let bot: bool = r.get(2)?;
            let referrer = r.get_ref(3)?.as_str().unwrap_or("");
            let n: i64 = r.get(4)?;
            total += n;
            if bot {
                bots += n;
            }
            *series.entry(hour.div_euclid(bucket_hours)).or_default() += n;
            *devices.entry(device as u8).or_default() += n;
            if !referrer.is_empty() {
                match referrers.get_mut(referrer) {
                    Some(c) => *c += n,
                    None => {
                        referrers.insert(referrer.to_string(), n);
                    }
                }
            }
        }
    }
    for (k, n) in overlay.rows(link_id) {
        if k.hour < from_hour || k.hour > to_hour {
            continue;
        }
        total += n;
        if k.bot {
            bots += n;
        }
        *series.entry(k.hour.div_euclid(bucket_hours)).or_default() += n;
        *devices.entry(k.device).or_default() += n;
        if !k.referrer.is_empty() {
            *referrers.entry(k.referrer.clone()).or_default() += n;
        }
    }
    let mut referrers: Vec<(String, i64)> = referrers.into_iter().collect();
    referrers.sort_unstable_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    referrers.truncate(TOP_REFERRERS);
    Ok(RangeStats {
        total,
        bots,
        series: series
            .into_iter()
            .map(|(b, n)| (b * bucket_hours * 3600, n))
            .collect(),
        devices: devices.into_iter().collect(),
        referrers,
    })
}
