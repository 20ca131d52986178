//! Shlink's export of short URLs (the web client's "Export" button on the
//! short URL list writes `short_urls.csv`):
//! `createdAt,domain,shortCode,shortUrl,longUrl,title,tags,visits`, tags
//! separated by `|` (older clients: `,`; older ones had no `domain` and
//! `shortCode`, only `shortUrl`). `visits` is the total, bots included.
//! Shlink has no field for a redirect status per link or device targets
//! in this file; the title has no field here.

use super::{CodeCell, Columns, Headers};

/// What makes a header Shlink's.
pub const NEEDS: &str = "`longUrl` and `shortCode` or `shortUrl` columns";

/// Shlink's columns in `h`.
pub fn columns(h: &Headers) -> Option<Columns> {
    let url = h.col(&["longUrl"])?;
    let mut alias = Vec::new();
    if let Some(c) = h.col(&["shortCode"]) {
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
        ..Columns::default()
    })
}
