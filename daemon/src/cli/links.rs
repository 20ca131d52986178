//! `link` and `stats`: links one at a time, and their click stats.

use std::io::Write;

use anyhow::Result;
use serde::Serialize;

use super::args::LinkCommand;
use super::client::Client;
use crate::api::links::ListParams;
use crate::api::stats::StatsParams;
use crate::links::{CreateLink, TimeInput};

/// Runs a `link` command; `create` prints the short URL, `get` the JSON.
pub async fn link(client: &Client, command: LinkCommand, out: &mut impl Write) -> Result<()> {
    match command {
        LinkCommand::Create {
            url,
            alias,
            ttl,
            expires_at,
            tags,
            dedupe,
        } => {
            let req = CreateLink {
                url,
                alias,
                ttl,
                expires_at: expires_at.map(TimeInput::Text),
                tags: (!tags.is_empty()).then_some(tags),
                dedupe: dedupe.then_some(true),
                ..CreateLink::default()
            };
            writeln!(out, "{}", client.create_link(&req).await?.short_url)?;
        }
        LinkCommand::Get { code } => print_json(out, &client.link(&code).await?)?,
        LinkCommand::List { limit, q, tag } => {
            let page = client
                .links(&ListParams {
                    limit: Some(limit),
                    cursor: None,
                    q,
                    tag,
                })
                .await?;
            writeln!(out, "CODE\tCLICKS\tSTATE\tURL")?;
            for l in page.links {
                writeln!(out, "{}\t{}\t{}\t{}", l.code, l.clicks, l.state, l.url)?;
            }
        }
        LinkCommand::Delete { code } => {
            client.delete_link(&code).await?;
            eprintln!("deleted {code}");
        }
    }
    Ok(())
}

/// Prints the stats of `code` as JSON.
pub async fn stats(
    client: &Client,
    code: &str,
    params: StatsParams,
    out: &mut impl Write,
) -> Result<()> {
    print_json(out, &client.stats(code, &params).await?)
}

/// Pretty JSON with the keys sorted, as the CLI has always printed it.
fn print_json(out: &mut impl Write, value: &impl Serialize) -> Result<()> {
    let sorted = serde_json::to_value(value)?;
    writeln!(out, "{}", serde_json::to_string_pretty(&sorted)?)?;
    Ok(())
}
