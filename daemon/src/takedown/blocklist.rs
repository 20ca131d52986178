//! The blocklist file (`blocklist_file`): read at start and again whenever
//! it changes (checked every few seconds), its hosts applied to the links
//! already stored at once, as one takedown of kind `blocklist`: the links
//! it lists are recorded (flagged), and with `blocklist_disable` switched
//! off too and refused from then on (`links::blocked`). The record's
//! selector is the file, the digest of its bytes and the action, so the
//! same contents are applied once, whichever node reads them first.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use sha2::{Digest, Sha256};
use shortlink_core::blocklist::{self, Blocklist};
use tokio_util::sync::CancellationToken;

use crate::app::SharedApp;
use crate::store::{Matcher, NewTakedown};
use crate::timestamp::unix_now;

/// How often the file is looked at.
pub const POLL: Duration = Duration::from_secs(5);
/// The largest file read (public feeds are a few MiB).
pub const MAX_FILE: u64 = 64 << 20;
/// Who blocklist takedowns are recorded as.
pub const BY: &str = "blocklist";

/// What identifies one version of the file: changed, it is read again.
type Stamp = (Option<SystemTime>, u64, u64);

fn stamp(path: &Path) -> std::io::Result<Stamp> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path)?;
    Ok((m.modified().ok(), m.len(), m.ino()))
}

/// Why the file could not be applied.
#[derive(Debug, thiserror::Error)]
pub enum BlocklistError {
    #[error("blocklist {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("blocklist {path}: {len} bytes is more than the {MAX_FILE} read")]
    TooLarge { path: String, len: u64 },
    #[error("blocklist {path} is not UTF-8 text")]
    NotText { path: String },
    #[error("blocklist {path}: {0}", path = .1)]
    Store(crate::store::StoreError, String),
}

/// Reads and parses the file; the digest of its bytes.
async fn read(path: &Path) -> Result<(Blocklist, String), BlocklistError> {
    let shown = path.display().to_string();
    let len = tokio::fs::metadata(path)
        .await
        .map_err(|source| BlocklistError::Read {
            path: shown.clone(),
            source,
        })?
        .len();
    if len > MAX_FILE {
        return Err(BlocklistError::TooLarge { path: shown, len });
    }
    let bytes = tokio::fs::read(path)
        .await
        .map_err(|source| BlocklistError::Read {
            path: shown.clone(),
            source,
        })?;
    let digest = hex::encode(&Sha256::digest(&bytes)[..8]);
    let text = String::from_utf8(bytes).map_err(|_| BlocklistError::NotText { path: shown })?;
    let list = tokio::task::spawn_blocking(move || blocklist::parse(&text))
        .await
        .unwrap_or_default();
    Ok((list, digest))
}

/// Reads the file and applies it: the hosts in force for new links, and
/// one takedown over the stored ones (unless these contents were applied
/// already). Returns the links recorded.
pub async fn apply(app: &SharedApp, path: &Path) -> Result<u64, BlocklistError> {
    let shown = path.display().to_string();
    let (list, digest) = read(path).await?;
    if list.bad_lines > 0 {
        let first: Vec<String> = list
            .first_bad
            .iter()
            .map(|(n, why)| format!("line {n}: {why}"))
            .collect();
        tracing::warn!(
            path = %shown, bad_lines = list.bad_lines, first = %first.join("; "),
            "blocklist: lines that are no host were skipped"
        );
    }
    let hosts = Arc::new(list.hosts);
    let disable = app.config.blocklist_disable;
    app.rules.blocked.set(disable.then(|| Arc::clone(&hosts)));
    let set = Arc::clone(&hosts);
    let done = app
        .store
        .take_down(NewTakedown {
            kind: "blocklist",
            selector: format!(
                "{shown} sha256:{digest} {}",
                if disable { "disable" } else { "flag" }
            ),
            reason: format!("{} hosts listed in {shown}", hosts.len()),
            by: BY.into(),
            at: unix_now(),
            matcher: Matcher::Urls {
                contains: None,
                test: Arc::new(move |url: &str| set.matches_url(url)),
            },
            switch_off: disable,
            once: true,
            unless_first: hosts.is_empty(),
        })
        .await
        .map_err(|e| BlocklistError::Store(e, shown.clone()))?;
    let Some(done) = done else {
        tracing::info!(path = %shown, hosts = hosts.len(), "blocklist: these contents were applied already");
        return Ok(0);
    };
    super::tell_edge(app, &done.changed).await;
    let t = &done.record;
    if t.matched > 0 {
        tracing::warn!(
            path = %shown, hosts = hosts.len(), takedown = t.id, flagged = t.matched,
            disabled = t.disabled, "blocklist applied: stored links are on it"
        );
    } else {
        tracing::info!(
            path = %shown, hosts = hosts.len(), takedown = t.id,
            "blocklist applied: no stored link is on it"
        );
    }
    Ok(t.matched)
}

/// Applies the file at start and whenever it changes, until `stop`.
pub async fn watch(app: SharedApp, path: PathBuf, stop: CancellationToken) {
    let mut seen: Option<Stamp> = None;
    let mut failing = false;
    loop {
        let now = stamp(&path).ok();
        if now.is_some() && now != seen {
            match apply(&app, &path).await {
                Ok(_) => {
                    seen = now;
                    failing = false;
                }
                // Said once until it works again; tried at every look.
                Err(e) if !failing => {
                    tracing::error!(error = %e, "blocklist not applied; the hosts in force stay");
                    failing = true;
                }
                Err(e) => tracing::debug!(error = %e, "blocklist still not applied"),
            }
        } else if now.is_none() && !failing {
            tracing::error!(path = %path.display(), "blocklist file cannot be read; the hosts in force stay");
            failing = true;
        }
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(POLL) => {}
        }
    }
}
