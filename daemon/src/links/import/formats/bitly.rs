//! Bitly: its link export (and the v4 API's link fields) names the short
//! link `link` (or `id`, `bit.ly/abc`; "Bitlink" in the web export), the
//! target `long_url` ("Long URL"), and has `title`, `created_at`
//! ("Created", `2024-03-01T10:00:00+0000`), `tags`, `custom_bitlinks`
//! ("Custom Bitlinks") and a click total where the export includes
//! engagement (`clicks`, `total_clicks` or "Engagements"). The first
//! custom back-half is kept as the alias, else the bitlink's own. An
//! archived bitlink (`archived`) comes in disabled, with a note.

use super::{CodeCell, Columns, Headers};

/// What makes a header Bitly's.
pub const NEEDS: &str = "`long_url` and `link`, `bitlink` or `id` columns";

/// Bitly's columns in `h`.
pub fn columns(h: &Headers) -> Option<Columns> {
    let url = h.col(&["long_url"])?;
    let short = h.col(&["link", "bitlink", "id"])?;
    let mut alias = Vec::new();
    if let Some(c) = h.col(&["custom_bitlinks", "custom_bitlink"]) {
        alias.push((c, CodeCell::ShortUrl));
    }
    alias.push((short, CodeCell::ShortUrl));
    Some(Columns {
        url: Some(url),
        alias,
        foreign: true,
        created_at: h.col(&["created_at", "created", "date_created"]),
        tags: h.col(&["tags"]),
        tag_separators: &[',', '|', ';'],
        clicks: h.col(&["clicks", "total_clicks", "engagements"]),
        title: h.col(&["title"]),
        switched_off: h
            .col(&["archived"])
            .map(|c| (c, "archived in Bitly"))
            .into_iter()
            .collect(),
        ..Columns::default()
    })
}
