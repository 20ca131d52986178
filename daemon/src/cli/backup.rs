//! `backup` and `restore` of the SQLite database.
//!
//! `backup` copies the live database with SQLite's online backup API, in
//! one read transaction (in WAL mode a reader does not stop the daemon's
//! writer, and the copy is one consistent moment), into a file made 0600
//! beside the target, checks it (`PRAGMA integrity_check`), and renames it
//! into place. A file copy of a live database may catch a page half
//! written or miss what is still in the WAL; this cannot.
//!
//! `restore` refuses while a daemon runs on the data directory (its
//! control or API socket answers), checks that the file is a shortlink
//! database of a schema version this binary knows and, when the database
//! holds app secrets sealed with the deployment key, that they open with
//! this deployment's key; gives the copy a new store id (the nginx
//! workers resync rather than replay another history); then it writes the
//! copy beside the database,
//! fsyncs it, removes the old `-wal` and `-shm` and renames the copy over
//! the database, so the data directory holds the old database or the new
//! one, never half of one.

use std::fs::File;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};

use crate::app::files::DB_MODE;
use crate::app_secret::SecretSeal;
use crate::config::Config;
use crate::store::sqlite::backup as sqlite;
use crate::store::sqlite::files::{file_set, with_suffix, DB_WAL};

/// What `backup` and `restore` did, for `--json`.
#[derive(Debug, serde::Serialize)]
pub struct Copied {
    /// The database file of the data directory.
    pub database: PathBuf,
    /// The backup file written or read.
    pub file: PathBuf,
    /// The copy's schema version.
    pub schema_version: i64,
}

/// Backup and restore copy the SQLite file; a PostgreSQL database is
/// PostgreSQL's to back up.
fn sqlite_only(config: &Config, what: &str) -> Result<()> {
    if let Some(url) = &config.database {
        bail!(
            "`{what}` copies the SQLite database; this configuration uses PostgreSQL ({url}): \
             use pg_dump and pg_restore (or your PostgreSQL backups) instead"
        );
    }
    Ok(())
}

/// Copies the daemon's database to `file`, safe while the daemon runs and
/// writes. An existing `file` is replaced (atomically) only with `force`:
/// a mistyped name must not cost an older backup.
pub fn backup(config: &Config, file: &Path, force: bool) -> Result<Copied> {
    sqlite_only(config, "backup")?;
    if !force && file.symlink_metadata().is_ok() {
        bail!(
            "{} exists already: pass --force to replace it, or name a new file",
            file.display()
        );
    }
    let db = config.db_path();
    if !db.exists() {
        bail!(
            "there is no SQLite database at {} (a daemon on PostgreSQL keeps none here: \
             back that database up with pg_dump)",
            db.display()
        );
    }
    let tmp = beside(file, "backup")?;
    let version = sqlite::backup_live(&db, &tmp)
        .and_then(|v| replace(&tmp, file).map(|()| v))
        .inspect_err(|_| remove_db_files(&tmp))?;
    eprintln!(
        "backed up {} to {} (schema version {version}, integrity ok)",
        db.display(),
        file.display()
    );
    Ok(Copied {
        database: db,
        file: file.to_path_buf(),
        schema_version: version,
    })
}

/// Replaces the database of the data directory with the backup `file`.
pub fn restore(config: &Config, file: &Path) -> Result<Copied> {
    sqlite_only(config, "restore")?;
    if let Some(socket) = running_daemon(config) {
        bail!(
            "a daemon is running on {}: {} answers; stop it before a restore",
            config.data_dir.display(),
            socket.display()
        );
    }
    let meta =
        std::fs::metadata(file).with_context(|| format!("cannot read {}", file.display()))?;
    if !meta.is_file() {
        bail!("{} is not a file", file.display());
    }
    crate::app::files::data_dir(config)?;
    let src = sqlite::BackupFile::open(file)?;
    let db = config.db_path();
    let tmp = beside(&db, "restore")?;
    let version = sqlite::copy_for_restore(&src, &tmp, |app_id, secret| {
        same_key(app_id, secret, config)
    })
    .map_err(|e| anyhow!("{}: {e:#}", file.display()))
    .and_then(|v| {
        // A WAL left beside the old database would be replayed into
        // the new one; the old click log's unfolded batches would be
        // counted into it (the copy carries its own in `click_log`).
        remove_files(&file_set(&db)[DB_WAL..])?;
        replace(&tmp, &db).map(|()| v)
    })
    .inspect_err(|_| remove_db_files(&tmp))?;
    eprintln!(
        "restored {} into {} (schema version {version}); start the daemon",
        file.display(),
        db.display()
    );
    Ok(Copied {
        database: db,
        file: file.to_path_buf(),
        schema_version: version,
    })
}

/// The socket of a daemon running on this data directory, if one answers.
fn running_daemon(config: &Config) -> Option<PathBuf> {
    [config.control_path(), config.api_path()]
        .into_iter()
        .find(|p| std::os::unix::net::UnixStream::connect(p).is_ok())
}

/// A new empty file (mode 0600) in the directory of `target`, for the copy.
fn beside(target: &Path, job: &str) -> Result<PathBuf> {
    let name = target
        .file_name()
        .ok_or_else(|| anyhow!("{} names no file", target.display()))?
        .to_string_lossy();
    let tmp = target.with_file_name(format!(".{name}.{job}-{}", std::process::id()));
    remove_db_files(&tmp);
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(DB_MODE)
        .open(&tmp)
        .with_context(|| format!("cannot create {}", tmp.display()))?;
    Ok(tmp)
}

/// A secret of the copy sealed with a deployment key (`secret` of app
/// `app_id`) must open with this deployment's key (else every app's
/// signatures and every generated code would be another deployment's).
fn same_key(app_id: &str, secret: &str, config: &Config) -> Result<()> {
    let key_path = config.key_path();
    let key = shortlink_core::DeploymentKey::load(&key_path).with_context(|| {
        format!(
            "the backup holds secrets sealed with a deployment key; cannot read {} to check it",
            key_path.display()
        )
    })?;
    if SecretSeal::new(&key).open(app_id, secret).is_err() {
        bail!(
            "made under another deployment key: its sealed app secrets do not open with {}",
            key_path.display()
        );
    }
    Ok(())
}

/// Renames `tmp` over `target` and fsyncs the directory.
fn replace(tmp: &Path, target: &Path) -> Result<()> {
    std::fs::rename(tmp, target)
        .with_context(|| format!("cannot rename {} to {}", tmp.display(), target.display()))?;
    let dir = target
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    File::open(dir)?.sync_all()?;
    Ok(())
}

fn remove_files(paths: &[PathBuf]) -> Result<()> {
    for p in paths {
        match std::fs::remove_file(p) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(e).with_context(|| format!("cannot remove {}", p.display()))
            }
            _ => {}
        }
    }
    Ok(())
}

/// Removes a copy left by a failed job, with its side files.
fn remove_db_files(db: &Path) {
    let _ = remove_files(&[
        db.to_path_buf(),
        with_suffix(db, "-wal"),
        with_suffix(db, "-shm"),
        with_suffix(db, "-journal"),
    ]);
}

#[cfg(test)]
mod tests {
    use rusqlite::Connection;

    use super::*;

    fn config(dir: &Path) -> Config {
        Config {
            data_dir: dir.to_path_buf(),
            ..Config::default()
        }
    }

    fn urls(db: &Path) -> Vec<String> {
        let c = Connection::open(db).unwrap();
        let mut st = c.prepare("SELECT url FROM links ORDER BY id").unwrap();
        let rows = st.query_map([], |r| r.get(0)).unwrap();
        rows.map(Result::unwrap).collect()
    }

    #[test]
    fn postgres_configurations_are_sent_to_pg_dump() {
        let dir = tempfile::tempdir().unwrap();
        let config = Config {
            database: Some(
                crate::config::DatabaseUrl::parse("postgres://u@db.example/sl").unwrap(),
            ),
            ..config(dir.path())
        };
        for e in [
            backup(&config, &dir.path().join("b.db"), false).unwrap_err(),
            restore(&config, &dir.path().join("b.db")).unwrap_err(),
        ] {
            let e = e.to_string();
            assert!(e.contains("pg_dump") && e.contains("db.example"), "{e}");
        }
    }

    #[test]
    fn restore_replaces_the_database_and_drops_the_old_wal() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        for (dir, url) in [(&a, "https://e.com/kept"), (&b, "https://e.com/old")] {
            let db = config(dir.path()).db_path();
            crate::store::sqlite::SqliteStore::open(&db, 1, 10)
                .unwrap()
                .close();
            Connection::open(&db)
                .unwrap()
                .execute(
                    "INSERT INTO links (id, url, created_at, updated_at, tags) \
                     VALUES (1, ?1, 0, 0, '[]')",
                    [url],
                )
                .unwrap();
        }
        let file = a.path().join("backup.db");
        backup(&config(a.path()), &file, false).unwrap();
        // b's database with a WAL a crash left: more rows, not checkpointed.
        let old = config(b.path()).db_path();
        let stale = with_suffix(&old, "-wal");
        {
            let c = Connection::open(&old).unwrap();
            c.pragma_update(None, "journal_mode", "WAL").unwrap();
            c.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
            for id in 2..50 {
                c.execute(
                    "INSERT INTO links (id, url, created_at, updated_at, tags) \
                     VALUES (?1, 'https://e.com/wal', 0, 0, '[]')",
                    [id],
                )
                .unwrap();
            }
            std::fs::copy(&stale, b.path().join("saved-wal")).unwrap();
        }
        std::fs::copy(b.path().join("saved-wal"), &stale).unwrap();
        // The old click log: its batches belong to the old database.
        let old_log = crate::store::sqlite::files::click_log(&old);
        assert!(old_log.exists());
        restore(&config(b.path()), &file).unwrap();
        // What a daemon opening it would read: the backup, not the old WAL
        // replayed over it, nor the old database's unfolded clicks.
        assert_eq!(urls(&old), ["https://e.com/kept"]);
        assert!(!stale.exists());
        assert!(!old_log.exists());
        let mode = std::fs::metadata(&old).unwrap().permissions();
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777,
            0o600
        );
    }
}
