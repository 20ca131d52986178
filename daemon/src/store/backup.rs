//! The SQLite side of `shortlinkd backup` and `restore`: the online
//! backup of a live database file into a new file, and the checks and
//! changes a copy gets before it replaces a database. The CLI
//! (`cli/backup.rs`) places the files.

use std::fs::File;
use std::path::Path;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use rusqlite::backup::{Backup, StepResult};
use rusqlite::{Connection, OpenFlags, OptionalExtension};

use super::SCHEMA_VERSION;

/// Copies the live database `db` into the new file `tmp` (safe while a
/// daemon writes it) and checks the copy; the copy's schema version.
pub fn backup_live(db: &Path, tmp: &Path) -> Result<i64> {
    let src = Connection::open_with_flags(
        db,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .with_context(|| format!("opening {}", db.display()))?;
    src.busy_timeout(Duration::from_secs(10))?;
    write_checked(&src, tmp, |_| Ok(()))
}

/// A backup file opened read-only, to restore from.
pub struct BackupFile(Connection);

impl BackupFile {
    /// Opens `file` (read-only).
    pub fn open(file: &Path) -> Result<Self> {
        let c = Connection::open_with_flags(
            file,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .with_context(|| format!("opening {}", file.display()))?;
        Ok(Self(c))
    }
}

/// Copies the backup `src` into the new file `tmp`, checks it, has
/// `check_sealed` judge one of its sealed app secrets (`app_id`, `secret`)
/// if it holds any, and gives it a new store id; its schema version.
pub fn copy_for_restore(
    src: &BackupFile,
    tmp: &Path,
    check_sealed: impl FnOnce(&str, &str) -> Result<()>,
) -> Result<i64> {
    write_checked(&src.0, tmp, |c| {
        if let Some((app_id, secret)) = sealed_secret(c)? {
            check_sealed(&app_id, &secret)?;
        }
        new_history(c)
    })
}

/// Copies `src` into the new file `tmp`, checks the copy (a shortlink
/// database of a known schema, `integrity_check`, then `check`), leaves it
/// one self-contained file (no WAL) and fsyncs it; its schema version.
fn write_checked(
    src: &Connection,
    tmp: &Path,
    check: impl FnOnce(&Connection) -> Result<()>,
) -> Result<i64> {
    let mut dst = Connection::open(tmp).with_context(|| format!("opening {}", tmp.display()))?;
    copy(src, &mut dst)?;
    dst.pragma_update(None, "journal_mode", "DELETE")?;
    let version = schema_version(&dst)?;
    let integrity: String = dst.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
    if integrity != "ok" {
        bail!("the copy fails PRAGMA integrity_check: {integrity}");
    }
    check(&dst)?;
    dst.close().map_err(|(_, e)| e)?;
    File::open(tmp)?.sync_all()?;
    Ok(version)
}

/// The online backup, all pages in one step (one read transaction, so a
/// busy writer cannot make it start over), retried while locked.
fn copy(src: &Connection, dst: &mut Connection) -> Result<()> {
    let backup = Backup::new(src, dst)?;
    for _ in 0..600 {
        match backup.step(-1) {
            Ok(StepResult::Done) => return Ok(()),
            Ok(StepResult::More) => continue,
            Ok(_) => std::thread::sleep(Duration::from_millis(50)),
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::NotADatabase =>
            {
                bail!("not an SQLite database")
            }
            Err(e) => return Err(e.into()),
        }
    }
    bail!("the database stayed locked for 30 s")
}

/// The schema version of a shortlink database; an error when it is not
/// one, or one of a newer shortlinkd.
fn schema_version(c: &Connection) -> Result<i64> {
    let tables: i64 = c.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('links', 'id_alloc')",
        [],
        |r| r.get(0),
    )?;
    let version: i64 = c.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if tables != 2 || version < 1 {
        bail!("not a shortlink database (no links and id_alloc tables)");
    }
    if version > SCHEMA_VERSION {
        bail!(
            "schema version {version} is newer than this shortlinkd knows ({SCHEMA_VERSION}); \
             restore with the shortlinkd that made it"
        );
    }
    Ok(version)
}

/// One app secret of the copy sealed with a deployment key, if it holds
/// one: `(app_id, secret)`.
fn sealed_secret(c: &Connection) -> Result<Option<(String, String)>> {
    let has_apps: i64 = c.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'apps'",
        [],
        |r| r.get(0),
    )?;
    if has_apps == 0 {
        return Ok(None);
    }
    let sealed: Option<(String, String)> = c
        .query_row(
            "SELECT app_id, secret FROM apps WHERE secret LIKE 'sealed1:%' LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    Ok(sealed)
}

/// Gives the restored database a new store id: the nginx workers' change
/// positions (taken on the database being replaced, or on this one before
/// the backup) mean nothing in it, so they drop their caches and resync
/// instead of replaying a log of another history.
fn new_history(c: &Connection) -> Result<()> {
    let has_meta: i64 = c.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'store_meta'",
        [],
        |r| r.get(0),
    )?;
    if has_meta == 1 {
        c.execute(
            "UPDATE store_meta SET store_id = abs(random()) WHERE id = 1",
            [],
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_schema_version_is_the_last_migration() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        super::super::SqliteStore::open(&path, 1, 10)
            .unwrap()
            .close();
        let c = Connection::open(&path).unwrap();
        assert_eq!(schema_version(&c).unwrap(), SCHEMA_VERSION);
        c.execute_batch("PRAGMA user_version = 99").unwrap();
        let err = schema_version(&c).unwrap_err().to_string();
        assert!(err.contains("99 is newer"), "{err}");
        let other = Connection::open(dir.path().join("o.db")).unwrap();
        other
            .execute_batch("CREATE TABLE links (id INTEGER)")
            .unwrap();
        let err = schema_version(&other).unwrap_err().to_string();
        assert!(err.contains("not a shortlink database"), "{err}");
    }
}
