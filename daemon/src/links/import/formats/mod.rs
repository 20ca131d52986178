//! The CSV files `shortlinkd import` reads: our own `export` and the
//! exports of Bitly, Shlink, YOURLS and Kutt, each known by its header
//! row. A format names the columns that matter; [`Columns::read`] turns a
//! record into an [`ImportRow`], or says which cell is wrong.
//!
//! One file per format: what that shortener writes and how it maps.

mod bitly;
mod domains;
mod kutt;
mod shlink;
mod shortlink;
mod yourls;

pub use domains::DomainCodes;

use csv::StringRecord;
use time::format_description::well_known::Rfc3339;

use super::row::{ImportExtra, ImportRow};
use crate::links::input::TargetsInput;

/// Which shortener wrote a CSV file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// `shortlinkd export`.
    Shortlink,
    /// Bitly's link export.
    Bitly,
    /// Shlink's short URL export, or the CSV file its importer reads.
    Shlink,
    /// YOURLS's URL table, or the `source,target,hits` of its export
    /// plugin.
    Yourls,
    /// Kutt's links, with the API's field names.
    Kutt,
}

impl Format {
    /// The format a header row belongs to; the foreign ones first, since
    /// YOURLS's header has a `url` column too.
    pub fn detect(headers: &StringRecord) -> Option<Format> {
        let h = Headers::new(headers);
        [
            Format::Shlink,
            Format::Kutt,
            Format::Yourls,
            Format::Bitly,
            Format::Shortlink,
        ]
        .into_iter()
        .find(|f| f.columns_in(&h).is_some())
    }

    /// Where this format's columns are in `headers`; an error names the
    /// columns the format needs when they are missing.
    pub fn columns(self, headers: &StringRecord) -> Result<Columns, String> {
        self.columns_in(&Headers::new(headers)).ok_or_else(|| {
            format!(
                "the header is not a {} export: {}",
                self.name(),
                self.needs()
            )
        })
    }

    fn columns_in(self, h: &Headers) -> Option<Columns> {
        match self {
            Format::Shortlink => shortlink::columns(h),
            Format::Bitly => bitly::columns(h),
            Format::Shlink => shlink::columns(h),
            Format::Yourls => yourls::columns(h),
            Format::Kutt => kutt::columns(h),
        }
    }

    /// The format's name as `--format` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Format::Shortlink => "shortlink",
            Format::Bitly => "bitly",
            Format::Shlink => "shlink",
            Format::Yourls => "yourls",
            Format::Kutt => "kutt",
        }
    }

    /// The columns that make a header this format.
    fn needs(self) -> &'static str {
        match self {
            Format::Shortlink => shortlink::NEEDS,
            Format::Bitly => bitly::NEEDS,
            Format::Shlink => shlink::NEEDS,
            Format::Yourls => yourls::NEEDS,
            Format::Kutt => kutt::NEEDS,
        }
    }
}

/// A header row, its names compared without case, with spaces and
/// hyphens read as underscores (Bitly's "Long URL" is `long_url`).
pub struct Headers {
    names: Vec<String>,
    raw: Vec<String>,
}

impl Headers {
    fn new(record: &StringRecord) -> Self {
        let raw: Vec<String> = record
            .iter()
            .map(|h| h.trim_start_matches('\u{feff}').trim().to_string())
            .collect();
        let names = raw.iter().map(|h| normal(h)).collect();
        Self { names, raw }
    }

    /// The first of `names` present.
    fn col(&self, names: &[&str]) -> Option<Col> {
        names.iter().find_map(|n| {
            let n = normal(n);
            self.names.iter().position(|h| *h == n).map(|index| Col {
                index,
                name: self.raw[index].clone(),
            })
        })
    }
}

fn normal(name: &str) -> String {
    name.trim().to_ascii_lowercase().replace([' ', '-'], "_")
}

/// One column: where it is and what the file calls it.
#[derive(Debug, Clone)]
pub struct Col {
    index: usize,
    name: String,
}

/// How a cell holds the foreign code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CodeCell {
    /// The code itself.
    Plain,
    /// Short URLs (`https://bit.ly/abc`, maybe several, comma-separated
    /// or as a JSON list): the path of the first.
    ShortUrl,
}

/// Where a format keeps what we import, and how to read it.
#[derive(Debug, Clone, Default)]
pub struct Columns {
    url: Option<Col>,
    /// Where the alias (or the foreign code) is, tried in order.
    alias: Vec<(Col, CodeCell)>,
    /// The alias is another shortener's code (see
    /// [`ImportExtra::alias_optional`]).
    foreign: bool,
    created_at: Option<Col>,
    expires_at: Option<Col>,
    tags: Option<Col>,
    /// Characters tags are separated by.
    tag_separators: &'static [char],
    clicks: Option<Col>,
    bot_clicks: Option<Col>,
    code: Option<Col>,
    redirect: Option<Col>,
    max_visits: Option<Col>,
    disabled: Option<Col>,
    /// The link's own `forward_query` (empty: the location decides).
    forward_query: Option<Col>,
    /// `CC=URL` pairs separated by spaces.
    country_targets: Option<Col>,
    /// `true` on a password-protected link of an export: refused, since
    /// exports never carry the password.
    protected: Option<Col>,
    /// `WEIGHT=URL` pairs separated by spaces.
    variants: Option<Col>,
    /// Another shortener's flags that kept a link from redirecting there
    /// (Kutt's `banned` and `password`, Bitly's `archived`), with why: a
    /// row with one set comes in disabled, never as an open redirect.
    switched_off: Vec<(Col, &'static str)>,
    /// The link's own checker choice: `off`, `report`, `fallback` (empty:
    /// the site's).
    check: Option<Col>,
    /// Seconds each visit pushes the expiry out to.
    renew: Option<Col>,
    /// The link's team, by name.
    team: Option<Col>,
    /// Who made the link.
    creator: Option<Col>,
    /// desktop, mobile, ios, android.
    targets: [Option<Col>; 4],
    title: Option<Col>,
    /// Which of the shortener's domains the code lives on (Shlink's).
    domain: Option<Col>,
}

/// A cell that cannot be read: its column and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CellError {
    /// The column as the file names it.
    pub column: String,
    /// What is wrong with the cell.
    pub message: String,
}

impl Columns {
    /// The file's name for the column a field of ours came from (so an
    /// error the daemon finds is named as the file names it).
    pub fn column_for(&self, field: &str) -> Option<&str> {
        let col = match field {
            "url" => self.url.as_ref(),
            // Bitly's code may come from either of two columns.
            "alias" if self.alias.len() == 1 => self.alias.first().map(|(c, _)| c),
            "created_at" => self.created_at.as_ref(),
            "expires_at" => self.expires_at.as_ref(),
            "tags" => self.tags.as_ref(),
            "clicks" => self.clicks.as_ref(),
            "bot_clicks" => self.bot_clicks.as_ref(),
            "code" => self.code.as_ref(),
            "redirect" => self.redirect.as_ref(),
            "max_visits" => self.max_visits.as_ref(),
            "disabled" => self.disabled.as_ref(),
            "forward_query" => self.forward_query.as_ref(),
            "country_targets" => self.country_targets.as_ref(),
            "protected" => self.protected.as_ref(),
            "variants" => self.variants.as_ref(),
            "check" => self.check.as_ref(),
            "title" => self.title.as_ref(),
            "renew_on_access" => self.renew.as_ref(),
            "team" => self.team.as_ref(),
            "creator" => self.creator.as_ref(),
            _ => None,
        }?;
        Some(&col.name)
    }

    /// The domain cell of `record`, when the format has one and it is
    /// not empty.
    pub fn domain<'a>(&self, record: &'a StringRecord) -> Option<&'a str> {
        let c = self.domain.as_ref()?;
        Some(record.get(c.index)?.trim()).filter(|v| !v.is_empty())
    }

    /// The row at `line` of the file.
    pub fn read(&self, line: u64, record: &StringRecord) -> Result<ImportRow, CellError> {
        let Some((_, url)) = cell(record, &self.url) else {
            let name = self
                .url
                .as_ref()
                .map(|c| c.name.clone())
                .unwrap_or_default();
            return Err(error(&name, "the URL is empty".into()));
        };
        let alias = self.alias.iter().find_map(|(c, kind)| {
            let v = record.get(c.index)?.trim();
            match kind {
                CodeCell::Plain => Some(v.to_string()),
                CodeCell::ShortUrl => short_url_code(v),
            }
            .filter(|s| !s.is_empty())
        });
        let time = |c: &Option<Col>| {
            cell(record, c)
                .map(|(c, v)| foreign_time(v).map_err(|m| error(&c.name, m)))
                .transpose()
        };
        let count = |c: &Option<Col>| {
            cell(record, c)
                .map(|(c, v)| {
                    v.replace([',', '_'], "")
                        .parse::<u64>()
                        .map_err(|_| error(&c.name, format!("{v:?} is not a whole number")))
                })
                .transpose()
        };
        let tags = cell(record, &self.tags).map(|(_, v)| {
            v.trim_start_matches('[')
                .trim_end_matches(']')
                .split(self.tag_separators)
                .map(|t| t.trim().trim_matches('"').trim())
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect::<Vec<_>>()
        });
        if let Some((c, p)) = cell(record, &self.protected) {
            if flag(p).ok_or_else(|| error(&c.name, not_a_flag(p)))? {
                return Err(error(
                    &c.name,
                    "the link was password-protected and exports never carry passwords; \
                     import the row without `true` here, then set a password with \
                     `shortlinkd link update CODE --password-file FILE`"
                        .into(),
                ));
            }
        }
        let mut extra = ImportExtra {
            created_at: time(&self.created_at)?.map(|t| t.to_string()),
            clicks: count(&self.clicks)?,
            bot_clicks: count(&self.bot_clicks)?,
            code: cell(record, &self.code).map(|(_, v)| v.to_string()),
            title: cell(record, &self.title).map(|(_, v)| v.to_string()),
            alias_optional: self.foreign,
            ..ImportExtra::default()
        };
        if let Some((c, r)) = cell(record, &self.redirect) {
            extra.redirect = Some(
                r.parse()
                    .map_err(|_| error(&c.name, format!("{r:?} is not a status like 301")))?,
            );
        }
        extra.max_visits = count(&self.max_visits)?;
        if let Some((c, r)) = cell(record, &self.renew) {
            extra.renew_ttl =
                Some(r.parse().map_err(|_| {
                    error(&c.name, format!("{r:?} is not a whole number of seconds"))
                })?);
        }
        extra.team = cell(record, &self.team).map(|(_, v)| v.to_string());
        if let Some((c, v)) = cell(record, &self.creator) {
            // A name, as keys and users have: bounded and printable.
            if v.chars().count() > MAX_CREATOR || v.chars().any(char::is_control) {
                return Err(error(
                    &c.name,
                    format!("a creator is at most {MAX_CREATOR} printable characters"),
                ));
            }
            extra.creator = Some(v.to_string());
        }
        if let Some((c, d)) = cell(record, &self.disabled) {
            extra.disabled = flag(d).ok_or_else(|| error(&c.name, not_a_flag(d)))?;
        }
        for (c, why) in &self.switched_off {
            let Some(v) = record.get(c.index).map(str::trim).filter(|v| !v.is_empty()) else {
                continue;
            };
            // Kutt writes a password's hash, not `true`: any value but a
            // false flag means the link was locked there.
            if flag(v) != Some(false) {
                extra.disabled = true;
                extra.disabled_because = Some(format!("`{}` is set ({why})", c.name));
                break;
            }
        }
        if let Some((c, f)) = cell(record, &self.forward_query) {
            extra.forward_query = Some(flag(f).ok_or_else(|| error(&c.name, not_a_flag(f)))?);
        }
        if let Some((c, t)) = cell(record, &self.country_targets) {
            extra.country_targets = Some(
                crate::links::csv_format::parse_country_targets_cell(t)
                    .map_err(|m| error(&c.name, m))?,
            );
        }
        if let Some((c, m)) = cell(record, &self.check) {
            extra.check = Some(
                shortlink_core::check_mode::CheckMode::parse(m)
                    .map_err(|e| error(&c.name, e.to_string()))?,
            );
        }
        if let Some((c, v)) = cell(record, &self.variants) {
            extra.variants = Some(
                crate::links::csv_format::parse_variants_cell(v).map_err(|m| error(&c.name, m))?,
            );
        }
        let [desktop, mobile, ios, android] = self
            .targets
            .each_ref()
            .map(|c| cell(record, c).map(|(_, v)| v.to_string()));
        if desktop.is_some() || mobile.is_some() || ios.is_some() || android.is_some() {
            extra.targets = Some(TargetsInput {
                desktop,
                mobile,
                ios,
                android,
            });
        }
        // Judged by the daemon like a create's (in the future, in range).
        let expires_at = time(&self.expires_at)?.map(|t| t.to_string());
        Ok(ImportRow(
            line,
            url.to_string(),
            alias,
            expires_at,
            tags.filter(|t| !t.is_empty()),
            extra,
        ))
    }
}

/// Longest creator name an import keeps.
const MAX_CREATOR: usize = 200;

/// A column's cell in `record`, trimmed; `None` when absent or empty.
fn cell<'a>(record: &'a StringRecord, c: &'a Option<Col>) -> Option<(&'a Col, &'a str)> {
    c.as_ref()
        .and_then(|c| record.get(c.index).map(|v| (c, v.trim())))
        .filter(|(_, v)| !v.is_empty())
}

/// A yes/no cell: `true`, `yes`, `1` or `false`, `no`, `0`, in any case.
fn flag(v: &str) -> Option<bool> {
    match v.to_ascii_lowercase().as_str() {
        "true" | "yes" | "1" => Some(true),
        "false" | "no" | "0" => Some(false),
        _ => None,
    }
}

/// What a cell that is no yes/no is told.
fn not_a_flag(v: &str) -> String {
    format!("{v:?} is not true or false")
}

fn error(column: &str, message: String) -> CellError {
    CellError {
        column: column.to_string(),
        message,
    }
}

/// The code of the first short URL in a cell: `https://bit.ly/abc` and
/// `bit.ly/abc` give `abc`; several may be listed.
fn short_url_code(cell: &str) -> Option<String> {
    let first = cell
        .trim_start_matches('[')
        .split([',', ' ', ']'])
        .map(|s| s.trim().trim_matches('"'))
        .find(|s| !s.is_empty())?;
    let path = first
        .split_once("://")
        .map_or(first, |(_, rest)| rest)
        .split(['?', '#'])
        .next()
        .unwrap_or_default();
    let code = path.split_once('/').map(|(_, p)| p.trim_end_matches('/'))?;
    Some(code.to_string())
}

/// A time as other shorteners write it, in Unix seconds: Unix seconds,
/// RFC 3339 (`2024-03-01T10:00:00+01:00`), an offset without a colon
/// (`+0000`, Bitly), or a date and time without a zone, read as UTC
/// (`2024-03-01 10:00:00`, YOURLS).
pub fn foreign_time(s: &str) -> Result<i64, String> {
    let s = s.trim();
    if let Ok(t) = s.parse::<i64>() {
        return Ok(t);
    }
    if let Ok(t) = time::OffsetDateTime::parse(s, &Rfc3339) {
        return Ok(t.unix_timestamp());
    }
    let b = s.as_bytes();
    if b.len() > 5 && matches!(b[b.len() - 5], b'+' | b'-') {
        let (head, zone) = s.split_at(s.len() - 5);
        if zone[1..].bytes().all(|c| c.is_ascii_digit()) {
            let fixed = format!("{head}{}:{}", &zone[..3], &zone[3..]);
            if let Ok(t) = time::OffsetDateTime::parse(&fixed, &Rfc3339) {
                return Ok(t.unix_timestamp());
            }
        }
    }
    let naive = s.replacen('T', " ", 1);
    let naive = naive.split('.').next().unwrap_or_default();
    for layout in [
        "[year]-[month]-[day] [hour]:[minute]:[second]",
        "[year]-[month]-[day] [hour]:[minute]",
    ] {
        let Ok(desc) = time::format_description::parse_borrowed::<2>(layout) else {
            continue;
        };
        if let Ok(t) = time::PrimitiveDateTime::parse(naive, &desc) {
            return Ok(t.assume_utc().unix_timestamp());
        }
    }
    if let Ok(desc) = time::format_description::parse_borrowed::<2>("[year]-[month]-[day]") {
        if let Ok(d) = time::Date::parse(s, &desc) {
            return Ok(d.midnight().assume_utc().unix_timestamp());
        }
    }
    Err(format!(
        "{s:?} is not a time (Unix seconds, RFC 3339 or \"YYYY-MM-DD HH:MM:SS\")"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(cells: &[&str]) -> StringRecord {
        StringRecord::from(cells.to_vec())
    }

    #[test]
    fn a_creator_cell_is_bounded_and_printable() {
        let long = "x".repeat(MAX_CREATOR + 1);
        for bad in [long.as_str(), "a\u{7}b"] {
            let text = format!("url,creator\nhttps://e.com/,\"{bad}\"\n");
            let mut r = crate::links::csv_format::reader(text.as_bytes());
            let header = r.headers().unwrap().clone();
            let cols = Format::detect(&header).unwrap().columns(&header).unwrap();
            let rec = r.records().next().unwrap().unwrap();
            let e = cols.read(2, &rec).unwrap_err();
            assert_eq!(e.column, "creator");
        }
    }

    #[test]
    fn headers_tell_the_formats_apart() {
        let cases: [(&[&str], Option<Format>); 9] = [
            (&["code", "url", "alias", "clicks"], Some(Format::Shortlink)),
            (&["url"], Some(Format::Shortlink)),
            (
                &[
                    "createdAt",
                    "domain",
                    "shortCode",
                    "shortUrl",
                    "longUrl",
                    "title",
                    "tags",
                    "visits",
                ],
                Some(Format::Shlink),
            ),
            (
                &["keyword", "url", "title", "timestamp", "ip", "clicks"],
                Some(Format::Yourls),
            ),
            (
                &["\u{feff}address", "target", "visit_count"],
                Some(Format::Kutt),
            ),
            (
                &["Title", "Long URL", "Bitlink", "Created"],
                Some(Format::Bitly),
            ),
            (
                &["Long URL", "Short code", "Title", "Domain", "Tags"],
                Some(Format::Shlink),
            ),
            (&["source", "target", "hits"], Some(Format::Yourls)),
            (&["name", "target_url"], None),
        ];
        for (h, want) in cases {
            assert_eq!(Format::detect(&record(h)), want, "{h:?}");
        }
        let err = Format::Kutt.columns(&record(&["url"])).unwrap_err();
        assert!(err.contains("address") && err.contains("target"), "{err}");
    }

    #[test]
    fn times_as_other_shorteners_write_them() {
        let t = 1_709_287_200; // 2024-03-01T10:00:00Z
        for s in [
            "1709287200",
            "2024-03-01T10:00:00Z",
            "2024-03-01T11:00:00+01:00",
            "2024-03-01T10:00:00+0000",
            "2024-03-01 10:00:00",
            "2024-03-01T10:00:00.123",
        ] {
            assert_eq!(foreign_time(s), Ok(t), "{s}");
        }
        assert_eq!(foreign_time("2024-03-01"), Ok(t - 36_000));
        assert!(foreign_time("yesterday").unwrap_err().contains("yesterday"));
    }

    #[test]
    fn codes_from_short_urls() {
        assert_eq!(short_url_code("https://bit.ly/abc").as_deref(), Some("abc"));
        assert_eq!(short_url_code("bit.ly/3xYz").as_deref(), Some("3xYz"));
        assert_eq!(
            short_url_code("[\"https://bit.ly/one\", \"https://bit.ly/two\"]").as_deref(),
            Some("one")
        );
        assert_eq!(short_url_code("https://bit.ly/").as_deref(), Some(""));
        assert_eq!(short_url_code("nothing"), None);
    }
}
