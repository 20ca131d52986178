//! `export`: every link to a CSV file (or stdout, `-`) that `import`
//! reads back.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};

use super::client::Client;
use super::output::Output;
use crate::api::links::ListParams;

/// RFC 3339 of Unix seconds, empty when absent or out of range.
fn rfc3339(t: Option<i64>) -> String {
    t.and_then(|t| time::OffsetDateTime::from_unix_timestamp(t).ok())
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_default()
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
    let mut w = csv::Writer::from_writer(sink);
    w.write_record([
        "code",
        "url",
        "alias",
        "expires_at",
        "tags",
        "clicks",
        "created_at",
        "redirect",
        "max_visits",
        "disabled",
        "target_desktop",
        "target_mobile",
        "target_ios",
        "target_android",
    ])?;
    let mut cursor: Option<String> = None;
    let mut n = 0usize;
    loop {
        let page = client
            .links(&ListParams {
                limit: Some(1000),
                cursor: cursor.take(),
                q: None,
                tag: None,
            })
            .await?;
        for l in page.links {
            w.write_record([
                l.generated_code.as_str(),
                &l.url,
                l.alias.as_deref().unwrap_or(""),
                &rfc3339(l.expires_at.map(|t| t.unix())),
                &l.tags.join(","),
                &l.clicks.to_string(),
                &rfc3339(Some(l.created_at.unix())),
                &l.redirect.map(|r| r.to_string()).unwrap_or_default(),
                &l.max_visits.map(|m| m.to_string()).unwrap_or_default(),
                if l.disabled { "true" } else { "" },
                l.targets.desktop.as_deref().unwrap_or(""),
                l.targets.mobile.as_deref().unwrap_or(""),
                l.targets.ios.as_deref().unwrap_or(""),
                l.targets.android.as_deref().unwrap_or(""),
            ])?;
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
