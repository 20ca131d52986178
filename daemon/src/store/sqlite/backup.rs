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

use super::clicks::logdb;
use super::SCHEMA_VERSION;

/// Copies the live database `db` into the new file `tmp` (safe while a
/// daemon writes it) and checks the copy; the copy's schema version. The
/// click batches acknowledged and not folded yet, which live in the click
/// log's own file (`clicks::logdb`), go into the copy's `click_log` and
/// `click_batches`, where the next open finds them.
pub fn backup_live(db: &Path, tmp: &Path) -> Result<i64> {
    let src = Connection::open_with_flags(
        db,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .with_context(|| format!("opening {}", db.display()))?;
    src.busy_timeout(Duration::from_secs(10))?;
    let log = super::files::click_log(db);
    if !log.exists() {
        return write_checked(&src, tmp, |_| Ok(()));
    }
    logdb::attach(&src, db, false).with_context(|| format!("opening {}", log.display()))?;
    // The log's snapshot is taken first: a fold committing between the two
    // leaves its rows in this log snapshot, and the copy's
    // `folded_through` (older or newer) tells which of them to count. The
    // other order could miss rows a fold deleted from the log.
    src.execute_batch("BEGIN")?;
    src.query_row("SELECT count(*) FROM clicklog.click_log", [], |_| Ok(()))?;
    let version = write_checked(&src, tmp, |dst| copy_log(&src, dst));
    src.execute_batch("COMMIT")?;
    version
}

/// Copies the click log's unfolded rows and its batch ids (read through
/// `src`'s open snapshot of the log) into the copy `dst`.
fn copy_log(src: &Connection, dst: &Connection) -> Result<()> {
    let through: i64 = dst.query_row(
        "SELECT folded_through FROM click_fold WHERE id = 1",
        [],
        |r| r.get(0),
    )?;
    dst.execute_batch("BEGIN")?;
    let mut rows = src
        .prepare("SELECT seq, received_at, batch, format FROM clicklog.click_log WHERE seq > ?1")?;
    let mut put = dst.prepare(
        "INSERT INTO click_log (seq, received_at, batch, format) VALUES (?1, ?2, ?3, ?4)",
    )?;
    let mut q = rows.query([through])?;
    while let Some(r) = q.next()? {
        put.execute(rusqlite::params![
            r.get::<_, i64>(0)?,
            r.get::<_, i64>(1)?,
            r.get_ref(2)?.as_blob()?,
            r.get::<_, i64>(3)?
        ])?;
    }
    let mut ids = src.prepare("SELECT batch_id, seen_at FROM clicklog.click_batches")?;
    let mut put = dst.prepare("INSERT INTO click_batches (batch_id, seen_at) VALUES (?1, ?2)")?;
    let mut q = ids.query([])?;
    while let Some(r) = q.next()? {
        put.execute(rusqlite::params![
            r.get_ref(0)?.as_blob()?,
            r.get::<_, i64>(1)?
        ])?;
    }
    dst.execute_batch("COMMIT")?;
    Ok(())
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

    /// A backup of a running store holds the clicks acknowledged and not
    /// folded yet (they live in the click log's file), each once: a
    /// store opened on the copy counts folded and unfolded alike.
    #[tokio::test]
    async fn a_live_backup_carries_the_unfolded_clicks_once() {
        use crate::store::sqlite::clicks::tests::{add_link, click, counted};
        use shortlink_core::ipc::{BatchId, ClickBatch};
        let batch = |n: u8, count: u32| ClickBatch {
            batch_id: BatchId([n; 16]),
            clicks: vec![click(5, 100, false, None, count)],
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let store = super::super::SqliteStore::open(&path, 1, 10).unwrap();
        add_link(&store, 5, None).await;
        store.append_clicks(vec![batch(1, 2)], 1000).await.unwrap();
        store.fold_clicks().await.unwrap();
        // Batch 1 is folded (its log row stays until the next fold);
        // batches 2 and 3 are only in the log.
        store.append_clicks(vec![batch(2, 3)], 1000).await.unwrap();
        store.append_clicks(vec![batch(3, 4)], 1000).await.unwrap();
        let copy = dir.path().join("copy.db");
        backup_live(&path, &copy).unwrap();
        store.close();
        let restored = super::super::SqliteStore::open(&copy, 1, 10).unwrap();
        assert_eq!(counted(&restored, 5).await.0, 9);
        // Batch ids came along: a batch sent again is not counted again.
        assert_eq!(
            restored
                .append_clicks(vec![batch(3, 4)], 1000)
                .await
                .unwrap(),
            vec![false]
        );
        restored.fold_clicks().await.unwrap();
        assert_eq!(counted(&restored, 5).await.0, 9);
    }
}
