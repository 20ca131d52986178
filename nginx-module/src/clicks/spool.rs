//! Spool files: click batches the daemon could not take (at worker exit,
//! or when memory runs short), written for the daemon to import. Each file
//! is sealed with the deployment key (`SpoolSeal`), created fresh under a
//! temporary name (never one planted there) readable by the workers' group,
//! synced, then renamed into place, so the daemon sees whole files only.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use shortlink_core::ipc::{write_frame, ClickBatch, FrameError};
use shortlink_core::spool::SpoolSeal;

/// Why clicks could not be written to the spool (they stay in memory).
#[derive(Debug, thiserror::Error)]
pub enum SpoolError {
    #[error("no \"shortlink_spool\" is configured")]
    NotConfigured,
    #[error("cannot encode a click batch: {0}")]
    Encode(#[from] FrameError),
    #[error("cannot write spool file {}: {err}", path.display())]
    Write { path: PathBuf, err: std::io::Error },
}

/// Writes `batches` as one sealed file `name` in `dir`.
pub fn write(
    dir: &Path,
    name: &str,
    seal: &SpoolSeal,
    batches: &[ClickBatch],
) -> Result<(), SpoolError> {
    let mut buf = Vec::new();
    for batch in batches {
        write_frame(batch, &mut buf)?;
    }
    let sealed = seal.seal(&buf);
    let tmp = dir.join(format!("{name}.tmp"));
    let write = || -> std::io::Result<()> {
        std::fs::create_dir_all(dir)?;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o640)
            .open(&tmp)?;
        f.write_all(&sealed)?;
        f.sync_all()?;
        std::fs::rename(&tmp, dir.join(name))
    };
    write().map_err(|err| {
        let _ = std::fs::remove_file(&tmp);
        SpoolError::Write { path: tmp, err }
    })
}
