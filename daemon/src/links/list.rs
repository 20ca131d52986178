//! Listing links: one page (in the asked order, every acknowledged click in
//! its totals) and how many match in all. A search text that is a generated
//! code also finds the link behind it.
//!
//! The cursor of a page is the position of its last link. Newest first (the
//! default) it is that link's id, as it always was; in any other order it is
//! `{sort}.{order}.{key}.{id}`, opaque to clients, so a page starts right
//! after the previous one even while links are added.

use super::ops::Links;
use crate::codes;
pub use crate::store::Page;
use crate::store::{CodeRef, LinkError, ListQuery, ListSort};
use crate::timestamp::unix_now;

/// The name of a sort in cursors and queries.
pub fn sort_name(sort: ListSort) -> &'static str {
    match sort {
        ListSort::Created => "created",
        ListSort::Clicks => "clicks",
        ListSort::Expires => "expires",
    }
}

/// The cursor text of a page position in `sort` and direction.
pub fn cursor(sort: ListSort, ascending: bool, (key, id): (i64, u64)) -> String {
    if sort == ListSort::Created && !ascending {
        return id.to_string();
    }
    let order = if ascending { "asc" } else { "desc" };
    format!("{}.{order}.{key}.{id}", sort_name(sort))
}

/// The page position of a [`cursor`], which must be one of the same sort
/// and direction.
pub fn parse_cursor(text: &str, sort: ListSort, ascending: bool) -> Result<(i64, u64), String> {
    let position = if let Ok(id) = text.parse::<u64>() {
        Some((
            (sort == ListSort::Created && !ascending).then_some(id as i64),
            id,
        ))
    } else {
        match text.split('.').collect::<Vec<_>>()[..] {
            [s, order, key, id]
                if s == sort_name(sort) && order == if ascending { "asc" } else { "desc" } =>
            {
                match (key.parse::<i64>(), id.parse::<u64>()) {
                    (Ok(key), Ok(id)) => Some((Some(key), id)),
                    _ => None,
                }
            }
            _ => None,
        }
    };
    match position {
        Some((Some(key), id)) => Ok((key, id)),
        _ => Err(format!(
            "cursor \"{text}\" is not one this API returned for sort={} and order={}",
            sort_name(sort),
            if ascending { "asc" } else { "desc" }
        )),
    }
}

impl Links<'_> {
    /// One page of links matching `query`, and their total. The state
    /// filter is judged now. A caller who sees one team lists only it,
    /// whatever team `query` asked for.
    pub async fn list(&self, mut query: ListQuery) -> Result<Page, LinkError> {
        query.now = unix_now();
        if let Some(team) = self.team.sees {
            query.team = Some(team);
        }
        query.code_id =
            query
                .q
                .as_deref()
                .and_then(|q| match codes::resolve(&self.rules.codec, q) {
                    CodeRef::Id(id) => Some(id),
                    _ => None,
                });
        Ok(self.store.list_links(query).await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_belong_to_their_order() {
        for (sort, asc, position) in [
            (ListSort::Created, false, (7, 7)),
            (ListSort::Created, true, (7, 7)),
            (ListSort::Clicks, false, (42, 7)),
            (ListSort::Expires, true, (i64::MAX, 7)),
        ] {
            let c = cursor(sort, asc, position);
            assert_eq!(parse_cursor(&c, sort, asc), Ok(position), "{c}");
        }
        assert_eq!(cursor(ListSort::Created, false, (7, 7)), "7");
        assert_eq!(cursor(ListSort::Clicks, true, (-3, 7)), "clicks.asc.-3.7");
        for (text, sort, asc) in [
            ("7", ListSort::Clicks, false),
            ("7", ListSort::Created, true),
            ("clicks.desc.3.7", ListSort::Clicks, true),
            ("clicks.desc.3.7", ListSort::Expires, false),
            ("clicks.desc.x.7", ListSort::Clicks, false),
            ("abc", ListSort::Created, false),
        ] {
            let e = parse_cursor(text, sort, asc).unwrap_err();
            assert!(e.contains(text), "{e}");
        }
    }
}
