//! Click stats over a range: of one link (series, devices, referrers,
//! countries, A/B variants, bots) and of every link (series and the most
//! clicked links).

use serde::{Deserialize, Serialize};
use shortlink_core::device::DeviceClass;
use utoipa::ToSchema;

use crate::access::Scope;
use crate::app::App;
use crate::auth::Principal;
use crate::store::LinkError;
use crate::timestamp::{self, unix_now, Timestamp};

/// Most buckets one stats query returns.
pub const MAX_BUCKETS: i64 = 24 * 400;
/// Most links a site-wide query ranks.
pub const MAX_TOP: usize = 100;

/// Bucket size of a series.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Granularity {
    /// One bucket per hour.
    #[default]
    Hour,
    /// One bucket per day (UTC).
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

/// Clicks from one referrer host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ReferrerCount {
    /// Host of the `Referer`; empty when none was sent.
    pub host: String,
    /// Clicks from it in the range.
    pub clicks: i64,
}

/// Clicks from one visitor country.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct CountryCount {
    /// ISO 3166-1 alpha-2 code, upper case, from nginx's
    /// `shortlink_country` variable; `--` when unknown (no variable, or a
    /// value that is not an assigned code).
    #[schema(example = "DE")]
    pub country: String,
    /// Clicks from it in the range, bots included.
    pub clicks: i64,
}

/// Clicks sent to one of a link's A/B variants.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct VariantCount {
    /// The variant's position in the link's `variants`, from 0.
    #[schema(minimum = 0, maximum = 7)]
    pub index: u32,
    /// Its target URL; only for a caller that may read links
    /// (`links:read`): stats alone do not tell where a link leads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Its weight.
    pub weight: u32,
    /// Clicks the edge sent to it in the range, bots included.
    pub clicks: i64,
}

/// Each of a link's variants with its clicks among `counts` (`(index,
/// clicks)` pairs), in the link's order, zeros included.
fn variant_counts(
    variants: &[shortlink_core::variants::Variant],
    counts: &[(u8, i64)],
    show_urls: bool,
) -> Vec<VariantCount> {
    variants
        .iter()
        .enumerate()
        .map(|(i, v)| VariantCount {
            index: i as u32,
            url: show_urls.then(|| v.url.clone()),
            weight: v.weight,
            clicks: counts
                .iter()
                .filter(|(at, _)| usize::from(*at) == i)
                .map(|(_, n)| n)
                .sum(),
        })
        .collect()
}

/// The countries of a tally as the API shows them, most clicks first.
fn country_counts(counts: Vec<(shortlink_core::country::Country, i64)>) -> Vec<CountryCount> {
    counts
        .into_iter()
        .map(|(c, clicks)| CountryCount {
            country: c.as_str().to_string(),
            clicks,
        })
        .collect()
}

/// Clicks per device class.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct DeviceCounts {
    /// Desktop browsers.
    pub desktop: i64,
    /// Phones and tablets other than iOS and Android.
    pub mobile: i64,
    /// iPhones and iPads.
    pub ios: i64,
    /// Android devices.
    pub android: i64,
    /// No `User-Agent`, or one that cannot be placed.
    pub other: i64,
}

/// Reply of `GET /api/v1/links/{code}/stats`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct StatsView {
    /// The link's public code (alias or generated).
    pub code: String,
    /// Range start (inclusive), aligned to the bucket.
    pub from: Timestamp,
    /// Range end (exclusive).
    pub to: Timestamp,
    /// Bucket size of `series`.
    pub granularity: Granularity,
    /// Clicks in the range, bots included.
    pub total: i64,
    /// Bot clicks in the range (also part of `total`).
    pub bots: i64,
    /// Every bucket of the range, zeros included.
    pub series: Vec<Point>,
    /// Clicks in the range by device class.
    pub devices: DeviceCounts,
    /// Top referrer hosts in the range.
    pub referrers: Vec<ReferrerCount>,
    /// Clicks in the range by visitor country, most first.
    pub countries: Vec<CountryCount>,
    /// The link's A/B variants, in its order, each with the clicks the
    /// edge sent to it in the range (empty for a link without variants).
    pub variants: Vec<VariantCount>,
    /// Clicks since the link was created, bots included.
    pub total_all_time: i64,
    /// Bot clicks since the link was created.
    pub bots_all_time: i64,
}

/// A query's range: `[from, to)` aligned to whole buckets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Range {
    from: i64,
    to: i64,
    bucket: i64,
    granularity: Granularity,
}

impl Range {
    /// The range of `[from, to)` (Unix seconds; defaults: the last 7 days)
    /// in `granularity` buckets, refused when empty or over
    /// [`MAX_BUCKETS`].
    fn new(
        from: Option<i64>,
        to: Option<i64>,
        granularity: Granularity,
    ) -> Result<Self, LinkError> {
        let bucket = match granularity {
            Granularity::Hour => 3600,
            Granularity::Day => 86_400,
        };
        // Both ends, rounded out to whole buckets, are written back in RFC
        // 3339: years 0000 to 9999, less the day a bucket may round up.
        let (earliest, latest) = (timestamp::EARLIEST, timestamp::LATEST - 86_400);
        for (field, t) in [("from", from), ("to", to)] {
            if let Some(t) = t.filter(|t| !(earliest..=latest).contains(t)) {
                return Err(LinkError::Invalid {
                    field,
                    code: "invalid_range",
                    message: format!(
                        "{field} ({t}) must lie between {earliest} and {latest} \
                         (the years 0000 to 9999, less a day)"
                    ),
                });
            }
        }
        let to = to.unwrap_or(unix_now() + 1);
        let from = from.unwrap_or(to - 7 * 86_400);
        if from >= to {
            return Err(LinkError::Invalid {
                field: "from",
                code: "invalid_range",
                message: format!("from ({from}) must be before to ({to})"),
            });
        }
        let range = Range {
            from: from.div_euclid(bucket) * bucket,
            to: (to + bucket - 1).div_euclid(bucket) * bucket,
            bucket,
            granularity,
        };
        let buckets = range.buckets();
        if buckets > MAX_BUCKETS {
            return Err(LinkError::Invalid {
                field: "from",
                code: "invalid_range",
                message: format!(
                    "the range spans {buckets} buckets; at most {MAX_BUCKETS} (use granularity=day or a shorter range)"
                ),
            });
        }
        Ok(range)
    }

    fn buckets(&self) -> i64 {
        (self.to - self.from) / self.bucket
    }

    /// The hours the range covers, first and last.
    fn hours(&self) -> (i64, i64) {
        (self.from / 3600, self.to / 3600 - 1)
    }

    fn daily(&self) -> bool {
        self.granularity == Granularity::Day
    }

    /// Every bucket of the range, zeros included, filled from `(bucket
    /// start, clicks)` pairs.
    fn series(&self, counts: impl IntoIterator<Item = (i64, i64)>) -> Vec<Point> {
        let mut series: Vec<Point> = (0..self.buckets())
            .map(|i| Point {
                t: Timestamp(self.from + i * self.bucket),
                clicks: 0,
            })
            .collect();
        for (t, n) in counts {
            let i = (t - self.from) / self.bucket;
            if let Some(p) = usize::try_from(i).ok().and_then(|i| series.get_mut(i)) {
                p.clicks += n;
            }
        }
        series
    }
}

/// Stats of a link `by` may see over `[from, to)` (Unix seconds;
/// defaults: the last 7 days).
pub async fn query(
    app: &App,
    by: &Principal,
    code: &str,
    from: Option<i64>,
    to: Option<i64>,
    granularity: Granularity,
) -> Result<StatsView, LinkError> {
    let link = app.links().acting_as(by).get(code).await?;
    let range = Range::new(from, to, granularity)?;
    let (from_hour, to_hour) = range.hours();
    let (id, daily) = (link.id, range.daily());
    let r = app.store.link_stats(id, from_hour, to_hour, daily).await?;
    let series = range.series(r.series);
    let mut devices = DeviceCounts::default();
    for (d, n) in r.devices {
        match DeviceClass::from_u8(d) {
            DeviceClass::Desktop => devices.desktop += n,
            DeviceClass::Mobile => devices.mobile += n,
            DeviceClass::Ios => devices.ios += n,
            DeviceClass::Android => devices.android += n,
            DeviceClass::Other => devices.other += n,
        }
    }
    Ok(StatsView {
        code: crate::codes::public(&app.codec, &link),
        from: range.from.into(),
        to: range.to.into(),
        granularity,
        total: r.total,
        bots: r.bots,
        series,
        devices,
        referrers: r
            .referrers
            .into_iter()
            .map(|(host, clicks)| ReferrerCount { host, clicks })
            .collect(),
        countries: country_counts(r.countries),
        variants: variant_counts(&link.variants, &r.variants, by.has(Scope::LinksRead)),
        total_all_time: link.clicks,
        bots_all_time: link.bot_clicks,
    })
}

/// Clicks of one link in a site-wide range.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct LinkCount {
    /// The link's public code (alias or generated).
    pub code: String,
    /// Its target URL; only for a caller that may read links
    /// (`links:read`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Clicks in the range, bots included.
    pub clicks: i64,
}

/// Reply of `GET /api/v1/stats`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SiteStatsView {
    /// Range start (inclusive), aligned to the bucket.
    pub from: Timestamp,
    /// Range end (exclusive).
    pub to: Timestamp,
    /// Bucket size of `series`.
    pub granularity: Granularity,
    /// Clicks on every link in the range, bots included.
    pub total: i64,
    /// Bot clicks in the range (also part of `total`).
    pub bots: i64,
    /// Every bucket of the range, zeros included.
    pub series: Vec<Point>,
    /// The most clicked links in the range, most first.
    pub top_links: Vec<LinkCount>,
    /// Clicks on every link in the range by visitor country, most first.
    pub countries: Vec<CountryCount>,
}

/// Stats of every link `by` sees (their team's, or all for an admin) over
/// `[from, to)`, with the `top` most clicked links (at most [`MAX_TOP`]).
pub async fn site_query(
    app: &App,
    by: &Principal,
    from: Option<i64>,
    to: Option<i64>,
    granularity: Granularity,
    top: usize,
) -> Result<SiteStatsView, LinkError> {
    let range = Range::new(from, to, granularity)?;
    let (from_hour, to_hour) = range.hours();
    let (daily, top) = (range.daily(), top.min(MAX_TOP));
    let show_urls = by.has(Scope::LinksRead);
    let r = app
        .store
        .site_stats(from_hour, to_hour, daily, top, by.team_filter())
        .await?;
    let (r, top) = r;
    Ok(SiteStatsView {
        from: range.from.into(),
        to: range.to.into(),
        granularity,
        total: r.total,
        bots: r.bots,
        series: range.series(r.series),
        countries: country_counts(r.countries),
        top_links: top
            .into_iter()
            .map(|(link, clicks)| LinkCount {
                code: crate::codes::public(&app.codec, &link),
                url: show_urls.then_some(link.url),
                clicks,
            })
            .collect(),
    })
}
