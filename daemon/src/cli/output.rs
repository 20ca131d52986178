//! Where a command's results go: stdout, as text (tables aligned on a
//! terminal) or, with `--json`, as one JSON document.

use std::io::{IsTerminal, Write};

use anyhow::Result;
use serde::Serialize;

use super::table::Table;

/// A command's stdout and how to write on it.
pub struct Output {
    /// `--json`: one JSON document instead of text.
    pub json: bool,
    /// Tables aligned with spaces (stdout is a terminal) rather than tabs.
    pub aligned: bool,
    out: Box<dyn Write>,
}

impl Output {
    /// Stdout; tables aligned when it is a terminal.
    pub fn stdout(json: bool) -> Self {
        let stdout = std::io::stdout();
        Self {
            json,
            aligned: stdout.is_terminal(),
            out: Box::new(stdout.lock()),
        }
    }

    /// Pretty JSON (keys sorted) and a newline.
    pub fn print_json(&mut self, value: &impl Serialize) -> Result<()> {
        let sorted = serde_json::to_value(value)?;
        writeln!(self.out, "{}", serde_json::to_string_pretty(&sorted)?)?;
        Ok(())
    }

    /// A table, aligned or tab-separated.
    pub fn table(&mut self, t: &Table) -> Result<()> {
        t.write(&mut self.out, self.aligned)?;
        Ok(())
    }
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.out.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}
