//! `export`: every link to a CSV file (or stdout, `-`) that `import`
//! reads back, generated codes and click totals included.
//! The record is `links::csv_format`'s, the admin UI's download too.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use serde::Deserialize;

use super::client::Client;
use super::output::Output;
use crate::links::csv_format;
use crate::links::LinkView;

/// `GET /api/v1/teams`: the teams the key sees, for their names.
#[derive(Debug, Deserialize)]
struct TeamPage {
    teams: Vec<TeamName>,
}

#[derive(Debug, Deserialize)]
struct TeamName {
    id: i64,
    name: String,
}

/// One page of `GET /api/v1/links`.
#[derive(Debug, Deserialize)]
struct ExportPage {
    links: Vec<LinkView>,
    next_cursor: Option<String>,
}

/// Writes every link to `file` (stdout when it is `-`), a page of 1,000
/// at a time.
pub async fn export(client: &Client, file: &Path, out: &mut Output) -> Result<()> {
    let sink: Box<dyn Write + '_> = if file == Path::new("-") {
        Box::new(out)
    } else {
        Box::new(
            std::fs::File::create(file)
                .with_context(|| format!("cannot create {}", file.display()))?,
        )
    };
    let teams: std::collections::HashMap<i64, String> = client
        .get::<TeamPage>("/api/v1/teams")
        .await?
        .teams
        .into_iter()
        .map(|t| (t.id, t.name))
        .collect();
    let mut w = csv::Writer::from_writer(sink);
    w.write_record(csv_format::HEADER)?;
    let mut cursor: Option<String> = None;
    let mut n = 0usize;
    loop {
        let mut path = "/api/v1/links?limit=1000".to_string();
        if let Some(c) = cursor.take() {
            path += "&cursor=";
            path.extend(url::form_urlencoded::byte_serialize(c.as_bytes()));
        }
        let page: ExportPage = client.get(&path).await?;
        for l in page.links {
            let team = teams.get(&l.team_id).map_or("", String::as_str);
            w.write_record(csv_format::record(&l, team))?;
            n += 1;
        }
        cursor = page.next_cursor;
        if cursor.is_none() {
            break;
        }
    }
    w.flush()?;
    drop(w);
    eprintln!("exported {n} links to {}", file.display());
    Ok(())
}
