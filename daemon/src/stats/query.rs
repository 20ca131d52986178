//! Click stats over a range: of one link (series, devices, referrers with
//! `direct` for none, countries, A/B variants, bots) and of every link, or
//! of a tag's links (a campaign: series and the most clicked links).

use serde::{Deserialize, Serialize};
use shortlink_core::device::DeviceClass;
use utoipa::ToSchema;

use super::range::Range;
pub use super::range::{Granularity, Point, MAX_BUCKETS};
use super::zone::StatsZone;
use crate::access::Scope;
use crate::app::App;
use crate::auth::Principal;
use crate::store::{LinkError, SiteFilter};
use crate::timestamp::Timestamp;

/// Most links a site-wide query ranks.
pub const MAX_TOP: usize = 100;

/// The referrer "host" of clicks that sent no `Referer`: typed in,
/// bookmarked, or from an app or an e-mail that sends none.
pub const DIRECT: &str = "direct";

/// Clicks from one referrer host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ReferrerCount {
    /// Host of the `Referer`; `direct` when none was sent.
    #[schema(example = "direct")]
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
    /// The IANA time zone whose midnights start the day buckets (`UTC`
    /// unless the query gave `tz`).
    #[schema(example = "Europe/Paris")]
    pub tz: String,
    /// Clicks in the range, bots included.
    pub total: i64,
    /// Bot clicks in the range (also part of `total`).
    pub bots: i64,
    /// Every bucket of the range, zeros included.
    pub series: Vec<Point>,
    /// Clicks in the range by device class.
    pub devices: DeviceCounts,
    /// Top referrer hosts in the range; clicks without a `Referer` as
    /// `direct`.
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

/// Stats of a link `by` may see over `[from, to)` (Unix seconds;
/// defaults: the last 7 days).
pub async fn query(
    app: &App,
    by: &Principal,
    code: &str,
    from: Option<i64>,
    to: Option<i64>,
    granularity: Granularity,
    zone: &StatsZone,
) -> Result<StatsView, LinkError> {
    let link = app.links().acting_as(by).get(code).await?;
    let range = Range::new(from, to, granularity, zone)?;
    let (from_hour, to_hour) = range.hours();
    let (id, daily) = (link.id, range.store_daily());
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
        tz: zone.name().to_string(),
        total: r.total,
        bots: r.bots,
        series,
        devices,
        referrers: referrer_counts(r.referrers),
        countries: country_counts(r.countries),
        variants: variant_counts(&link.variants, &r.variants, by.has(Scope::LinksRead)),
        total_all_time: link.clicks,
        bots_all_time: link.bot_clicks,
    })
}

/// The referrers of a tally as the API shows them: no `Referer` is
/// [`DIRECT`] (merged with a host that really is named `direct`, which
/// no public host is).
fn referrer_counts(counts: Vec<(String, i64)>) -> Vec<ReferrerCount> {
    let mut out: Vec<ReferrerCount> = Vec::with_capacity(counts.len());
    for (host, clicks) in counts {
        let host = if host.is_empty() { DIRECT.into() } else { host };
        match out.iter_mut().find(|r| r.host == host) {
            Some(r) => r.clicks += clicks,
            None => out.push(ReferrerCount { host, clicks }),
        }
    }
    out.sort_by(|a, b| b.clicks.cmp(&a.clicks).then_with(|| a.host.cmp(&b.host)));
    out
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
    /// The IANA time zone whose midnights start the day buckets.
    #[schema(example = "Europe/Paris")]
    pub tz: String,
    /// Only the links with this tag were counted (a campaign); absent:
    /// every link.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
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

/// What a site-wide stats query asks: the range, its buckets and zone,
/// which links, how many of the most clicked.
#[derive(Debug, Clone, Default)]
pub struct SiteQuery {
    /// Range start, Unix seconds (default: `to` minus 7 days).
    pub from: Option<i64>,
    /// Range end, exclusive (default: now).
    pub to: Option<i64>,
    /// Bucket size.
    pub granularity: Granularity,
    /// Whose midnights start the days.
    pub zone: StatsZone,
    /// Only links with this tag (a campaign).
    pub tag: Option<String>,
    /// How many of the most clicked links (at most [`MAX_TOP`]).
    pub top: usize,
}

/// Stats of every link `by` sees (their team's, or all for an admin; with
/// the query's tag, when it has one) over the query's range.
pub async fn site_query(
    app: &App,
    by: &Principal,
    q: SiteQuery,
) -> Result<SiteStatsView, LinkError> {
    let range = Range::new(q.from, q.to, q.granularity, &q.zone)?;
    let (from_hour, to_hour) = range.hours();
    let (daily, top) = (range.store_daily(), q.top.min(MAX_TOP));
    let show_urls = by.has(Scope::LinksRead);
    let tag = match q.tag.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
        Some(t) => Some(
            crate::links::rules::check_tags(&[t.to_string()])
                .map_err(|e| match e {
                    LinkError::Invalid { code, message, .. } => LinkError::Invalid {
                        field: "tag",
                        code,
                        message,
                    },
                    e => e,
                })?
                .remove(0),
        ),
        None => None,
    };
    let filter = SiteFilter {
        team: by.team_filter(),
        tag: tag.clone(),
    };
    let (r, top) = app
        .store
        .site_stats(from_hour, to_hour, daily, top, filter)
        .await?;
    Ok(SiteStatsView {
        from: range.from.into(),
        to: range.to.into(),
        granularity: q.granularity,
        tz: q.zone.name().to_string(),
        tag,
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
