//! Click stats of one link over a range of hours: the `clicks` and
//! `variant_clicks` tables plus the pending clicks.

use rusqlite::{params, Connection};
use shortlink_core::country::Country;

use super::pending::ClickOverlay;
use crate::store::clicks::RangeTally;
use crate::store::{RangeStats, StoreResult};

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
    let mut tally = RangeTally::new(daily);
    {
        let mut st = conn.prepare_cached(
            "SELECT hour, device, bot, referrer, count, country FROM clicks \
             WHERE link_id = ?1 AND hour BETWEEN ?2 AND ?3",
        )?;
        let mut rows = st.query(params![id, from_hour, to_hour])?;
        while let Some(r) = rows.next()? {
            let device: i64 = r.get(1)?;
            let referrer = r.get_ref(3)?.as_str().unwrap_or("");
            let country = Country::from_stored(r.get_ref(5)?.as_str().unwrap_or(""));
            tally.add(
                r.get(0)?,
                device as u8,
                r.get(2)?,
                referrer,
                country,
                r.get(4)?,
            );
        }
    }
    for (k, n) in overlay.rows(link_id) {
        if (from_hour..=to_hour).contains(&k.hour) {
            tally.add(k.hour, k.device, k.bot, &k.referrer, k.country, n);
        }
    }
    {
        let mut st = conn.prepare_cached(
            "SELECT variant, sum(count) FROM variant_clicks \
             WHERE link_id = ?1 AND hour BETWEEN ?2 AND ?3 GROUP BY variant",
        )?;
        let mut rows = st.query(params![id, from_hour, to_hour])?;
        while let Some(r) = rows.next()? {
            let variant: i64 = r.get(0)?;
            if let Ok(variant) = u8::try_from(variant) {
                tally.add_variant(variant, r.get(1)?);
            }
        }
    }
    for (hour, variant, n) in overlay.variant_rows(link_id) {
        if (from_hour..=to_hour).contains(&hour) {
            tally.add_variant(variant, n);
        }
    }
    Ok(tally.finish())
}
