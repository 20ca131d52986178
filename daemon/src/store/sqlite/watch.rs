//! Notices when a database file the daemon has open is deleted or replaced
//! under it (an `rm shortlink.db-wal`, a cleanup job, a restore copied over
//! the live files).
//!
//! SQLite keeps writing to the file descriptors it opened: after the `-wal`
//! file is unlinked, commits still succeed, into an inode no path leads to,
//! and are gone at the next crash or restart. Nothing in SQLite reports it.
//!
//! The mechanism: at start, and again whenever the answer is in doubt, we
//! find among this process's open descriptors (`/proc/self/fd`, Linux) one
//! whose link names the watched path, and remember the device and inode it
//! is open on. A check `stat`s that descriptor (through its
//! `/proc/self/fd/N` link, which reaches the open file even after an
//! unlink) and the path: when the descriptor still has the remembered inode
//! but the path no longer leads to it (it is gone, or another file is
//! there), the file we write to has left the file system. A descriptor
//! closed or reused for another file is simply looked up again. Any
//! descriptor on the inode will do: every SQLite connection in the process
//! opens the same path, so they all share the inode.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Where the process's open descriptors are listed.
const PROC_FDS: &str = "/proc/self/fd";

/// One watched path and the open file found for it.
#[derive(Debug)]
struct Watched {
    path: PathBuf,
    open: Option<OpenFile>,
}

/// An open descriptor on a watched path, by its `/proc/self/fd` link.
#[derive(Debug, Clone)]
struct OpenFile {
    link: PathBuf,
    dev: u64,
    ino: u64,
}

/// Watches the database file, its `-wal` and its `-shm`, and the same three
/// of the click log (`clicks::logdb`).
#[derive(Debug)]
pub(super) struct FileWatch {
    files: Vec<Watched>,
}

impl FileWatch {
    /// Watches the files of the database at `db` (which must exist).
    pub(super) fn new(db: &Path) -> Self {
        let db = std::fs::canonicalize(db).unwrap_or_else(|_| db.to_path_buf());
        let mut watch = FileWatch {
            files: super::files::file_set(&db)
                .into_iter()
                .map(|path| Watched { path, open: None })
                .collect(),
        };
        watch.find_missing();
        if watch.files.iter().all(|f| f.open.is_none()) {
            tracing::warn!(
                db = %db.display(),
                "cannot find the database files among the open descriptors ({PROC_FDS}): \
                 a WAL deleted under the daemon would go unnoticed"
            );
        }
        watch
    }

    /// Looks up an open descriptor for each path that has none yet.
    fn find_missing(&mut self) {
        if self.files.iter().all(|f| f.open.is_some()) {
            return;
        }
        let Ok(entries) = std::fs::read_dir(PROC_FDS) else {
            return;
        };
        let links: Vec<(PathBuf, PathBuf)> = entries
            .flatten()
            .filter_map(|e| {
                let link = e.path();
                std::fs::read_link(&link).ok().map(|target| (link, target))
            })
            .collect();
        for file in self.files.iter_mut().filter(|f| f.open.is_none()) {
            // The path's current inode: a descriptor on it is one of ours.
            let Ok(now) = std::fs::metadata(&file.path) else {
                continue;
            };
            file.open = links
                .iter()
                .filter(|(_, target)| *target == file.path)
                .find_map(|(link, _)| {
                    let m = std::fs::metadata(link).ok()?;
                    (m.dev() == now.dev() && m.ino() == now.ino()).then(|| OpenFile {
                        link: link.clone(),
                        dev: m.dev(),
                        ino: m.ino(),
                    })
                });
        }
    }

    /// Checks every watched file; `Err` says which one left the file system
    /// and how. Files with no descriptor found yet are looked up again.
    pub(super) fn check_all(&mut self) -> Result<(), String> {
        self.find_missing();
        for i in 0..self.files.len() {
            self.check_one(i)?;
        }
        Ok(())
    }

    /// Checks the two `-wal` files only (four `stat`s: cheap enough before
    /// each commit).
    pub(super) fn check_wal(&mut self) -> Result<(), String> {
        self.check_one(super::files::DB_WAL)?;
        self.check_one(super::files::LOG_WAL)
    }

    fn check_one(&mut self, i: usize) -> Result<(), String> {
        let file = &mut self.files[i];
        let Some(open) = file.open.clone() else {
            return Ok(());
        };
        match std::fs::metadata(&open.link) {
            Ok(m) if m.dev() == open.dev && m.ino() == open.ino => {}
            // Closed, or the number now names another file: find it again.
            _ => {
                file.open = None;
                return Ok(());
            }
        }
        match std::fs::metadata(&file.path) {
            Ok(m) if m.dev() == open.dev && m.ino() == open.ino => Ok(()),
            Ok(_) => Err(format!(
                "{} was replaced by another file while the daemon had it open",
                file.path.display()
            )),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(format!(
                "{} was deleted while the daemon had it open",
                file.path.display()
            )),
            // Cannot tell (permissions changed under us): not a loss.
            Err(_) => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_a_deleted_or_replaced_file_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("t.db");
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.pragma_update(None, "journal_mode", "WAL").unwrap();
        conn.execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1);")
            .unwrap();
        super::super::clicks::logdb::attach(&conn, &db, true).unwrap();
        conn.execute_batch("INSERT INTO clicklog.click_batches VALUES (x'01', 1);")
            .unwrap();
        let mut watch = FileWatch::new(&db);
        assert!(
            watch.files.iter().all(|f| f.open.is_some()),
            "{:?}",
            watch.files
        );
        assert_eq!(watch.check_all(), Ok(()));
        assert_eq!(watch.check_wal(), Ok(()));

        let wal = dir.path().join("t.db-wal");
        std::fs::remove_file(&wal).unwrap();
        let e = watch.check_wal().unwrap_err();
        assert!(e.contains("t.db-wal was deleted"), "{e}");
        assert!(watch.check_all().is_err());

        // Another file at the path is no better.
        std::fs::write(&wal, b"").unwrap();
        let e = watch.check_all().unwrap_err();
        assert!(e.contains("t.db-wal was replaced"), "{e}");

        // The click log's WAL holds acknowledged click batches.
        let mut watch = FileWatch::new(&db);
        std::fs::remove_file(dir.path().join("t.db-clicks-wal")).unwrap();
        let e = watch.check_wal().unwrap_err();
        assert!(e.contains("t.db-clicks-wal was deleted"), "{e}");
        drop(conn);
    }
}
