//! `stats CODE`: a summary of a link's clicks; `--series` adds the
//! buckets, `--json` prints the API's reply.

use std::io::Write;

use anyhow::Result;

use super::client::Client;
use super::output::Output;
use super::table::{when, Table};
use crate::api::stats::StatsParams;
use crate::stats::Granularity;
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
        "range:       {} to {} UTC",
        when(Some(s.from)),
        when(Some(s.to))
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
        for r in s.referrers.iter().take(10) {
            let host = if r.host.is_empty() {
                "(direct)"
            } else {
                &r.host
            };
            writeln!(out, "  {:>8}  {host}", r.clicks)?;
        }
    }
    if series {
        writeln!(out)?;
        let mut t = Table::new(&["TIME (UTC)", "CLICKS"]);
        for p in &s.series {
            t.row(vec![when(Some(p.t)), p.clicks.to_string()]);
        }
        out.table(&t)?;
    }
    Ok(())
}
