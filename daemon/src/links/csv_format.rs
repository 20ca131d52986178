//! The CSV file of link exports: its columns and one link as a record.
//! `shortlinkd export` and the admin UI's download write it; imports read
//! it back (and the other shorteners' files) through
//! [`super::import::formats`], with [`reader`].

use super::input::VariantInput;
use super::view::LinkView;
use crate::timestamp::{format_time, Timestamp};

/// The header of an export, in column order.
pub const HEADER: [&str; 24] = [
    "code",
    "url",
    "alias",
    "expires_at",
    "tags",
    "clicks",
    "bot_clicks",
    "created_at",
    "redirect",
    "max_visits",
    "disabled",
    "target_desktop",
    "target_mobile",
    "target_ios",
    "target_android",
    "forward_query",
    "country_targets",
    "protected",
    "variants",
    "check",
    "title",
    "renew_on_access",
    "team",
    "creator",
];

/// A link's A/B variants as one cell (and as the CLI's `--variant` takes
/// them one by one): `WEIGHT=URL` pairs separated by spaces, in order.
pub fn variants_cell(v: &[VariantInput]) -> String {
    v.iter()
        .map(|v| format!("{}={}", v.weight, v.url))
        .collect::<Vec<_>>()
        .join(" ")
}

/// One `WEIGHT=URL` pair: split at the first `=`; the daemon judges the
/// weight's range and the URL.
pub fn parse_variant(pair: &str) -> Result<VariantInput, String> {
    let shown = || pair.chars().take(80).collect::<String>();
    let Some((weight, url)) = pair.split_once('=').filter(|(_, u)| !u.trim().is_empty()) else {
        return Err(format!(
            "{:?} is not WEIGHT=URL (a whole number, =, and a URL)",
            shown()
        ));
    };
    let weight = weight
        .trim()
        .parse()
        .map_err(|_| format!("{:?}: the weight {weight:?} is not a whole number", shown()))?;
    Ok(VariantInput {
        url: url.trim().to_string(),
        weight,
    })
}

/// A `variants` cell read back.
pub fn parse_variants_cell(cell: &str) -> Result<Vec<VariantInput>, String> {
    cell.split_whitespace().map(parse_variant).collect()
}

/// A link's country targets as one cell (and as the CLI's
/// `--country-target` takes them one by one): `CC=URL` pairs separated by
/// spaces (a stored URL never holds a space).
pub fn country_targets_cell(t: &std::collections::BTreeMap<String, String>) -> String {
    t.iter()
        .map(|(c, u)| format!("{c}={u}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// One `CC=URL` pair: split at the first `=`; the daemon judges the code
/// and the URL.
pub fn parse_country_target(pair: &str) -> Result<(String, String), String> {
    match pair.split_once('=') {
        Some((code, url)) if !code.trim().is_empty() && !url.trim().is_empty() => {
            Ok((code.trim().to_string(), url.trim().to_string()))
        }
        _ => Err(format!(
            "{:?} is not CC=URL (a country code, =, and a URL)",
            pair.chars().take(80).collect::<String>()
        )),
    }
}

/// A `country_targets` cell read back: the pairs, or why not (a code given
/// twice is left to the daemon's check).
pub fn parse_country_targets_cell(
    cell: &str,
) -> Result<std::collections::BTreeMap<String, String>, String> {
    let mut out = std::collections::BTreeMap::new();
    for pair in cell.split_whitespace() {
        let (code, url) = parse_country_target(pair)?;
        if out.insert(code.clone(), url).is_some() {
            return Err(format!("{code} is given twice"));
        }
    }
    Ok(out)
}

/// RFC 3339 of a time, empty when absent or out of range.
fn rfc3339(t: Option<Timestamp>) -> String {
    t.and_then(|t| format_time(t.unix())).unwrap_or_default()
}

/// One link as an export record, in [`HEADER`]'s order; `team` is the
/// name of its team (what an import elsewhere finds it by).
///
/// A protected link's password is never exported (only its hash is stored,
/// and that stays in the database): `protected` says `true`, and an import
/// refuses such a row rather than make the link open to everyone.
pub fn record(l: &LinkView, team: &str) -> [String; HEADER.len()] {
    let opt = |s: &Option<String>| s.clone().unwrap_or_default();
    [
        l.generated_code.clone(),
        l.url.clone(),
        opt(&l.alias),
        rfc3339(l.expires_at),
        l.tags.join(","),
        l.clicks.to_string(),
        l.bot_clicks.to_string(),
        rfc3339(Some(l.created_at)),
        l.redirect.map(|r| r.to_string()).unwrap_or_default(),
        l.max_visits.map(|m| m.to_string()).unwrap_or_default(),
        if l.disabled { "true" } else { "" }.to_string(),
        opt(&l.targets.desktop),
        opt(&l.targets.mobile),
        opt(&l.targets.ios),
        opt(&l.targets.android),
        l.forward_query.map(|f| f.to_string()).unwrap_or_default(),
        country_targets_cell(&l.country_targets),
        if l.protected { "true" } else { "" }.to_string(),
        variants_cell(&l.variants),
        l.check.map(|m| m.as_str().to_string()).unwrap_or_default(),
        opt(&l.title),
        l.renew_ttl.map(|s| s.to_string()).unwrap_or_default(),
        team.to_string(),
        opt(&l.created_by),
    ]
}

/// A CSV reader as imports read: fields trimmed, rows of any length.
pub fn reader<R: std::io::Read>(input: R) -> csv::Reader<R> {
    csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .flexible(true)
        .buffer_capacity(1 << 20)
        .from_reader(input)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::links::import::formats::Format;
    use crate::links::import::ImportRow;
    use crate::links::TargetsInput;

    fn view() -> LinkView {
        LinkView {
            code: "spring".into(),
            short_url: "https://s.test/spring".into(),
            url: "https://example.com/a,b".into(),
            id: 1,
            generated_code: "aZ3kQ9x".into(),
            alias: Some("spring".into()),
            created_at: Timestamp(1_700_000_000),
            updated_at: Timestamp(1_700_000_000),
            expires_at: Some(Timestamp(1_900_000_000)),
            renew_ttl: Some(86_400),
            max_visits: Some(5),
            redirect: Some(301),
            targets: TargetsInput {
                mobile: Some("https://m.example.com/".into()),
                ..TargetsInput::default()
            },
            disabled: true,
            taken_down: false,
            broken: false,
            tags: vec!["x".into(), "y".into()],
            state: "disabled".into(),
            clicks: 7,
            bot_clicks: 1,
            created_by: Some("alice".into()),
            team_id: 1,
            forward_query: Some(false),
            country_targets: [
                ("DE".to_string(), "https://example.de/a=b".to_string()),
                ("FR".to_string(), "https://example.fr/".to_string()),
            ]
            .into(),
            protected: false,
            variants: vec![
                VariantInput {
                    url: "https://example.com/a?x=1".into(),
                    weight: 3,
                },
                VariantInput {
                    url: "https://example.com/b".into(),
                    weight: 1,
                },
            ],
            check: Some(shortlink_core::check_mode::CheckMode::Report),
            title: Some("Spring, at last".into()),
        }
    }

    #[test]
    fn a_protected_link_exports_as_protected_and_its_row_is_refused_on_import() {
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(HEADER).unwrap();
        w.write_record(record(
            &LinkView {
                protected: true,
                ..view()
            },
            "",
        ))
        .unwrap();
        let text = String::from_utf8(w.into_inner().unwrap()).unwrap();
        let mut r = reader(text.as_bytes());
        let header = r.headers().unwrap().clone();
        let cols = Format::detect(&header).unwrap().columns(&header).unwrap();
        let rec = r.records().next().unwrap().unwrap();
        let protected = HEADER.iter().position(|h| *h == "protected").unwrap();
        assert_eq!(rec.get(protected), Some("true"), "{text}");
        let e = cols.read(2, &rec).unwrap_err();
        assert_eq!(e.column, "protected");
        assert!(e.message.contains("password"), "{}", e.message);
    }

    #[test]
    fn a_check_cell_that_is_no_mode_is_refused_naming_its_column() {
        let text = "url,check\nhttps://example.com/,sometimes\n";
        let mut r = reader(text.as_bytes());
        let header = r.headers().unwrap().clone();
        let cols = Format::detect(&header).unwrap().columns(&header).unwrap();
        let rec = r.records().next().unwrap().unwrap();
        let e = cols.read(2, &rec).unwrap_err();
        assert_eq!(e.column, "check");
        assert!(
            e.message.contains("off, report or fallback"),
            "{}",
            e.message
        );
    }

    #[test]
    fn an_exported_link_reads_back_as_the_same_import_row() {
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(HEADER).unwrap();
        w.write_record(record(&view(), "sales")).unwrap();
        let text = String::from_utf8(w.into_inner().unwrap()).unwrap();
        assert_eq!(
            text.lines().nth(1).unwrap(),
            "aZ3kQ9x,\"https://example.com/a,b\",spring,2030-03-17T17:46:40Z,\"x,y\",7,1,\
             2023-11-14T22:13:20Z,301,5,true,,https://m.example.com/,,,false,\
             DE=https://example.de/a=b FR=https://example.fr/,,\
             3=https://example.com/a?x=1 1=https://example.com/b,report,\"Spring, at last\",86400,sales,alice"
        );
        let mut r = reader(text.as_bytes());
        let header = r.headers().unwrap().clone();
        let format = Format::detect(&header).unwrap();
        assert_eq!(format, Format::Shortlink);
        let cols = format.columns(&header).unwrap();
        let rec = r.records().next().unwrap().unwrap();
        let ImportRow(line, url, alias, expires, tags, extra) = cols.read(2, &rec).unwrap();
        assert_eq!(line, 2);
        assert_eq!(url, "https://example.com/a,b");
        assert_eq!(alias.as_deref(), Some("spring"));
        assert_eq!(
            expires.as_deref().map(crate::timestamp::parse_time),
            Some(Ok(1_900_000_000))
        );
        assert_eq!(tags, Some(vec!["x".to_string(), "y".to_string()]));
        assert_eq!(extra.redirect, Some(301));
        assert_eq!(extra.max_visits, Some(5));
        assert!(extra.disabled);
        assert_eq!(extra.forward_query, Some(false));
        assert_eq!(extra.country_targets, Some(view().country_targets));
        assert_eq!(extra.variants, Some(view().variants));
        assert_eq!(extra.check, view().check);
        assert_eq!(extra.title, view().title);
        assert_eq!(extra.renew_ttl, Some(86_400));
        assert_eq!(extra.team.as_deref(), Some("sales"));
        assert_eq!(extra.creator.as_deref(), Some("alice"));
        assert_eq!(
            extra
                .created_at
                .as_deref()
                .map(crate::timestamp::parse_time),
            Some(Ok(1_700_000_000))
        );
        assert_eq!((extra.clicks, extra.bot_clicks), (Some(7), Some(1)));
        assert_eq!(
            extra.targets.unwrap().mobile.as_deref(),
            Some("https://m.example.com/")
        );
    }
}
