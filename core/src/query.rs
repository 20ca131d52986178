//! Forwarding a visit's query string to the link's target
//! (`shortlink_forward_query on`): campaign tools add UTM tags to the short
//! URL and expect them on the landing page.
//!
//! The rule, in one place:
//!
//! * the query is inserted before the target's `#fragment`, if any;
//! * it is joined with `?` when the target has no query, with `&` when it
//!   has one, and with nothing when the target's query already ends in `?`
//!   or `&`;
//! * the target is sent alone when the visit has no query, when the query
//!   holds a byte that cannot go into a `Location` header as it is (only
//!   visible ASCII, never `#`: browsers send percent-escapes), or when the
//!   result would be longer than the limit (the edge uses
//!   [`crate::target::DEFAULT_MAX_TARGET_LEN`], the length a target may
//!   have).

/// Whether a visit's query joins the target: the link's own `forward_query`
/// when it has one (the link wins), else the location's
/// `shortlink_forward_query`.
#[inline]
pub fn forwards_query(link: Option<bool>, location: bool) -> bool {
    link.unwrap_or(location)
}

/// Where and how a query joins a target; [`QueryJoin::write`] builds the
/// result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueryJoin {
    /// Where the query goes: the fragment's `#`, or the end.
    pub at: usize,
    /// What goes between the target's part before `at` and the query.
    pub sep: &'static [u8],
    /// Length of the result.
    pub len: usize,
}

impl QueryJoin {
    /// The target with the query joined, into `out` (exactly
    /// [`QueryJoin::len`] bytes long).
    pub fn write(&self, target: &[u8], query: &[u8], out: &mut [u8]) {
        let (head, tail) = target.split_at(self.at);
        let mut at = 0;
        for part in [head, self.sep, query, tail] {
            out[at..at + part.len()].copy_from_slice(part);
            at += part.len();
        }
    }
}

/// How `query` (a request's arguments, without the `?`) joins `target`,
/// or `None` when the target is to be sent alone (see the module's rule).
pub fn join_query(target: &[u8], query: &[u8], max_len: usize) -> Option<QueryJoin> {
    if query.is_empty()
        || !query
            .iter()
            .all(|&b| (0x21..0x7f).contains(&b) && b != b'#')
    {
        return None;
    }
    let at = target
        .iter()
        .position(|&b| b == b'#')
        .unwrap_or(target.len());
    let head = &target[..at];
    let sep: &'static [u8] = match head.iter().position(|&b| b == b'?') {
        None => b"?",
        Some(_) if matches!(head.last(), Some(b'?' | b'&')) => b"",
        Some(_) => b"&",
    };
    let len = target.len() + sep.len() + query.len();
    (len <= max_len).then_some(QueryJoin { at, sep, len })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::{is_header_safe, DEFAULT_MAX_TARGET_LEN};

    fn joined(target: &str, query: &str) -> Option<String> {
        let j = join_query(target.as_bytes(), query.as_bytes(), DEFAULT_MAX_TARGET_LEN)?;
        let mut out = vec![0; j.len];
        j.write(target.as_bytes(), query.as_bytes(), &mut out);
        Some(String::from_utf8(out).unwrap())
    }

    #[test]
    fn the_query_joins_with_the_right_separator_before_the_fragment() {
        let cases = [
            (
                "https://e.com/a",
                "utm_source=x",
                "https://e.com/a?utm_source=x",
            ),
            (
                "https://e.com/a?p=1",
                "utm_source=x",
                "https://e.com/a?p=1&utm_source=x",
            ),
            ("https://e.com/a?", "u=1", "https://e.com/a?u=1"),
            ("https://e.com/a?p=1&", "u=1", "https://e.com/a?p=1&u=1"),
            ("https://e.com/a#top", "u=1", "https://e.com/a?u=1#top"),
            (
                "https://e.com/a?p=1#x?y",
                "u=1",
                "https://e.com/a?p=1&u=1#x?y",
            ),
            ("https://e.com/#", "u=%20&v", "https://e.com/?u=%20&v#"),
        ];
        for (target, query, want) in cases {
            assert_eq!(
                joined(target, query).as_deref(),
                Some(want),
                "{target} + {query}"
            );
        }
    }

    #[test]
    fn the_link_wins_over_the_location() {
        assert!(forwards_query(Some(true), false));
        assert!(!forwards_query(Some(false), true));
        assert!(forwards_query(None, true));
        assert!(!forwards_query(None, false));
    }

    #[test]
    fn the_target_goes_alone_without_a_query_an_unsafe_one_or_past_the_limit() {
        for query in ["", "a=b c", "a=\r\nSet-Cookie:x", "a=\u{e9}", "a#b", "a=\t"] {
            assert_eq!(joined("https://e.com/", query), None, "{query:?}");
        }
        let t = b"https://e.com/";
        assert!(join_query(t, b"a=1", t.len() + 4).is_some());
        assert!(join_query(t, b"a=1", t.len() + 3).is_none());
    }

    proptest::proptest! {
        #[test]
        fn a_joined_target_is_header_safe_keeps_its_parts_and_fits(
            target in "https://e\\.com/[ -~]{0,40}",
            query in "[ -~]{0,40}",
            max in 0usize..120,
        ) {
            let Some(j) = join_query(target.as_bytes(), query.as_bytes(), max) else {
                return Ok(());
            };
            let mut out = vec![0; j.len];
            j.write(target.as_bytes(), query.as_bytes(), &mut out);
            proptest::prop_assert!(out.len() <= max);
            // The query appears once, whole, in the target's query part.
            let text = String::from_utf8(out).unwrap();
            let (before, after) = text.split_at(j.at + j.sep.len() + query.len());
            proptest::prop_assert!(before.ends_with(query.as_str()));
            proptest::prop_assert_eq!(after, &target[j.at..]);
            proptest::prop_assert_eq!(&before[..j.at], &target[..j.at]);
            if is_header_safe(target.as_bytes()) {
                proptest::prop_assert!(is_header_safe(text.as_bytes()));
            }
        }
    }
}
