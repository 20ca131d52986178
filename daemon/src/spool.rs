//! Import of click spool files: batches nginx workers could not deliver
//! before exiting, written as sealed `*.spool` files (see
//! [`shortlink_core::spool`]).
//!
//! Another process writes these files, so nothing in them is trusted. Each
//! is opened without following links, must be a regular file owned by the
//! spool directory's owner or group (or root, or us), no bigger than
//! [`MAX_SPOOL_FILE`], and sealed with the deployment key. It is read as a
//! stream (a few batches in memory at a time), every batch is checked
//! against the click bounds, and each batch counts once (by batch id). A
//! file that passes is deleted; one that fails anywhere is renamed to
//! `*.bad` with the reason logged once, after the good batches before the
//! damage were counted.

use std::fs::File;
use std::io::BufReader;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use shortlink_core::ipc::ClickBatch;
use shortlink_core::spool::{SpoolSeal, MAX_SPOOL_FILE};
use tokio::sync::mpsc;

use crate::app::App;
use crate::stats;
use crate::store::StoreError;
use crate::timestamp::unix_now;

/// Batches handed from the reading thread to the store at a time.
const CHUNK: usize = 256;

/// Why a spool scan failed as a whole.
#[derive(Debug, thiserror::Error)]
pub enum SpoolError {
    /// The directory could not be read.
    #[error("cannot read spool directory {path}: {source}")]
    Dir {
        /// The spool directory.
        path: String,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// Batches could not be stored; the file stays for the next scan.
    #[error("cannot store spooled clicks from {path}: {source}")]
    Store {
        /// The spool file.
        path: String,
        /// Why the store refused them.
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

/// Who may have written a spool file: the directory's owner or group (the
/// nginx workers the operator gave it to), root, or this daemon.
#[derive(Debug, Clone, Copy)]
struct Writers {
    dir_uid: u32,
    dir_gid: u32,
    own_uid: u32,
}

impl Writers {
    fn of(dir: &Path) -> std::io::Result<Writers> {
        let meta = std::fs::metadata(dir)?;
        Ok(Writers {
            dir_uid: meta.uid(),
            dir_gid: meta.gid(),
            own_uid: nix::unistd::geteuid().as_raw(),
        })
    }

    fn allow(&self, meta: &std::fs::Metadata) -> bool {
        let uid = meta.uid();
        uid == 0 || uid == self.own_uid || uid == self.dir_uid || meta.gid() == self.dir_gid
    }
}

/// Says once per directory and process that anyone may write to it.
fn warn_if_world_writable(dir: &Path) {
    use std::sync::Mutex;
    static WARNED: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
    let Ok(meta) = std::fs::metadata(dir) else {
        return;
    };
    if meta.mode() & 0o002 == 0 {
        return;
    }
    let mut warned = WARNED.lock().unwrap_or_else(|e| e.into_inner());
    if !warned.iter().any(|d| d == dir) {
        warned.push(dir.to_path_buf());
        tracing::warn!(
            dir = %dir.display(),
            "the click spool directory is writable by every local user; give it to the nginx worker user or group with mode 0770 (only files sealed with the deployment key are counted)"
        );
    }
}

/// Imports every `*.spool` file in `dir`.
pub async fn import_dir(app: &App, dir: &Path) -> Result<SpoolReport, SpoolError> {
    let mut report = SpoolReport::default();
    let dir_err = |source| SpoolError::Dir {
        path: dir.display().to_string(),
        source,
    };
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(report),
        Err(source) => return Err(dir_err(source)),
    };
    warn_if_world_writable(dir);
    let writers = Writers::of(dir).map_err(dir_err)?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "spool"))
        .collect();
    files.sort();
    for path in files {
        let outcome = import_file(app, &path, writers, &mut report).await?;
        match outcome {
            Ok(()) => {
                if let Err(e) = std::fs::remove_file(&path) {
                    tracing::warn!(file = %path.display(), error = %e, "cannot remove imported spool file");
                }
                report.files += 1;
                app.metrics.spool_files.inc();
                tracing::info!(file = %path.display(), "imported click spool file");
            }
            Err(reason) => {
                quarantine(&path, &reason);
                report.bad_files += 1;
                app.metrics.spool_files_bad.inc();
            }
        }
    }
    Ok(report)
}

/// Renames a refused file aside (the link itself, if it is one) and says why.
fn quarantine(path: &Path, reason: &str) {
    let bad = path.with_extension("bad");
    tracing::warn!(
        file = %path.display(),
        renamed_to = %bad.display(),
        %reason,
        "corrupt click spool file refused and set aside (damaged, unsealed or not a worker's); counted the batches before the damage"
    );
    if let Err(e) = std::fs::rename(path, &bad) {
        tracing::error!(file = %path.display(), error = %e, "cannot rename refused spool file");
    }
}

/// Opens a spool file as [`import_dir`] describes; `Err` is the reason to
/// refuse it.
fn open_checked(path: &Path, writers: Writers) -> Result<(File, u64), String> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK | nix::libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(nix::libc::ELOOP) => "it is a symbolic link".to_string(),
            _ => format!("cannot open it: {e}"),
        })?;
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot stat it: {e}"))?;
    if !meta.file_type().is_file() {
        return Err("it is not a regular file".into());
    }
    if !writers.allow(&meta) {
        return Err(format!(
            "it is owned by uid {} gid {}, neither the spool directory's owner or group nor root",
            meta.uid(),
            meta.gid()
        ));
    }
    if meta.len() > MAX_SPOOL_FILE {
        return Err(format!(
            "it is {} bytes, more than the limit of {MAX_SPOOL_FILE}",
            meta.len()
        ));
    }
    Ok((file, meta.len()))
}

/// Reads, checks and counts one file. The outer `Err` is a store failure
/// (the file stays for the next scan); the inner one refuses the file.
async fn import_file(
    app: &App,
    path: &Path,
    writers: Writers,
    report: &mut SpoolReport,
) -> Result<Result<(), String>, SpoolError> {
    let (tx, mut rx) = mpsc::channel::<Vec<ClickBatch>>(2);
    let seal = app.spool_seal.clone();
    let owned = path.to_path_buf();
    let reader = tokio::task::spawn_blocking(move || read_file(&owned, writers, &seal, &tx));
    while let Some(chunk) = rx.recv().await {
        report.batches += chunk.len();
        stats::ingest(app, chunk)
            .await
            .map_err(|source| SpoolError::Store {
                path: path.display().to_string(),
                source,
            })?;
    }
    Ok(reader
        .await
        .unwrap_or_else(|e| Err(format!("the reading thread failed: {e}"))))
}

/// The blocking half: streams checked batches to `tx` in chunks.
fn read_file(
    path: &Path,
    writers: Writers,
    seal: &SpoolSeal,
    tx: &mpsc::Sender<Vec<ClickBatch>>,
) -> Result<(), String> {
    let (file, len) = open_checked(path, writers)?;
    let reader = seal
        .open(BufReader::new(file), len)
        .map_err(|d| d.to_string())?;
    let now = unix_now();
    let mut chunk = Vec::with_capacity(CHUNK);
    let mut outcome = Ok(());
    for item in reader {
        let checked = item
            .map_err(|d| d.to_string())
            .and_then(|b| b.validate(now).map(|()| b).map_err(|e| e.to_string()));
        match checked {
            Ok(batch) => chunk.push(batch),
            Err(reason) => {
                outcome = Err(reason);
                break;
            }
        }
        if chunk.len() == CHUNK && tx.blocking_send(std::mem::take(&mut chunk)).is_err() {
            return Err("the import stopped".into());
        }
    }
    if !chunk.is_empty() && tx.blocking_send(chunk).is_err() {
        return Err("the import stopped".into());
    }
    outcome
}
