//! The modes of the data directory and the database files, whatever the
//! umask the daemon was started with.
//!
//! The database holds password hashes, API key hashes, sealed app secrets
//! and every link: its files (`shortlink.db`, `-wal`, `-shm`, and the
//! click log's `shortlink.db-clicks` with its own) are the
//! daemon user's alone (0600; an operator's 0640 for a backup group is
//! kept). The database file is made here with 0600 before SQLite opens it;
//! SQLite gives the `-wal` and `-shm` files it makes the mode of the
//! database file. The directory is made 0750, or 0711 when the nginx
//! workers' sockets or click spool are in it (they must reach them by
//! name; listing it and reading the database stay refused). Existing files and directories
//! that let every local user read them are tightened, with a log line.

use std::fs::Permissions;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use super::AppError;
use crate::config::Config;
use crate::store::sqlite::files::file_set;

/// Mode of a data directory the daemon makes, without sockets in it.
pub const DIR_MODE: u32 = 0o750;
/// ... and with the IPC or API socket or the click spool in it.
pub const DIR_MODE_WITH_SOCKETS: u32 = 0o711;
/// Mode of a database file the daemon makes.
pub const DB_MODE: u32 = 0o600;
/// The bits a database file may keep: the owner's read and write, the
/// group's read.
const DB_KEEP: u32 = 0o640;

fn mode_error(path: &Path, source: std::io::Error) -> AppError {
    AppError::Dir {
        path: path.display().to_string(),
        source,
    }
}

fn chmod(path: &Path, mode: u32) -> Result<(), AppError> {
    std::fs::set_permissions(path, Permissions::from_mode(mode)).map_err(|e| mode_error(path, e))
}

/// Makes the data directory (or tightens the one there).
pub fn data_dir(config: &Config) -> Result<(), AppError> {
    let dir = &config.data_dir;
    // What the nginx workers must reach by name.
    let workers_inside = [config.ipc_path(), config.api_path(), config.spool_path()]
        .iter()
        .any(|p| p.starts_with(dir) && p != dir);
    let wanted = if workers_inside {
        DIR_MODE_WITH_SOCKETS
    } else {
        DIR_MODE
    };
    match std::fs::metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(wanted)
                .create(dir)
                .map_err(|e| mode_error(dir, e))?;
            // Exactly this mode, whatever the umask took away or let be.
            chmod(dir, wanted)
        }
        Err(e) => Err(mode_error(dir, e)),
        Ok(meta) => {
            let mode = meta.permissions().mode() & 0o7777;
            if mode & 0o006 == 0 {
                return Ok(());
            }
            if mode & 0o1000 != 0 {
                // A shared directory such as /tmp: not ours to close.
                tracing::warn!(
                    dir = %dir.display(),
                    mode = format!("{mode:o}"),
                    "the data directory is a shared sticky directory; give the daemon a directory of its own"
                );
                return Ok(());
            }
            let tightened = mode & !0o006;
            chmod(dir, tightened)?;
            tracing::warn!(
                dir = %dir.display(),
                was = format!("{mode:o}"),
                now = format!("{tightened:o}"),
                "the data directory was open to every local user; its mode is tightened"
            );
            Ok(())
        }
    }
}

/// Makes the database file with [`DB_MODE`] when there is none, and
/// tightens the database files there that others may read.
pub fn database_files(db: &Path) -> Result<(), AppError> {
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(DB_MODE)
        .open(db)
    {
        // An empty file is a new database to SQLite.
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(mode_error(db, e)),
    }
    for path in file_set(db) {
        let mode = match std::fs::metadata(&path) {
            Ok(m) => m.permissions().mode() & 0o7777,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(mode_error(&path, e)),
        };
        if mode & !DB_KEEP == 0 {
            continue;
        }
        let tightened = mode & DB_KEEP;
        chmod(&path, tightened)?;
        tracing::warn!(
            file = %path.display(),
            was = format!("{mode:o}"),
            now = format!("{tightened:o}"),
            "a database file was readable or writable beyond the daemon's user and group; its mode is tightened"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sqlite::files::{click_log, with_suffix};

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn files_are_made_private_and_open_ones_tightened() {
        let tmp = tempfile::tempdir().unwrap();
        let mut config = Config {
            data_dir: tmp.path().join("a/data"),
            ..Config::default()
        };
        data_dir(&config).unwrap();
        assert_eq!(mode(&config.data_dir), DIR_MODE_WITH_SOCKETS);
        config.data_dir = tmp.path().join("b");
        config.ipc_socket = Some(tmp.path().join("ipc.sock"));
        config.api_socket = Some(tmp.path().join("api.sock"));
        // The spool is still inside by default.
        data_dir(&config).unwrap();
        assert_eq!(mode(&config.data_dir), DIR_MODE_WITH_SOCKETS);
        std::fs::remove_dir(&config.data_dir).unwrap();
        config.spool_dir = Some(tmp.path().join("spool"));
        data_dir(&config).unwrap();
        assert_eq!(mode(&config.data_dir), DIR_MODE);

        chmod(&config.data_dir, 0o755).unwrap();
        data_dir(&config).unwrap();
        assert_eq!(mode(&config.data_dir), 0o751);

        let db = config.data_dir.join("x.db");
        database_files(&db).unwrap();
        assert_eq!(mode(&db), DB_MODE);
        chmod(&db, 0o666).unwrap();
        std::fs::write(with_suffix(&db, "-wal"), b"").unwrap();
        chmod(&with_suffix(&db, "-wal"), 0o644).unwrap();
        database_files(&db).unwrap();
        assert_eq!(mode(&db), 0o640);
        assert_eq!(mode(&with_suffix(&db, "-wal")), 0o640);
        let log = click_log(&db);
        std::fs::write(&log, b"").unwrap();
        chmod(&log, 0o666).unwrap();
        database_files(&db).unwrap();
        assert_eq!(mode(&log), 0o640);
    }
}
