//! Shlink, in either of its two CSV files:
//!
//! * the export of short URLs (the web client's "Export" button on the
//!   short URL list writes `short_urls.csv`):
//!   `createdAt,domain,shortCode,shortUrl,longUrl,title,tags,visits`
//!   (older clients had no `domain` and `shortCode`, only `shortUrl`);
//! * the file its importer reads (`shlink short-url:import csv`):
//!   `Long URL,Short code,Title,Domain,Tags`.
//!
//! Tags are separated by `|` (older clients: `,`). `visits` is the total,
//! bots included. Shlink has no redirect status per link nor device
//! targets in these files. One code may live on several of Shlink's
//! domains: the rows after the first come in under a derived alias
//! (see [`super::domains`]).

use super::{CodeCell, Columns, Headers};

/// What makes a header Shlink's.
pub const NEEDS: &str = "`longUrl` (or `Long URL`) and `shortCode` (or `Short code`) or \
                         `shortUrl` columns";

/// Shlink's columns in `h`.
pub fn columns(h: &Headers) -> Option<Columns> {
    let url = h.col(&["longUrl", "long_url"])?;
    let mut alias = Vec::new();
    if let Some(c) = h.col(&["shortCode", "short_code"]) {
        alias.push((c, CodeCell::Plain));
    }
    if let Some(c) = h.col(&["shortUrl"]) {
        alias.push((c, CodeCell::ShortUrl));
    }
    if alias.is_empty() {
        return None;
    }
    Some(Columns {
        url: Some(url),
        alias,
        foreign: true,
        created_at: h.col(&["createdAt", "dateCreated"]),
        tags: h.col(&["tags"]),
        tag_separators: &['|', ','],
        clicks: h.col(&["visits", "visitsCount"]),
        title: h.col(&["title"]),
        domain: h.col(&["domain"]),
        ..Columns::default()
    })
}
