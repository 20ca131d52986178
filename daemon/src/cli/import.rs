//! `import`: links from a CSV file (ours, or Bitly's, Shlink's, YOURLS's
//! or Kutt's export, known by the header), in chunks of one transaction
//! each, with a progress bar on a terminal; refused rows and rows imported
//! with a change are reported by line.

use std::collections::VecDeque;
use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{anyhow, Context, Result};

use super::client::Client;
use super::output::Output;
use crate::links::import::formats::{Columns, DomainCodes, Format};
use crate::links::{ImportOutcome, ImportRow};

/// Rows sent per import call: one transaction each in the daemon.
const IMPORT_CHUNK: usize = 20_000;
/// Import calls in flight: the next chunk is read and sent while the daemon
/// stores the previous one.
const IMPORT_IN_FLIGHT: usize = 2;

type ImportCall = tokio::task::JoinHandle<Result<ImportOutcome>>;

/// What an import did, in total.
#[derive(Debug, Default, serde::Serialize)]
struct Totals {
    /// The format read.
    format: &'static str,
    /// New links.
    imported: usize,
    /// Rows already stored, skipped.
    present: usize,
    /// Rows refused.
    bad: usize,
    /// Links imported without their foreign code (not a valid alias here,
    /// or taken).
    without_code: usize,
    /// Links imported under a new generated code (theirs taken here).
    new_code: usize,
    /// Links the file marked banned, locked or archived: imported
    /// switched off.
    disabled: usize,
    /// Links whose old code or alias keeps working in another form (an
    /// alias for another deployment's code, a code for a code-shaped
    /// alias).
    kept_otherwise: usize,
    /// Links whose team the file names but this deployment lacks:
    /// imported into the importer's team.
    no_such_team: usize,
    /// Rows whose code another row holds on another of the shortener's
    /// domains: sent under a derived alias (`code-domain`).
    derived_alias: usize,
}

/// A progress bar on stderr when it is a terminal, else none.
fn progress_bar(size: u64, terminal: bool) -> indicatif::ProgressBar {
    if !terminal {
        return indicatif::ProgressBar::hidden();
    }
    // Stdin has no size: a spinner with the bytes read.
    let (bar, template) = if size == 0 {
        (
            indicatif::ProgressBar::new_spinner(),
            "{spinner} {bytes} {msg}",
        )
    } else {
        (
            indicatif::ProgressBar::new(size),
            "{bar:40} {bytes}/{total_bytes} {msg}",
        )
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template(template)
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar
}

/// Imports `file` (stdin when it is `-`) in `format`, or the format its
/// header shows; exit status 2 when any row was refused.
pub async fn import(
    client: &Client,
    file: &Path,
    format: Option<Format>,
    out: &mut Output,
) -> Result<ExitCode> {
    let (f, size): (Box<dyn std::io::Read>, u64) = if file == Path::new("-") {
        (Box::new(std::io::stdin()), 0)
    } else {
        let f =
            std::fs::File::open(file).with_context(|| format!("cannot open {}", file.display()))?;
        let size = f.metadata().map(|m| m.len()).unwrap_or(0);
        (Box::new(f), size)
    };
    let mut reader = crate::links::csv_format::reader(f);
    let headers = reader.headers()?.clone();
    let format = match format {
        Some(f) => f,
        None => Format::detect(&headers).ok_or_else(|| {
            anyhow!(
                "{}: the header names no known format (a `url` column for ours; \
                 see `--format`)",
                file.display()
            )
        })?,
    };
    let columns = format
        .columns(&headers)
        .map_err(|e| anyhow!("{}: {e}", file.display()))?;

    let bar = progress_bar(size, std::io::stderr().is_terminal());
    let mut totals = Totals {
        format: format.name(),
        ..Totals::default()
    };
    let mut chunk: Vec<ImportRow> = Vec::with_capacity(IMPORT_CHUNK);
    let mut in_flight: VecDeque<ImportCall> = VecDeque::new();
    let mut record = csv::StringRecord::new();
    let mut domains = DomainCodes::default();
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
            match columns.read(line, &record) {
                Ok(mut row) => {
                    if let Some(n) = domains.place(&columns, &record, &mut row) {
                        bar.suspend(|| eprintln!("line {line}: domain: {}", n.message));
                        totals.derived_alias += 1;
                    }
                    chunk.push(row)
                }
                Err(e) => {
                    bar.suspend(|| eprintln!("line {line}: {}: {}", e.column, e.message));
                    totals.bad += 1;
                    continue;
                }
            }
            if chunk.len() & 1023 == 0 {
                bar.set_position(record.position().map(|p| p.byte()).unwrap_or(0));
            }
        }
        if chunk.len() >= IMPORT_CHUNK || (!more && !chunk.is_empty()) {
            let rows = std::mem::replace(&mut chunk, Vec::with_capacity(IMPORT_CHUNK));
            if in_flight.len() >= IMPORT_IN_FLIGHT {
                let oldest = in_flight.pop_front().expect("one in flight");
                finish_import(oldest, &columns, &bar, &mut totals).await?;
            }
            in_flight.push_back(client.import(rows));
        }
        if !more {
            break;
        }
    }
    while let Some(call) = in_flight.pop_front() {
        finish_import(call, &columns, &bar, &mut totals).await?;
    }
    bar.finish_and_clear();
    if out.json {
        out.print_json(&totals)?;
    } else {
        let mut changed = String::new();
        if totals.without_code > 0 {
            changed += &format!(", {} without their code", totals.without_code);
        }
        if totals.kept_otherwise > 0 {
            changed += &format!(
                ", {} keep their old short URL as an alias or code",
                totals.kept_otherwise
            );
        }
        if totals.no_such_team > 0 {
            changed += &format!(
                ", {} in your team (theirs is not here)",
                totals.no_such_team
            );
        }
        if totals.new_code > 0 {
            changed += &format!(", {} under a new code", totals.new_code);
        }
        if totals.disabled > 0 {
            changed += &format!(", {} imported disabled", totals.disabled);
        }
        if totals.derived_alias > 0 {
            changed += &format!(
                ", {} under a derived alias (code-domain)",
                totals.derived_alias
            );
        }
        eprintln!(
            "{} imported, {} already present, {} bad rows{changed} ({} format)",
            totals.imported, totals.present, totals.bad, totals.format
        );
    }
    Ok(if totals.bad == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    })
}

/// Waits for one import call and reports its refused rows and its rows
/// imported with a change, by line and by the file's column name.
async fn finish_import(
    call: ImportCall,
    columns: &Columns,
    bar: &indicatif::ProgressBar,
    totals: &mut Totals,
) -> Result<()> {
    let outcome = call.await.context("import call")??;
    totals.imported += outcome.imported;
    totals.present += outcome.present;
    totals.bad += outcome.errors.len();
    for n in &outcome.notes {
        match n.field.as_deref() {
            Some("code") => totals.new_code += 1,
            Some("disabled") => totals.disabled += 1,
            Some("kept") => totals.kept_otherwise += 1,
            Some("team") => totals.no_such_team += 1,
            _ => totals.without_code += 1,
        }
    }
    for e in outcome.errors.iter().chain(&outcome.notes) {
        let line = match e.field.as_deref() {
            Some(field) => {
                // The message may name our field already.
                let message = e
                    .message
                    .strip_prefix(&format!("{field}: "))
                    .unwrap_or(&e.message);
                let column = columns.column_for(field).unwrap_or(field);
                format!("line {}: {column}: {message}", e.line)
            }
            None => format!("line {}: {}", e.line, e.message),
        };
        bar.suspend(|| eprintln!("{line}"));
    }
    bar.set_message(format!(
        "{} imported, {} present, {} bad",
        totals.imported, totals.present, totals.bad
    ));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bar_only_on_a_terminal() {
        assert!(progress_bar(100, false).is_hidden());
        // On a terminal it draws (stderr of a test is not one, so only
        // the choice is checked here).
        let bar = progress_bar(100, true);
        assert_eq!(bar.length(), Some(100));
    }
}
