//! Click stats of every link over a range of hours ([`SiteStats`]) and the
//! one rule that sums them from rows ([`SiteTally`]), whatever store the
//! rows come from.

use std::collections::{BTreeMap, HashMap};

use shortlink_core::country::Country;

/// Which links a site-wide stats read counts: both stores apply it to
/// the stored and the pending clicks alike.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SiteFilter {
    /// Only this team's links (a caller who is not an admin).
    pub team: Option<i64>,
    /// Only links with this tag: a campaign's totals and series.
    pub tag: Option<String>,
}

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
