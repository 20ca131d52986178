//! Rows for the list commands: columns aligned with spaces on a terminal,
//! tab-separated otherwise (what scripts that split on tabs have read).

use crate::timestamp::Timestamp;
use std::io::Write;

/// A table of text cells under a header row.
pub struct Table {
    header: Vec<&'static str>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// An empty table with these column names.
    pub fn new(header: &[&'static str]) -> Self {
        Self {
            header: header.to_vec(),
            rows: Vec::new(),
        }
    }

    /// Adds a row (one cell per column).
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// Writes the header and the rows: aligned when `aligned`, else with
    /// tabs between cells.
    pub fn write(&self, out: &mut impl Write, aligned: bool) -> std::io::Result<()> {
        let header: Vec<String> = self.header.iter().map(|h| h.to_string()).collect();
        let lines = std::iter::once(&header).chain(&self.rows);
        if !aligned {
            for cells in lines {
                writeln!(out, "{}", cells.join("\t"))?;
            }
            return Ok(());
        }
        let mut widths = vec![0usize; self.header.len()];
        for cells in std::iter::once(&header).chain(&self.rows) {
            for (w, c) in widths.iter_mut().zip(cells) {
                *w = (*w).max(c.chars().count());
            }
        }
        for cells in lines {
            let last = cells.len().saturating_sub(1);
            let mut line = String::new();
            for (i, (c, w)) in cells.iter().zip(&widths).enumerate() {
                line.push_str(c);
                if i < last {
                    let pad = w - c.chars().count() + 2;
                    line.extend(std::iter::repeat_n(' ', pad));
                }
            }
            writeln!(out, "{}", line.trim_end())?;
        }
        Ok(())
    }
}

/// Unix seconds as `YYYY-MM-DD HH:MM` UTC; `-` when absent.
pub fn when(t: Option<Timestamp>) -> String {
    let Some(dt) = t.and_then(|t| time::OffsetDateTime::from_unix_timestamp(t.unix()).ok()) else {
        return "-".into();
    };
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}",
        dt.year(),
        u8::from(dt.month()),
        dt.day(),
        dt.hour(),
        dt.minute()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(t: &Table, aligned: bool) -> String {
        let mut out = Vec::new();
        t.write(&mut out, aligned).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn aligned_pads_every_column_but_the_last() {
        let mut t = Table::new(&["CODE", "URL"]);
        t.row(vec!["abcdefg".into(), "https://e.com".into()]);
        t.row(vec!["x".into(), "https://é.com".into()]);
        assert_eq!(
            render(&t, true),
            "CODE     URL\nabcdefg  https://e.com\nx        https://é.com\n"
        );
        t.row(vec!["y".into(), String::new()]);
        assert!(render(&t, true).ends_with("\ny\n"), "no trailing spaces");
        assert_eq!(
            render(&t, false),
            "CODE\tURL\nabcdefg\thttps://e.com\nx\thttps://é.com\ny\t\n"
        );
    }

    #[test]
    fn times_are_utc_minutes() {
        assert_eq!(when(Some(Timestamp(4070908800))), "2099-01-01 00:00");
        assert_eq!(when(None), "-");
    }
}
