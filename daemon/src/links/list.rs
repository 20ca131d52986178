//! Listing links: one page (newest first, every acknowledged click in its
//! totals) and how many match in all. A search text that is a generated
//! code also finds the link behind it.

use super::ops::Links;
use super::LinkError;
use crate::codes::{self, CodeRef};
use crate::store::links::{self as table, Link, ListQuery};

/// A page of links and the number of links matching the same filter.
#[derive(Debug, Clone)]
pub struct Page {
    /// Up to `limit` links, newest first.
    pub links: Vec<Link>,
    /// Matching links across every page.
    pub total: u64,
}

impl Links<'_> {
    /// One page of links matching `query`, and their total.
    pub async fn list(&self, mut query: ListQuery) -> Result<Page, LinkError> {
        query.code_id =
            query
                .q
                .as_deref()
                .and_then(|q| match codes::resolve(&self.rules.codec, q) {
                    CodeRef::Id(id) => Some(id),
                    _ => None,
                });
        Ok(self
            .store
            .read_counted(move |c, clicks| {
                let mut links = table::list(c, &query)?;
                links.iter_mut().for_each(|l| clicks.apply(l));
                let total = table::count_matching(c, &query)?;
                Ok(Page { links, total })
            })
            .await?)
    }
}
