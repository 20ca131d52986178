//! The CSV file of link exports and imports: its columns, one link as a
//! record, and a record back as an [`ImportRow`] for [`Links::import`].
//!
//! The admin UI's download and upload use it. It writes the columns
//! `shortlinkd export` writes and reads the ones `shortlinkd import` reads
//! (`cli/export.rs` and `cli/import.rs` still hold their own copy; they
//! should call this one).
//!
//! [`Links::import`]: super::Links::import

use super::import::ImportRow;
use super::input::TargetsInput;
use super::view::LinkView;

/// The header of an export, in column order.
pub const HEADER: [&str; 14] = [
    "code",
    "url",
    "alias",
    "expires_at",
    "tags",
    "clicks",
    "created_at",
    "redirect",
    "max_visits",
    "disabled",
    "target_desktop",
    "target_mobile",
    "target_ios",
    "target_android",
];

/// RFC 3339 of Unix seconds, empty when absent or out of range.
pub fn rfc3339(t: Option<i64>) -> String {
    t.and_then(|t| time::OffsetDateTime::from_unix_timestamp(t).ok())
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_default()
}

/// One link as an export record, in [`HEADER`]'s order.
pub fn record(l: &LinkView) -> [String; 14] {
    let opt = |s: &Option<String>| s.clone().unwrap_or_default();
    [
        l.generated_code.clone(),
        l.url.clone(),
        opt(&l.alias),
        rfc3339(l.expires_at),
        l.tags.join(","),
        l.clicks.to_string(),
        rfc3339(Some(l.created_at)),
        l.redirect.map(|r| r.to_string()).unwrap_or_default(),
        l.max_visits.map(|m| m.to_string()).unwrap_or_default(),
        if l.disabled { "true" } else { "" }.to_string(),
        opt(&l.targets.desktop),
        opt(&l.targets.mobile),
        opt(&l.targets.ios),
        opt(&l.targets.android),
    ]
}

/// A CSV reader as imports read: fields trimmed, rows of any length.
pub fn reader<R: std::io::Read>(input: R) -> csv::Reader<R> {
    csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .flexible(true)
        .from_reader(input)
}

/// Where an import file's columns are, found by their header names
/// (case-insensitive; `code` and `clicks` are made by the store and not
/// read).
#[derive(Debug, Clone)]
pub struct Columns {
    url: usize,
    alias: Option<usize>,
    expires_at: Option<usize>,
    tags: Option<usize>,
    redirect: Option<usize>,
    max_visits: Option<usize>,
    disabled: Option<usize>,
    created_at: Option<usize>,
    /// desktop, mobile, ios, android.
    targets: [Option<usize>; 4],
}

impl Columns {
    /// The columns of a file with this header; it must have `url`.
    pub fn from_header(header: &csv::StringRecord) -> Result<Self, String> {
        let col = |names: &[&str]| {
            header
                .iter()
                .position(|h| names.iter().any(|n| h.eq_ignore_ascii_case(n)))
        };
        let url = col(&["url"]).ok_or("the header has no `url` column")?;
        Ok(Self {
            url,
            alias: col(&["alias"]),
            expires_at: col(&["expires_at", "expiry", "expires"]),
            tags: col(&["tags", "tag"]),
            redirect: col(&["redirect"]),
            max_visits: col(&["max_visits"]),
            disabled: col(&["disabled"]),
            created_at: col(&["created_at"]),
            targets: [
                col(&["target_desktop"]),
                col(&["target_mobile"]),
                col(&["target_ios"]),
                col(&["target_android"]),
            ],
        })
    }

    /// The import row of `record` (at `line` of the file), or what is wrong
    /// with it, naming the column.
    pub fn row(&self, record: &csv::StringRecord, line: u64) -> Result<ImportRow, String> {
        let field = |c: Option<usize>| c.and_then(|c| record.get(c)).filter(|s| !s.is_empty());
        let url = field(Some(self.url)).ok_or("url is empty")?;
        let tags = field(self.tags).map(|t| {
            t.split([',', ';', '|'])
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect()
        });
        let mut row = ImportRow(
            line,
            url.to_string(),
            field(self.alias).map(str::to_string),
            field(self.expires_at).map(str::to_string),
            tags,
            Default::default(),
        );
        let extra = &mut row.5;
        if let Some(r) = field(self.redirect) {
            extra.redirect = Some(
                r.parse()
                    .map_err(|_| format!("redirect: {r:?} is not a status like 301"))?,
            );
        }
        if let Some(m) = field(self.max_visits) {
            extra.max_visits = Some(
                m.parse()
                    .map_err(|_| format!("max_visits: {m:?} is not a whole number"))?,
            );
        }
        if let Some(d) = field(self.disabled) {
            extra.disabled = match d.to_ascii_lowercase().as_str() {
                "true" | "yes" | "1" => true,
                "false" | "no" | "0" => false,
                _ => return Err(format!("disabled: {d:?} is not true or false")),
            };
        }
        extra.created_at = field(self.created_at).map(str::to_string);
        let [desktop, mobile, ios, android] = self.targets.map(|c| field(c).map(str::to_string));
        if desktop.is_some() || mobile.is_some() || ios.is_some() || android.is_some() {
            extra.targets = Some(TargetsInput {
                desktop,
                mobile,
                ios,
                android,
            });
        }
        Ok(row)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view() -> LinkView {
        LinkView {
            code: "spring".into(),
            short_url: "https://s.test/spring".into(),
            url: "https://example.com/a,b".into(),
            id: 1,
            generated_code: "aZ3kQ9x".into(),
            alias: Some("spring".into()),
            created_at: 1_700_000_000,
            updated_at: 1_700_000_000,
            expires_at: Some(1_900_000_000),
            renew_ttl: None,
            max_visits: Some(5),
            redirect: Some(301),
            targets: TargetsInput {
                mobile: Some("https://m.example.com/".into()),
                ..TargetsInput::default()
            },
            disabled: true,
            tags: vec!["x".into(), "y".into()],
            state: "disabled".into(),
            clicks: 7,
            bot_clicks: 1,
            created_by: Some("key:1".into()),
        }
    }

    #[test]
    fn an_exported_link_reads_back_as_the_same_import_row() {
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(HEADER).unwrap();
        w.write_record(record(&view())).unwrap();
        let text = String::from_utf8(w.into_inner().unwrap()).unwrap();
        assert_eq!(
            text.lines().nth(1).unwrap(),
            "aZ3kQ9x,\"https://example.com/a,b\",spring,2030-03-17T17:46:40Z,\"x,y\",7,\
             2023-11-14T22:13:20Z,301,5,true,,https://m.example.com/,,"
        );
        let mut r = reader(text.as_bytes());
        let cols = Columns::from_header(r.headers().unwrap()).unwrap();
        let rec = r.records().next().unwrap().unwrap();
        let ImportRow(line, url, alias, expires, tags, extra) = cols.row(&rec, 2).unwrap();
        assert_eq!(line, 2);
        assert_eq!(url, "https://example.com/a,b");
        assert_eq!(alias.as_deref(), Some("spring"));
        assert_eq!(expires.as_deref(), Some("2030-03-17T17:46:40Z"));
        assert_eq!(tags, Some(vec!["x".to_string(), "y".to_string()]));
        assert_eq!(extra.redirect, Some(301));
        assert_eq!(extra.max_visits, Some(5));
        assert!(extra.disabled);
        assert_eq!(extra.created_at.as_deref(), Some("2023-11-14T22:13:20Z"));
        assert_eq!(
            extra.targets.unwrap().mobile.as_deref(),
            Some("https://m.example.com/")
        );
    }

    #[test]
    fn bad_cells_and_headers_are_named() {
        let header = csv::StringRecord::from(vec!["URL", "Redirect", "disabled"]);
        let cols = Columns::from_header(&header).unwrap();
        let rec = |cells: Vec<&str>| csv::StringRecord::from(cells);
        assert_eq!(
            cols.row(&rec(vec!["https://e.com/", "3o1", ""]), 2)
                .unwrap_err(),
            "redirect: \"3o1\" is not a status like 301"
        );
        assert_eq!(
            cols.row(&rec(vec!["https://e.com/", "", "maybe"]), 3)
                .unwrap_err(),
            "disabled: \"maybe\" is not true or false"
        );
        assert_eq!(cols.row(&rec(vec![""]), 4).unwrap_err(), "url is empty");
        let short = cols.row(&rec(vec!["https://e.com/"]), 5).unwrap();
        assert_eq!(short.1, "https://e.com/", "a short row is fine");
        let none = csv::StringRecord::from(vec!["link", "alias"]);
        assert_eq!(
            Columns::from_header(&none).unwrap_err(),
            "the header has no `url` column"
        );
    }
}
