//! Click stats of one link over a range of hours ([`RangeStats`]) and the
//! one rule that sums them from rows ([`RangeTally`]), whatever store the
//! rows come from.

use std::collections::{BTreeMap, HashMap};

use shortlink_core::country::Country;

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
    /// Top referrer hosts; `""` for the clicks that sent none.
    pub referrers: Vec<(String, i64)>,
    /// Clicks per visitor country (`--`: unknown), most first.
    pub countries: Vec<(Country, i64)>,
    /// Clicks per A/B variant index, in index order; variants without
    /// clicks in the range are absent.
    pub variants: Vec<(u8, i64)>,
}

/// One link's stats summed from `(hour, device, bot, referrer, country,
/// clicks)` rows: the one rule for buckets, devices, countries and the top
/// referrers, whatever store the rows come from.
#[derive(Debug)]
pub struct RangeTally {
    bucket_hours: i64,
    total: i64,
    bots: i64,
    series: BTreeMap<i64, i64>,
    devices: BTreeMap<u8, i64>,
    referrers: HashMap<String, i64>,
    countries: BTreeMap<Country, i64>,
    variants: BTreeMap<u8, i64>,
}

impl RangeTally {
    /// An empty tally in hour (or, `daily`, day) buckets.
    pub fn new(daily: bool) -> Self {
        Self {
            bucket_hours: if daily { 24 } else { 1 },
            total: 0,
            bots: 0,
            series: BTreeMap::new(),
            devices: BTreeMap::new(),
            referrers: HashMap::new(),
            countries: BTreeMap::new(),
            variants: BTreeMap::new(),
        }
    }

    /// Adds `n` clicks sent to variant index `variant` (already counted by
    /// [`RangeTally::add`]: this is their split by variant).
    pub fn add_variant(&mut self, variant: u8, n: i64) {
        *self.variants.entry(variant).or_default() += n;
    }

    /// Adds `n` clicks in `hour` (hours since the epoch); an empty referrer
    /// is none (ranked with the hosts, as `""`).
    pub fn add(
        &mut self,
        hour: i64,
        device: u8,
        bot: bool,
        referrer: &str,
        country: Country,
        n: i64,
    ) {
        self.total += n;
        *self.countries.entry(country).or_default() += n;
        if bot {
            self.bots += n;
        }
        *self
            .series
            .entry(hour.div_euclid(self.bucket_hours))
            .or_default() += n;
        *self.devices.entry(device).or_default() += n;
        // No referrer is a host of its own (`""`): shown as "direct".
        match self.referrers.get_mut(referrer) {
            Some(c) => *c += n,
            None => {
                self.referrers.insert(referrer.to_string(), n);
            }
        }
    }

    /// The stats, with the [`TOP_REFERRERS`] most frequent referrers
    /// (ties: by name).
    pub fn finish(self) -> RangeStats {
        let mut referrers: Vec<(String, i64)> = self.referrers.into_iter().collect();
        referrers.sort_unstable_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        referrers.truncate(TOP_REFERRERS);
        let mut countries: Vec<(Country, i64)> = self.countries.into_iter().collect();
        countries.sort_by_key(|c| std::cmp::Reverse(c.1));
        let bucket = self.bucket_hours * 3600;
        RangeStats {
            total: self.total,
            bots: self.bots,
            series: self
                .series
                .into_iter()
                .map(|(b, n)| (b * bucket, n))
                .collect(),
            devices: self.devices.into_iter().collect(),
            referrers,
            countries,
            variants: self.variants.into_iter().collect(),
        }
    }
}
