//! YOURLS, in either of the files its export plugins write:
//!
//! * its `yourls_url` table (`keyword,url,title,timestamp,ip,clicks`):
//!   `timestamp` is the database's `YYYY-MM-DD HH:MM:SS`, read as UTC;
//! * the short form of the "Export" plugin (`source,target,hits`):
//!   `source` is the keyword, `target` the long URL, `hits` the clicks.
//!
//! YOURLS has no tags; the creator's IP has no field here.

use super::{CodeCell, Columns, Headers};

/// What makes a header YOURLS's.
pub const NEEDS: &str = "`keyword` and `url` columns, or `source` and `target`";

/// YOURLS's columns in `h`.
pub fn columns(h: &Headers) -> Option<Columns> {
    let (code, url) = match (h.col(&["keyword"]), h.col(&["url"])) {
        (Some(code), Some(url)) => (code, url),
        _ => (h.col(&["source"])?, h.col(&["target"])?),
    };
    Some(Columns {
        alias: vec![(code, CodeCell::Plain)],
        url: Some(url),
        foreign: true,
        created_at: h.col(&["timestamp"]),
        clicks: h.col(&["clicks", "hits"]),
        title: h.col(&["title"]),
        ..Columns::default()
    })
}
