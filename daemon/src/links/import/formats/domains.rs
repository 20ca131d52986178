//! One code on several domains: Shlink keeps a short code per domain, so
//! `launch` may be a link on `s.example.com` and another on
//! `go.example.net`, while here an alias names one link whatever the
//! host. The first row with a code keeps it; a later row with the same
//! code on another domain comes in under a derived alias, the code and
//! the domain joined by `-` (`launch-go-example-net`), and a note says
//! so. Rows are never refused for it.

use std::collections::HashMap;

use super::Columns;
use crate::links::{ImportError, ImportRow};

/// The domain Shlink writes for its default one (or leaves empty).
const DEFAULT_DOMAIN: &str = "DEFAULT";

/// The domain each code of a file was first seen on.
#[derive(Debug, Default)]
pub struct DomainCodes {
    first: HashMap<String, String>,
}

impl DomainCodes {
    /// Gives `row` (read from `record` by `columns`) a derived alias when
    /// its code was seen before on another domain; the note to report
    /// when it did.
    pub fn place(
        &mut self,
        columns: &Columns,
        record: &csv::StringRecord,
        row: &mut ImportRow,
    ) -> Option<ImportError> {
        let code = row.2.as_deref()?;
        // Formats without a domain column have one domain.
        columns.domain.as_ref()?;
        let domain = match columns.domain(record) {
            Some(d) if !d.eq_ignore_ascii_case(DEFAULT_DOMAIN) => d.to_ascii_lowercase(),
            _ => String::new(),
        };
        let first = self
            .first
            .entry(code.to_string())
            .or_insert_with(|| domain.clone());
        if *first == domain {
            return None;
        }
        let derived = derived_alias(code, &domain);
        let shown = if domain.is_empty() {
            "the default domain"
        } else {
            &domain
        };
        let message = format!(
            "\"{code}\" is on {} too; the row for {shown} is imported as \"{derived}\"",
            if first.is_empty() {
                "the default domain"
            } else {
                first.as_str()
            }
        );
        row.2 = Some(derived);
        Some(ImportError {
            line: row.0,
            field: Some("domain".into()),
            message,
        })
    }
}

/// `code-domain`, the domain's dots and other characters an alias cannot
/// hold written as `-` (`default` for Shlink's default domain).
fn derived_alias(code: &str, domain: &str) -> String {
    let domain = if domain.is_empty() { "default" } else { domain };
    let mut out = format!("{code}-");
    for c in domain.chars() {
        let c = if c.is_ascii_alphanumeric() || c == '_' {
            c
        } else {
            '-'
        };
        if !(c == '-' && out.ends_with('-')) {
            out.push(c);
        }
    }
    out.trim_end_matches('-').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::links::import::formats::Format;

    fn rows(text: &str) -> Vec<(ImportRow, Option<ImportError>)> {
        let mut r = crate::links::csv_format::reader(text.as_bytes());
        let header = r.headers().unwrap().clone();
        let cols = Format::detect(&header).unwrap().columns(&header).unwrap();
        let mut codes = DomainCodes::default();
        r.records()
            .enumerate()
            .map(|(i, rec)| {
                let rec = rec.unwrap();
                let mut row = cols.read(i as u64 + 2, &rec).unwrap();
                let note = codes.place(&cols, &rec, &mut row);
                (row, note)
            })
            .collect()
    }

    #[test]
    fn the_same_code_on_another_domain_gets_a_derived_alias() {
        let got = rows(
            "Long URL,Short code,Title,Domain,Tags\n\
             https://a.example/,launch,A,s.example.com,\n\
             https://b.example/,launch,B,go.example.net,\n\
             https://c.example/,launch,C,DEFAULT,\n\
             https://d.example/,launch,D,S.Example.com,\n\
             https://e.example/,other,E,,\n",
        );
        let aliases: Vec<_> = got.iter().map(|(r, _)| r.2.clone().unwrap()).collect();
        assert_eq!(
            aliases,
            [
                "launch",
                "launch-go-example-net",
                "launch-default",
                "launch",
                "other"
            ]
        );
        let note = got[1].1.as_ref().unwrap();
        assert_eq!((note.line, note.field.as_deref()), (3, Some("domain")));
        assert!(
            note.message.contains("\"launch\" is on s.example.com too")
                && note.message.contains("\"launch-go-example-net\""),
            "{}",
            note.message
        );
        assert!(got[0].1.is_none() && got[3].1.is_none() && got[4].1.is_none());
    }

    #[test]
    fn formats_without_domains_are_left_alone() {
        let got = rows("keyword,url\nx,https://a.example/\nx,https://b.example/\n");
        assert!(got
            .iter()
            .all(|(r, n)| r.2.as_deref() == Some("x") && n.is_none()));
    }
}
