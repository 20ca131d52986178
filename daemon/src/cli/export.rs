//! `export`: every link to a CSV file (or stdout, `-`) that `import`
//! reads back, generated codes and click totals included.
//!
//! The pages are read as JSON of their own shape here, not as the API's
//! view type, so that times come across whether the API writes them as
//! Unix seconds or as RFC 3339 text.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use serde::Deserialize;

use super::client::Client;
use super::output::Output;
use crate::links::TargetsInput;
use crate::timestamp::{format_time, Timestamp};

/// The columns of an export file, in order.
pub const COLUMNS: [&str; 15] = [
    "code",
    "url",
    "alias",
    "expires_at",
    "tags",
    "clicks",
    "bot_clicks",
    "created_at",
    "redirect",
    "max_visits",
    "disabled",
    "target_desktop",
    "target_mobile",
    "target_ios",
    "target_android",
];

/// RFC 3339 of a time, empty when absent or out of range.
fn rfc3339(t: Option<Timestamp>) -> String {
    t.and_then(|t| format_time(t.unix())).unwrap_or_default()
}

/// A link as an export needs it from `GET /api/v1/links`.
#[derive(Debug, Deserialize)]
struct ExportedLink {
    generated_code: String,
    url: String,
    alias: Option<String>,
    expires_at: Option<Timestamp>,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    clicks: i64,
    #[serde(default)]
    bot_clicks: i64,
    created_at: Timestamp,
    redirect: Option<u16>,
    max_visits: Option<i64>,
    #[serde(default)]
    disabled: bool,
    #[serde(default)]
    targets: TargetsInput,
}

/// One page of `GET /api/v1/links`.
#[derive(Debug, Deserialize)]
struct ExportPage {
    links: Vec<ExportedLink>,
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
    let mut w = csv::Writer::from_writer(sink);
    w.write_record(COLUMNS)?;
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
            w.write_record([
                l.generated_code.as_str(),
                &l.url,
                l.alias.as_deref().unwrap_or(""),
                &rfc3339(l.expires_at),
                &l.tags.join(","),
                &l.clicks.to_string(),
                &l.bot_clicks.to_string(),
                &rfc3339(Some(l.created_at)),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_from_the_api_either_way() {
        let page: ExportPage = serde_json::from_value(serde_json::json!({
            "links": [
                {"generated_code": "a", "url": "https://e.com", "alias": null,
                 "created_at": 1_577_836_800, "expires_at": "2099-01-01T00:00:00Z"},
                {"generated_code": "b", "url": "https://e.com", "alias": null,
                 "created_at": "2020-01-01T01:00:00+01:00", "expires_at": null},
            ],
            "next_cursor": null,
        }))
        .unwrap();
        assert_eq!(page.links[0].created_at, page.links[1].created_at);
        assert_eq!(rfc3339(page.links[0].expires_at), "2099-01-01T00:00:00Z");
        let bad = serde_json::from_value::<ExportedLink>(serde_json::json!({
            "generated_code": "a", "url": "u", "alias": null, "created_at": "soon"
        }))
        .unwrap_err();
        assert!(bad.to_string().contains("soon"), "{bad}");
    }
}
