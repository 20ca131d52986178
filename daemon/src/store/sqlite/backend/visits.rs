//! [`VisitStore`] over SQLite: a lease reads the link and its lease row
//! and writes the new total in one writer job, so leases follow one
//! another and never pass the limit together.

use async_trait::async_trait;
use rusqlite::{params, Connection, OptionalExtension};

use crate::store::sqlite::SqliteStore;
use crate::store::visits::{grant, returned, LeaseState};
use crate::store::{StoreResult, VisitStore};

/// The link's limit, people's visits, creation time and whether it can
/// take visits at `now`; and its leased total (0 for none, or a row left
/// by a link that had the id before).
fn state(c: &Connection, id: u64, now: i64) -> StoreResult<Option<LeaseState>> {
    let link = c
        .prepare_cached(
            "SELECT max_visits, clicks - bot_clicks, created_at, \
             disabled = 0 AND taken_down = 0 AND (expires_at IS NULL OR expires_at > ?2) \
             FROM links WHERE id = ?1",
        )?
        .query_row(params![id as i64, now], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })
        .optional()?;
    let Some((max, humans, created, open)) = link else {
        return Ok(None);
    };
    let leased: i64 = c
        .prepare_cached("SELECT leased FROM visit_leases WHERE link_id = ?1 AND link_created = ?2")?
        .query_row(params![id as i64, created], |r| r.get(0))
        .optional()?
        .unwrap_or(0);
    Ok(Some(LeaseState {
        max,
        humans,
        created,
        open,
        leased,
    }))
}

fn record(c: &Connection, id: u64, created: i64, leased: i64) -> StoreResult<()> {
    c.prepare_cached(
        "INSERT INTO visit_leases (link_id, link_created, leased) VALUES (?1, ?2, ?3) \
         ON CONFLICT (link_id) DO UPDATE SET link_created = ?2, leased = ?3",
    )?
    .execute(params![id as i64, created, leased])?;
    Ok(())
}

#[async_trait]
impl VisitStore for SqliteStore {
    async fn lease_visits(&self, id: u64, want: u32, now: i64) -> StoreResult<u32> {
        self.write(move |c| {
            let Some(s) = state(c, id, now)?.filter(|s| s.open) else {
                return Ok(0);
            };
            let (granted, total) = grant(s.max, s.humans, s.leased, want);
            if granted > 0 && s.max.is_some() {
                record(c, id, s.created, total)?;
            }
            Ok(granted)
        })
        .await
    }

    async fn return_visits(&self, id: u64, count: u32) -> StoreResult<()> {
        self.write(move |c| {
            if let Some(s) = state(c, id, i64::MIN)? {
                record(c, id, s.created, returned(s.humans, s.leased, count))?;
            }
            Ok(())
        })
        .await
    }
}
