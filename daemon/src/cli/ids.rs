//! `ids`: the id ranges leased and their recycling (`GET /api/v1/ids`):
//! a summary, then the newest ranges.

use std::io::Write;

use anyhow::Result;

use super::client::Client;
use super::output::Output;
use super::table::{when, Table};
use crate::store::RangeState;

/// Prints the summary and the `limit` newest ranges.
pub async fn ids(client: &Client, limit: u32, out: &mut Output) -> Result<()> {
    let v = client.ids(limit).await?;
    if out.json {
        return out.print_json(&v);
    }
    let r = &v.recycling;
    let recycling = if r.enabled {
        format!(
            "on (grace {} days, sweep every {} s)",
            r.grace_days, r.sweep_interval
        )
    } else {
        "off".into()
    };
    writeln!(out, "recycling:   {recycling}")?;
    writeln!(
        out,
        "ranges:      {} leased, {} purged, {} available ({} ids)",
        v.leased, v.purged, v.available, v.available_ids
    )?;
    writeln!(out, "reused:      {} ranges taken again", v.reused)?;
    writeln!(
        out,
        "recycled:    {} ids since this daemon started",
        v.recycled_ids
    )?;
    if v.ranges.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    let mut t = Table::new(&[
        "START",
        "STOP",
        "FIRST CODE",
        "STATE",
        "LEASED",
        "RECYCLED",
        "REUSES",
    ]);
    for range in v.ranges {
        let state = match range.state {
            RangeState::Leased => "leased",
            RangeState::Purged => "purged",
            RangeState::Available => "available",
        };
        t.row(vec![
            range.start.to_string(),
            range.stop.to_string(),
            range.first_code,
            state.into(),
            when(Some(range.leased_at)),
            when(range.recycled_at),
            range.reuses.to_string(),
        ]);
    }
    out.table(&t)
}
