//! The files an SQLite database of the daemon is made of, named in one
//! place for whatever creates, tightens, watches or removes them.

use std::path::{Path, PathBuf};

/// `path` with `suffix` appended (`-wal`, `-shm`, `-journal`, …).
pub fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(suffix);
    PathBuf::from(p)
}

/// The click log's file (`clicks::logdb`) of the database `db`.
pub fn click_log(db: &Path) -> PathBuf {
    with_suffix(db, "-clicks")
}

/// Index in [`file_set`] of the database's `-wal`.
pub const DB_WAL: usize = 1;
/// Index in [`file_set`] of the click log's file (its `-wal` and `-shm`
/// follow).
pub const LOG: usize = 3;
/// Index in [`file_set`] of the click log's `-wal`.
pub const LOG_WAL: usize = 4;

/// Every file of the database `db`: the database file, its `-wal` and
/// `-shm`, then the click log's file (`clicks::logdb`) and its `-wal` and
/// `-shm`.
pub fn file_set(db: &Path) -> [PathBuf; 6] {
    let log = click_log(db);
    [
        db.to_path_buf(),
        with_suffix(db, "-wal"),
        with_suffix(db, "-shm"),
        log.clone(),
        with_suffix(&log, "-wal"),
        with_suffix(&log, "-shm"),
    ]
}
