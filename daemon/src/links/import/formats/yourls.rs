//! YOURLS: its `yourls_url` table, as the export plugins write it
//! (`keyword,url,title,timestamp,ip,clicks`). `timestamp` is the
//! database's `YYYY-MM-DD HH:MM:SS`, read as UTC. YOURLS has no tags;
//! the title and the creator's IP have no field here.

use super::{CodeCell, Columns, Headers};

/// What makes a header YOURLS's.
pub const NEEDS: &str = "`keyword` and `url` columns";

/// YOURLS's columns in `h`.
pub fn columns(h: &Headers) -> Option<Columns> {
    Some(Columns {
        alias: vec![(h.col(&["keyword"])?, CodeCell::Plain)],
        url: Some(h.col(&["url"])?),
        foreign: true,
        created_at: h.col(&["timestamp"]),
        clicks: h.col(&["clicks"]),
        ..Columns::default()
    })
}
