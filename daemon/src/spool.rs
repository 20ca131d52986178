//! Import of click spool files: batches nginx workers could not deliver
//! before exiting, written as `*.spool` (frames of one `ClickBatch` each).
//!
//! A file is counted (each batch once, by batch id), then deleted. A file
//! that does not parse to the end keeps its good leading batches and is
//! renamed to `*.bad` with the reason logged.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use shortlink_core::ipc::{self, ClickBatch};

use crate::app::App;
use crate::stats;
use crate::store::StoreError;

/// Why a spool scan failed as a whole.
#[derive(Debug, thiserror::Error)]
pub enum SpoolError {
    /// The directory could not be read.
    #[error("cannot read spool directory {path}: {source}")]
    Dir {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// Batches could not be stored; the file stays for the next scan.
    #[error("cannot store spooled clicks from {path}: {source}")]
    Store {
        path: String,
        #[source]
        source: StoreError,
    },
}

/// What one scan did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SpoolReport {
    /// Files imported and deleted.
    pub files: usize,
    /// Files renamed to `*.bad`.
    pub bad_files: usize,
    /// Batches read (duplicates included).
    pub batches: usize,
}

/// Splits a spool file into its batches; `Err` carries the good batches
/// before the damage and the reason.
pub fn parse(bytes: &[u8]) -> Result<Vec<ClickBatch>, (Vec<ClickBatch>, String)> {
    let mut at = 0;
    let mut batches = Vec::new();
    while at < bytes.len() {
        match ipc::read_frame::<ClickBatch>(&bytes[at..]) {
            Ok(Some((batch, used))) => {
                batches.push(batch);
                at += used;
            }
            Ok(None) => {
                return Err((
                    batches,
                    format!("truncated frame at byte {at} of {}", bytes.len()),
                ))
            }
            Err(e) => return Err((batches, format!("{e} at byte {at}"))),
        }
    }
    Ok(batches)
}

/// Imports every `*.spool` file in `dir`.
pub async fn import_dir(app: &App, dir: &Path) -> Result<SpoolReport, SpoolError> {
    let mut report = SpoolReport::default();
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(report),
        Err(source) => {
            return Err(SpoolError::Dir {
                path: dir.display().to_string(),
                source,
            })
        }
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "spool") && p.is_file())
        .collect();
    files.sort();
    for path in files {
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) => {
                tracing::warn!(file = %path.display(), error = %e, "cannot read spool file");
                continue;
            }
        };
        let (batches, damage) = match parse(&bytes) {
            Ok(b) => (b, None),
            Err((b, reason)) => (b, Some(reason)),
        };
        report.batches += batches.len();
        stats::ingest(app, batches)
            .await
            .map_err(|source| SpoolError::Store {
                path: path.display().to_string(),
                source,
            })?;
        match damage {
            None => {
                if let Err(e) = std::fs::remove_file(&path) {
                    tracing::warn!(file = %path.display(), error = %e, "cannot remove imported spool file");
                }
                report.files += 1;
                app.metrics.spool_files.fetch_add(1, Ordering::Relaxed);
                tracing::info!(file = %path.display(), "imported click spool file");
            }
            Some(reason) => {
                let bad = path.with_extension("bad");
                tracing::warn!(
                    file = %path.display(),
                    renamed_to = %bad.display(),
                    %reason,
                    "corrupt click spool file; counted the batches before the damage"
                );
                if let Err(e) = std::fs::rename(&path, &bad) {
                    tracing::error!(file = %path.display(), error = %e, "cannot rename corrupt spool file");
                }
                report.bad_files += 1;
                app.metrics.spool_files_bad.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use shortlink_core::ipc::BatchId;

    #[test]
    fn parse_keeps_good_batches_before_damage() {
        let a = ClickBatch {
            batch_id: BatchId([1; 16]),
            clicks: vec![],
        };
        let mut buf = Vec::new();
        ipc::write_frame(&a, &mut buf).unwrap();
        ipc::write_frame(&a, &mut buf).unwrap();
        assert_eq!(parse(&buf).unwrap().len(), 2);
        let mut cut = buf.clone();
        cut.truncate(buf.len() - 1);
        let (good, reason) = parse(&cut).unwrap_err();
        assert_eq!(good.len(), 1);
        assert!(reason.contains("truncated"), "{reason}");
        let mut junk = buf.clone();
        junk.extend_from_slice(&[0, 0, 0, 1, 0xff]);
        let (good, _) = parse(&junk).unwrap_err();
        assert_eq!(good.len(), 2);
    }
}
