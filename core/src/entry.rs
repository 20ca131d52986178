//! Tables of keyed targets in the tail of an nginx zone entry (the module's
//! `cache/node.rs`): a link's country targets, keyed by country code, and
//! its A/B variants, keyed by weight (`u16`, little endian). Made
//! here, where they can be tested, and read in place by the module with no
//! allocation.
//!
//! Layout: a count byte, then per target its key (2 bytes) and its URL's
//! length (`u16`, little endian), then the URLs in the same order. A table
//! of `n` targets takes `1 + 4 n` bytes besides the URLs.

use crate::country::{Country, MAX_COUNTRY_TARGETS};
use crate::variants::{Variant, MAX_VARIANTS};

/// Bytes of one row of a table: the key and the URL's length.
pub const ROW: usize = 4;

/// The table of a link's country targets (empty for none). `None` when
/// there are more than [`MAX_COUNTRY_TARGETS`] or a URL is longer than a
/// `u16` can record: such a link is answered without caching.
pub fn country_table(targets: &[(Country, String)]) -> Option<Vec<u8>> {
    if targets.len() > MAX_COUNTRY_TARGETS {
        return None;
    }
    table(targets.iter().map(|(c, url)| (c.bytes(), url.as_str())))
}

/// The table of a link's A/B variants (empty for none). `None` when there
/// are more than [`MAX_VARIANTS`], a weight is 0 or past a `u16`, or a URL
/// is longer than a `u16` can record.
pub fn variant_table(variants: &[Variant]) -> Option<Vec<u8>> {
    if variants.len() > MAX_VARIANTS {
        return None;
    }
    let mut rows = Vec::with_capacity(variants.len());
    for v in variants {
        let w = u16::try_from(v.weight).ok().filter(|&w| w > 0)?;
        rows.push((w.to_le_bytes(), v.url.as_str()));
    }
    table(rows.into_iter())
}

/// A table of `(key, URL)` rows; empty for none, `None` for more than 255
/// rows or a URL longer than a `u16` can record.
fn table<'a>(rows: impl ExactSizeIterator<Item = ([u8; 2], &'a str)> + Clone) -> Option<Vec<u8>> {
    let n = rows.len();
    if n == 0 {
        return Some(Vec::new());
    }
    let count = u8::try_from(n).ok()?;
    let urls: usize = rows.clone().map(|(_, url)| url.len()).sum();
    let mut out = Vec::with_capacity(1 + ROW * n + urls);
    out.push(count);
    for (key, url) in rows.clone() {
        let len = u16::try_from(url.len()).ok()?;
        out.extend_from_slice(&key);
        out.extend_from_slice(&len.to_le_bytes());
    }
    for (_, url) in rows {
        out.extend_from_slice(url.as_bytes());
    }
    Some(out)
}

/// A table read in place (as made by [`country_table`]). The bytes must be
/// a whole table or empty: [`Table::of`] checks that once.
#[derive(Clone, Copy)]
pub struct Table<'a>(&'a [u8]);

/// Bytes of a table's head (its count byte and rows) for `count` rows.
pub fn head_len(count: u8) -> usize {
    1 + ROW * usize::from(count)
}

/// Bytes of a whole table, from its head (the first [`head_len`] bytes).
pub fn table_len(head: &[u8]) -> usize {
    let urls: usize = head
        .get(1..)
        .unwrap_or_default()
        .chunks_exact(ROW)
        .map(|r| usize::from(u16::from_le_bytes([r[2], r[3]])))
        .sum();
    head.len() + urls
}

impl<'a> Table<'a> {
    /// The table of no rows.
    pub const EMPTY: Table<'static> = Table(&[]);

    /// The table at the start of `bytes`, when they hold a whole one; an
    /// empty table for empty bytes.
    pub fn of(bytes: &'a [u8]) -> Option<Table<'a>> {
        let Some(&n) = bytes.first() else {
            return Some(Table(bytes));
        };
        let head = bytes.get(..head_len(n))?;
        bytes.get(..table_len(head)).map(Table)
    }

    /// Bytes the table takes.
    pub fn size(&self) -> usize {
        self.0.len()
    }

    /// Rows.
    pub fn len(&self) -> usize {
        self.0.first().map_or(0, |&n| usize::from(n))
    }

    /// True for no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn row(&self, i: usize) -> &'a [u8] {
        &self.0[1 + ROW * i..1 + ROW * (i + 1)]
    }

    fn url_len(&self, i: usize) -> usize {
        let row = self.row(i);
        usize::from(u16::from_le_bytes([row[2], row[3]]))
    }

    /// The key of row `i` (< [`Table::len`]).
    pub fn key(&self, i: usize) -> [u8; 2] {
        let row = self.row(i);
        [row[0], row[1]]
    }

    /// The country of row `i` of a country table.
    pub fn country(&self, i: usize) -> Country {
        Country::from_edge(&self.key(i))
    }

    /// The weight of row `i` of a variant table.
    pub fn weight(&self, i: usize) -> u32 {
        u32::from(u16::from_le_bytes(self.key(i)))
    }

    /// The URL of row `i` (< [`Table::len`]).
    pub fn url(&self, i: usize) -> &'a [u8] {
        let start = 1 + ROW * self.len() + (0..i).map(|j| self.url_len(j)).sum::<usize>();
        &self.0[start..start + self.url_len(i)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(s: &str) -> Country {
        Country::parse(s).unwrap()
    }

    #[test]
    fn a_country_table_round_trips() {
        let targets = vec![
            (code("NL"), "https://example.nl/".to_string()),
            (code("DE"), "https://example.de/x".to_string()),
        ];
        let mut bytes = country_table(&targets).unwrap();
        assert_eq!(bytes.len(), 1 + 2 * ROW + 19 + 20);
        bytes.extend_from_slice(b"trailing");
        let t = Table::of(&bytes).unwrap();
        assert_eq!(t.size(), 1 + 2 * ROW + 19 + 20);
        assert_eq!(t.len(), 2);
        assert_eq!(
            (t.country(0), t.url(0)),
            (code("NL"), &b"https://example.nl/"[..])
        );
        assert_eq!(
            (t.country(1), t.url(1)),
            (code("DE"), &b"https://example.de/x"[..])
        );
    }

    #[test]
    fn a_variant_table_round_trips_and_refuses_what_does_not_fit() {
        let v = |url: &str, weight| Variant {
            url: url.into(),
            weight,
        };
        let variants = [v("https://a.example/", 1), v("https://b.example/", 65_535)];
        let bytes = variant_table(&variants).unwrap();
        let t = Table::of(&bytes).unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!((t.weight(0), t.url(0)), (1, &b"https://a.example/"[..]));
        assert_eq!(
            (t.weight(1), t.url(1)),
            (65_535, &b"https://b.example/"[..])
        );
        assert!(variant_table(&[v("x", 0)]).is_none());
        assert!(variant_table(&[v("x", 65_536)]).is_none());
        assert!(variant_table(&vec![v("x", 1); MAX_VARIANTS + 1]).is_none());
        assert!(variant_table(&[]).unwrap().is_empty());
    }

    #[test]
    fn empty_and_oversized_tables() {
        assert!(country_table(&[]).unwrap().is_empty());
        assert!(Table::of(&[]).unwrap().is_empty());
        let nl = code("NL");
        let too_many = vec![(nl, String::new()); MAX_COUNTRY_TARGETS + 1];
        assert!(country_table(&too_many).is_none());
        assert!(country_table(&[(nl, "x".repeat(70_000))]).is_none());
    }

    #[test]
    fn a_cut_table_is_refused() {
        let bytes = country_table(&[(code("NL"), "https://example.nl/".into())]).unwrap();
        for cut in 1..bytes.len() {
            assert!(Table::of(&bytes[..cut]).is_none(), "cut at {cut}");
        }
    }

    #[test]
    fn the_readmes_entry_sizes() {
        // README "Link fields": the module's 80-byte header, an 8-byte
        // code and 101-byte URLs; the table adds 1 + 4 n and the URLs.
        let url = "u".repeat(101);
        let countries = |n: usize| {
            let codes = ["NL", "DE", "FR", "BE", "AT", "CH", "IT", "ES"];
            let codes = codes
                .iter()
                .chain(["PL", "SE", "NO", "DK", "FI", "PT", "IE", "GB"].iter());
            let targets: Vec<_> = codes.take(n).map(|c| (code(c), url.clone())).collect();
            country_table(&targets).unwrap().len()
        };
        assert_eq!(80 + 8 + 2 * 101 + countries(2), 501);
        assert_eq!(80 + 8 + 5 * 101 + countries(MAX_COUNTRY_TARGETS), 2274);
        let variants = vec![
            Variant {
                url: url.clone(),
                weight: 1
            };
            MAX_VARIANTS
        ];
        let variants = variant_table(&variants).unwrap().len();
        assert_eq!(2274 + variants, 3115);
    }
}
