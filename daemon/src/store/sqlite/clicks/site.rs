//! Click stats of every link over a range of hours: totals, a series and
//! the most clicked links (the `clicks` table plus the pending clicks).

use std::collections::{BTreeMap, HashMap, HashSet};

use rusqlite::{params, Connection};
use shortlink_core::country::Country;

use super::pending::ClickOverlay;
use crate::store::sqlite::error::StoreResult;

/// Click numbers of all links over a range of hours.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SiteStats {
    /// Clicks in the range, bots included.
    pub total: i64,
    /// Bot clicks in the range.
    pub bots: i64,
    /// `(bucket start in Unix seconds, clicks)` for every bucket with clicks.
    pub series: Vec<(i64, i64)>,
    /// `(link id, clicks)` of the `top` most clicked links, most first
    /// (ties: lower id first).
    pub top: Vec<(u64, i64)>,
    /// Clicks per visitor country (`--`: unknown), most first.
    pub countries: Vec<(Country, i64)>,
}

/// Site stats summed from `(link, hour, bot, country, clicks)` rows: the
/// one rule for buckets, countries and the ranking of top links, whatever
/// store the rows come from.
#[derive(Debug)]
pub struct SiteTally {
    bucket_hours: i64,
    out: SiteStats,
    series: BTreeMap<i64, i64>,
    links: HashMap<u64, i64>,
    countries: BTreeMap<Country, i64>,
}

impl SiteTally {
    /// An empty tally in hour (or, `daily`, day) buckets.
    pub fn new(daily: bool) -> Self {
        Self {
            bucket_hours: if daily { 24 } else { 1 },
            out: SiteStats::default(),
            series: BTreeMap::new(),
            links: HashMap::new(),
            countries: BTreeMap::new(),
        }
    }

    /// Adds `n` clicks of `link` in `hour` (hours since the epoch).
    pub fn add(&mut self, link: u64, hour: i64, bot: bool, country: Country, n: i64) {
        self.out.total += n;
        *self.countries.entry(country).or_default() += n;
        if bot {
            self.out.bots += n;
        }
        *self
            .series
            .entry(hour.div_euclid(self.bucket_hours))
            .or_default() += n;
        *self.links.entry(link).or_default() += n;
    }

    /// The stats, with the `top` most clicked links (ties: lower id first).
    pub fn finish(self, top: usize) -> SiteStats {
        let mut out = self.out;
        let bucket = self.bucket_hours * 3600;
        out.series = self
            .series
            .into_iter()
            .map(|(b, n)| (b * bucket, n))
            .collect();
        let mut ranked: Vec<(u64, i64)> = self.links.into_iter().collect();
        ranked.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        ranked.truncate(top);
        out.top = ranked;
        let mut countries: Vec<(Country, i64)> = self.countries.into_iter().collect();
        countries.sort_by_key(|c| std::cmp::Reverse(c.1));
        out.countries = countries;
        out
    }
}

/// Stats of every link (of team `team`, when given) for hours
/// `from_hour..=to_hour`, in hour or day buckets, with the `top` most
/// clicked links.
pub fn site_stats(
    conn: &Connection,
    overlay: &ClickOverlay<'_>,
    (from_hour, to_hour): (i64, i64),
    daily: bool,
    top: usize,
    team: Option<i64>,
) -> StoreResult<SiteStats> {
    let mut tally = SiteTally::new(daily);
    {
        let mut st = conn.prepare_cached(
            "SELECT link_id, hour, bot, country, sum(count) FROM clicks \
             WHERE hour BETWEEN ?1 AND ?2 \
             AND (?3 IS NULL OR link_id IN (SELECT id FROM links WHERE team_id = ?3)) \
             GROUP BY link_id, hour, bot, country",
        )?;
        let mut rows = st.query(params![from_hour, to_hour, team])?;
        while let Some(r) = rows.next()? {
            let country = Country::from_stored(r.get_ref(3)?.as_str().unwrap_or(""));
            tally.add(
                r.get::<_, i64>(0)? as u64,
                r.get(1)?,
                r.get(2)?,
                country,
                r.get(4)?,
            );
        }
    }
    // Pending clicks name only their link: the team's ids decide.
    let of_team: Option<HashSet<u64>> = match team {
        None => None,
        Some(t) => {
            let mut st = conn.prepare_cached("SELECT id FROM links WHERE team_id = ?1")?;
            let ids = st.query_map([t], |r| r.get::<_, i64>(0))?;
            Some(
                ids.map(|id| id.map(|id| id as u64))
                    .collect::<Result<_, _>>()?,
            )
        }
    };
    for (link, k, n) in overlay.all_rows() {
        if (from_hour..=to_hour).contains(&k.hour)
            && of_team.as_ref().is_none_or(|s| s.contains(&link))
        {
            tally.add(link, k.hour, k.bot, k.country, n);
        }
    }
    Ok(tally.finish(top))
}

#[cfg(test)]
mod tests {
    use crate::store::sqlite::tests::temp_store;

    /// The range query reads through the hour index, not the whole table.
    #[tokio::test]
    async fn the_range_is_read_through_the_hour_index() {
        let (_dir, store) = temp_store();
        let plan: Vec<String> = store
            .read(|c| {
                let mut st = c.prepare(
                    "EXPLAIN QUERY PLAN SELECT link_id, hour, bot, country, sum(count) FROM clicks \
                     WHERE hour BETWEEN 1 AND 2 GROUP BY link_id, hour, bot, country",
                )?;
                let rows = st.query_map([], |r| r.get::<_, String>(3))?;
                Ok(rows.collect::<Result<_, _>>()?)
            })
            .await
            .unwrap();
        assert!(
            plan.iter().any(|p| p.contains("clicks_by_hour")),
            "{plan:?}"
        );
    }
}
