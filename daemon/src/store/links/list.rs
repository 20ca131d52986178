//! What a list of links asks for: filters, order and the page position
//! (each store turns it into its own SQL).

use super::link::{Link, LinkState};

/// What a list is ordered by; ties are broken by id in the same direction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ListSort {
    /// Creation order (the id order).
    #[default]
    Created,
    /// The click count written to the store so far.
    Clicks,
    /// The expiry; links that never expire come after every expiry.
    Expires,
}

impl ListSort {
    /// The sort key of `link`, as each store's SQL computes it.
    pub fn key(self, link: &Link) -> i64 {
        match self {
            ListSort::Created => link.id as i64,
            ListSort::Clicks => link.clicks,
            ListSort::Expires => link.expires_at.unwrap_or(i64::MAX),
        }
    }
}

/// Filters, order and page position of a list of links.
#[derive(Debug, Clone, Default)]
pub struct ListQuery {
    /// Page size.
    pub limit: u32,
    /// Start after this `(sort key, id)`: the previous page's last link.
    pub after: Option<(i64, u64)>,
    /// What the page is ordered by.
    pub sort: ListSort,
    /// Smallest first; the default is largest (newest) first.
    pub ascending: bool,
    /// Substring (case-sensitive) of the URL, alias or title.
    pub q: Option<String>,
    /// The id `q` decodes to when it is a generated code: that link
    /// matches too.
    pub code_id: Option<u64>,
    /// Only links carrying these tags (any of them, or all with `all_tags`).
    pub tags: Vec<String>,
    /// A link must carry every tag of `tags`, not just one.
    pub all_tags: bool,
    /// Only links in this state at `now`.
    pub state: Option<LinkState>,
    /// Unix seconds the state is judged at.
    pub now: i64,
    /// Only links created at or after this (Unix seconds).
    pub created_after: Option<i64>,
    /// Only links created before this (Unix seconds).
    pub created_before: Option<i64>,
    /// Only links of this team; `None`: every team (an admin's list).
    pub team: Option<i64>,
    /// Only links the link checker marks broken (`true`) or not.
    pub broken: Option<bool>,
}

impl ListQuery {
    /// The tags to filter on, sorted and without repeats; `None` for no
    /// tag filter. Every store's filter reads them so.
    pub fn tag_set(&self) -> Option<Vec<String>> {
        let mut tags = self.tags.clone();
        tags.sort_unstable();
        tags.dedup();
        (!tags.is_empty()).then_some(tags)
    }

    /// [`ListQuery::code_id`] as a stored id; an id past `i64` matches no
    /// link.
    pub fn stored_code_id(&self) -> Option<i64> {
        self.code_id.and_then(|i| i64::try_from(i).ok())
    }
}
