//! `stats CODE`: a summary of a link's clicks; `stats --tag NAME`: of a
//! campaign's links. `--series` adds the buckets, `--json` prints the
//! API's reply; shares are whole percentages that add up to 100.

use std::io::Write;

use anyhow::Result;

use super::client::Client;
use super::output::Output;
use super::table::{when, Table};
use crate::api::stats::{SiteStatsParams, StatsParams};
use crate::stats::shares::percentages;
use crate::stats::{Granularity, Point};
use crate::timestamp::unix_now;

/// Prints the stats of `code`.
pub async fn stats(
    client: &Client,
    code: &str,
    params: StatsParams,
    series: bool,
    out: &mut Output,
) -> Result<()> {
    let s = client.stats(code, &params).await?;
    if out.json {
        return out.print_json(&s);
    }
    // The current hour's bucket and the 23 before it.
    let since = unix_now() / 3600 * 3600 - 23 * 3600;
    let last_day: i64 = s
        .series
        .iter()
        .filter(|p| p.t.unix() >= since)
        .map(|p| p.clicks)
        .sum();
    writeln!(out, "link:        {}", s.code)?;
    writeln!(
        out,
        "range:       {} to {} UTC (days in {})",
        when(Some(s.from)),
        when(Some(s.to)),
        s.tz
    )?;
    writeln!(out, "clicks:      {} ({} bots)", s.total, s.bots)?;
    if s.granularity == Granularity::Hour {
        writeln!(out, "last 24 h:   {last_day}")?;
    }
    writeln!(
        out,
        "all time:    {} ({} bots)",
        s.total_all_time, s.bots_all_time
    )?;
    let d = &s.devices;
    writeln!(
        out,
        "devices:     desktop {}, mobile {}, ios {}, android {}, other {}",
        d.desktop, d.mobile, d.ios, d.android, d.other
    )?;
    if !s.countries.is_empty() {
        let countries: Vec<String> = s
            .countries
            .iter()
            .take(10)
            .map(|c| format!("{} {}", c.country, c.clicks))
            .collect();
        writeln!(out, "countries:   {}", countries.join(", "))?;
    }
    if !s.variants.is_empty() {
        // Numbered from 1, as the admin page shows them.
        let variants: Vec<String> = s
            .variants
            .iter()
            .map(|v| format!("#{} {} (weight {})", v.index + 1, v.clicks, v.weight))
            .collect();
        writeln!(out, "variants:    {}", variants.join(", "))?;
    }
    if s.referrers.is_empty() {
        writeln!(out, "referrers:   none")?;
    } else {
        writeln!(out, "referrers:")?;
        let shown: Vec<(&str, i64)> = s
            .referrers
            .iter()
            .take(10)
            .map(|r| (r.host.as_str(), r.clicks))
            .collect();
        for (clicks, pct, host) in share_lines(&shown, s.total) {
            writeln!(out, "  {clicks:>8}  {pct:>3}%  {host}")?;
        }
    }
    if series {
        print_series(&s.series, out)?;
    }
    Ok(())
}

/// `rows` with their shares of `total`, an `(others)` row for what they
/// leave out: the percentages add up to 100.
fn share_lines<'a>(rows: &[(&'a str, i64)], total: i64) -> Vec<(i64, u32, &'a str)> {
    let mut rows = rows.to_vec();
    let rest = total - rows.iter().map(|(_, n)| n).sum::<i64>();
    if rest > 0 {
        rows.push(("(others)", rest));
    }
    let counts: Vec<i64> = rows.iter().map(|(_, n)| *n).collect();
    rows.iter()
        .zip(percentages(&counts))
        .map(|(&(name, n), pct)| (n, pct, name))
        .collect()
}

/// One row per bucket.
fn print_series(series: &[Point], out: &mut Output) -> Result<()> {
    writeln!(out)?;
    let mut t = Table::new(&["TIME (UTC)", "CLICKS"]);
    for p in series {
        t.row(vec![when(Some(p.t)), p.clicks.to_string()]);
    }
    out.table(&t)
}

/// Prints the stats of every link, or with a tag of a campaign's.
pub async fn site_stats(
    client: &Client,
    params: SiteStatsParams,
    series: bool,
    out: &mut Output,
) -> Result<()> {
    let s = client.site_stats(&params).await?;
    if out.json {
        return out.print_json(&s);
    }
    match &s.tag {
        Some(t) => writeln!(out, "tag:         {t}")?,
        None => writeln!(out, "links:       all")?,
    }
    writeln!(
        out,
        "range:       {} to {} UTC (days in {})",
        when(Some(s.from)),
        when(Some(s.to)),
        s.tz
    )?;
    writeln!(out, "clicks:      {} ({} bots)", s.total, s.bots)?;
    if s.top_links.is_empty() {
        writeln!(out, "top links:   none")?;
    } else {
        writeln!(out, "top links:")?;
        let shown: Vec<(&str, i64)> = s
            .top_links
            .iter()
            .map(|l| (l.code.as_str(), l.clicks))
            .collect();
        for (clicks, pct, code) in share_lines(&shown, s.total) {
            writeln!(out, "  {clicks:>8}  {pct:>3}%  {code}")?;
        }
    }
    if series {
        print_series(&s.series, out)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shown_shares_and_the_others_add_up_to_a_hundred() {
        let lines = share_lines(&[("direct", 1), ("a.example", 1)], 3);
        assert_eq!(
            lines,
            [(1, 34, "direct"), (1, 33, "a.example"), (1, 33, "(others)")]
        );
        assert_eq!(share_lines(&[("x", 2)], 2), [(2, 100, "x")]);
    }
}
