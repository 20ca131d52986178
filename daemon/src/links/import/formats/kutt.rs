//! Kutt: it has no CSV export of its own; its links come from the API
//! (`GET /api/v2/links`) and are written to CSV with the API's field
//! names: `id,address,target,description,visit_count,created_at,
//! updated_at,expire_in,banned,password,link`. `address` is the code,
//! `visit_count` the total visits, `expire_in` an ISO 8601 time, the
//! `description` (Kutt's only name for a link) becomes the title. A banned link, or a password-protected
//! one (the export carries no password), comes in disabled, with a note:
//! never as an open redirect.

use super::{CodeCell, Columns, Headers};

/// What makes a header Kutt's.
pub const NEEDS: &str = "`address` and `target` columns";

/// Kutt's columns in `h`.
pub fn columns(h: &Headers) -> Option<Columns> {
    Some(Columns {
        alias: vec![(h.col(&["address"])?, CodeCell::Plain)],
        url: Some(h.col(&["target"])?),
        foreign: true,
        created_at: h.col(&["created_at"]),
        expires_at: h.col(&["expire_in"]),
        clicks: h.col(&["visit_count"]),
        title: h.col(&["description"]),
        switched_off: [
            ("banned", "banned in Kutt"),
            (
                "password",
                "password-protected in Kutt; the export has no password: set one, then enable it",
            ),
        ]
        .into_iter()
        .filter_map(|(name, why)| Some((h.col(&[name])?, why)))
        .collect(),
        ..Columns::default()
    })
}
