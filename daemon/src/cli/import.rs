//! `import`: links from a CSV file, in chunks of one transaction each,
//! with a progress bar; refused rows are reported by line. Reads the
//! columns `export` writes (all but `code` and `clicks`, which the store
//! makes itself).

use std::collections::VecDeque;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{anyhow, Context, Result};

use super::client::Client;
use super::output::Output;
use crate::links::{ImportOutcome, ImportRow, TargetsInput};

/// Rows sent per import call: one transaction each in the daemon.
const IMPORT_CHUNK: usize = 20_000;
/// Import calls in flight: the next chunk is read and sent while the daemon
/// stores the previous one.
const IMPORT_IN_FLIGHT: usize = 2;

type ImportCall = tokio::task::JoinHandle<Result<ImportOutcome>>;

/// What an import did, in total.
#[derive(Debug, Default, serde::Serialize)]
struct Totals {
    /// New links.
    imported: usize,
    /// Rows equal to a link already stored, skipped.
    present: usize,
    /// Rows refused.
    bad: usize,
}

/// Imports `file` (stdin when it is `-`); exit status 2 when any row was
/// refused.
pub async fn import(client: &Client, file: &Path, out: &mut Output) -> Result<ExitCode> {
    let (f, size): (Box<dyn std::io::Read>, u64) = if file == Path::new("-") {
        (Box::new(std::io::stdin()), 0)
    } else {
        let f =
            std::fs::File::open(file).with_context(|| format!("cannot open {}", file.display()))?;
        let size = f.metadata().map(|m| m.len()).unwrap_or(0);
        (Box::new(f), size)
    };
    let mut reader = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .flexible(true)
        .buffer_capacity(1 << 20)
        .from_reader(f);
    let headers = reader.headers()?.clone();
    let col = |names: &[&str]| {
        headers
            .iter()
            .position(|h| names.iter().any(|n| h.eq_ignore_ascii_case(n)))
    };
    let url_col = col(&["url"])
        .ok_or_else(|| anyhow!("{}: the header has no `url` column", file.display()))?;
    let alias_col = col(&["alias"]);
    let expiry_col = col(&["expires_at", "expiry", "expires"]);
    let tags_col = col(&["tags", "tag"]);
    let extra = ExtraColumns {
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
    };

    let bar = indicatif::ProgressBar::new(size);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:40} {bytes}/{total_bytes} {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let mut totals = Totals::default();
    let mut chunk: Vec<ImportRow> = Vec::with_capacity(IMPORT_CHUNK);
    let mut in_flight: VecDeque<ImportCall> = VecDeque::new();
    let mut record = csv::StringRecord::new();
    loop {
        let more = match reader.read_record(&mut record) {
            Ok(more) => more,
            Err(e) => {
                let line = e.position().map(|p| p.line()).unwrap_or(0);
                bar.suspend(|| eprintln!("line {line}: {e}"));
                totals.bad += 1;
                if matches!(e.kind(), csv::ErrorKind::Io(_)) {
                    break;
                }
                continue;
            }
        };
        if more {
            let line = record.position().map(|p| p.line()).unwrap_or(0);
            let field = |c: Option<usize>| c.and_then(|c| record.get(c)).filter(|s| !s.is_empty());
            let Some(url) = field(Some(url_col)) else {
                bar.suspend(|| eprintln!("line {line}: url is empty"));
                totals.bad += 1;
                continue;
            };
            let tags = field(tags_col).map(|t| {
                t.split([',', ';', '|'])
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect()
            });
            let mut row = ImportRow(
                line,
                url.to_string(),
                field(alias_col).map(str::to_string),
                field(expiry_col).map(str::to_string),
                tags,
                Default::default(),
            );
            if let Err(e) = extra.read(&record, &mut row) {
                bar.suspend(|| eprintln!("line {line}: {e}"));
                totals.bad += 1;
                continue;
            }
            chunk.push(row);
            if chunk.len() & 1023 == 0 {
                bar.set_position(record.position().map(|p| p.byte()).unwrap_or(0));
            }
        }
        if chunk.len() >= IMPORT_CHUNK || (!more && !chunk.is_empty()) {
            let rows = std::mem::replace(&mut chunk, Vec::with_capacity(IMPORT_CHUNK));
            if in_flight.len() >= IMPORT_IN_FLIGHT {
                let oldest = in_flight.pop_front().expect("one in flight");
                finish_import(oldest, &bar, &mut totals).await?;
            }
            in_flight.push_back(client.import(rows));
        }
        if !more {
            break;
        }
    }
    while let Some(call) = in_flight.pop_front() {
        finish_import(call, &bar, &mut totals).await?;
    }
    bar.finish_and_clear();
    if out.json {
        out.print_json(&totals)?;
    } else {
        eprintln!(
            "{} imported, {} already present, {} bad rows",
            totals.imported, totals.present, totals.bad
        );
    }
    Ok(if totals.bad == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    })
}

/// Where the columns of an `export` file beyond the basic four are.
struct ExtraColumns {
    redirect: Option<usize>,
    max_visits: Option<usize>,
    disabled: Option<usize>,
    created_at: Option<usize>,
    /// desktop, mobile, ios, android.
    targets: [Option<usize>; 4],
}

impl ExtraColumns {
    /// Fills the extra part of `row` from `record`; a cell that is not a
    /// number (or a yes/no) where one is needed is an error naming it.
    fn read(&self, record: &csv::StringRecord, row: &mut ImportRow) -> Result<()> {
        let field = |c: Option<usize>| c.and_then(|c| record.get(c)).filter(|s| !s.is_empty());
        let extra = &mut row.5;
        if let Some(r) = field(self.redirect) {
            extra.redirect = Some(
                r.parse()
                    .map_err(|_| anyhow!("redirect: {r:?} is not a status like 301"))?,
            );
        }
        if let Some(m) = field(self.max_visits) {
            extra.max_visits = Some(
                m.parse()
                    .map_err(|_| anyhow!("max_visits: {m:?} is not a whole number"))?,
            );
        }
        if let Some(d) = field(self.disabled) {
            extra.disabled = match d.to_ascii_lowercase().as_str() {
                "true" | "yes" | "1" => true,
                "false" | "no" | "0" => false,
                _ => return Err(anyhow!("disabled: {d:?} is not true or false")),
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
        Ok(())
    }
}

/// Waits for one import call and reports its refused rows by line.
async fn finish_import(
    call: ImportCall,
    bar: &indicatif::ProgressBar,
    totals: &mut Totals,
) -> Result<()> {
    let outcome = call.await.context("import call")??;
    totals.imported += outcome.imported;
    totals.present += outcome.present;
    totals.bad += outcome.errors.len();
    for e in &outcome.errors {
        let field = e
            .field
            .as_deref()
            .map(|f| format!("{f}: "))
            .unwrap_or_default();
        bar.suspend(|| eprintln!("line {}: {field}{}", e.line, e.message));
    }
    bar.set_message(format!(
        "{} imported, {} present, {} bad",
        totals.imported, totals.present, totals.bad
    ));
    Ok(())
}
