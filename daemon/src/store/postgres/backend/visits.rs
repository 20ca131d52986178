//! [`VisitStore`] over PostgreSQL, as on SQLite
//! (`crate::store::sqlite::backend::visits`): a lease locks the link's row
//! of `visit_leases` (made first if missing), so leases asked on several
//! nodes at once are served one after the other and never pass the limit
//! together; `links` itself is only read.

use async_trait::async_trait;
use deadpool_postgres::Transaction;

use super::links::{commit, counted};
use super::rows::failed;
use super::PgStore;
use crate::store::visits::{grant, returned, LeaseState};
use crate::store::{StoreResult, VisitStore};

/// What a lease needs of link `id`: its limit, people's visits, creation
/// time, whether it takes visits at `now`, and its leased total, the lease
/// row locked for the rest of the transaction.
async fn state(tx: &Transaction<'_>, id: u64, now: i64) -> StoreResult<Option<LeaseState>> {
    let id = id as i64;
    let Some(link) = tx
        .query_opt(
            "SELECT max_visits, clicks - bot_clicks, created_at, \
             NOT disabled AND NOT taken_down AND (expires_at IS NULL OR expires_at > $2) \
             FROM links WHERE id = $1",
            &[&id, &now],
        )
        .await
        .map_err(failed("reading a limited link"))?
    else {
        return Ok(None);
    };
    let created: i64 = link.get(2);
    tx.execute(
        "INSERT INTO visit_leases (link_id, link_created, leased) VALUES ($1, $2, 0) \
         ON CONFLICT (link_id) DO NOTHING",
        &[&id, &created],
    )
    .await
    .map_err(failed("making a visit lease row"))?;
    let lease = tx
        .query_one(
            "SELECT link_created, leased FROM visit_leases WHERE link_id = $1 FOR UPDATE",
            &[&id],
        )
        .await
        .map_err(failed("locking a visit lease row"))?;
    // A row left by a link that had the id before (recycling) counts nothing.
    let leased = if lease.get::<_, i64>(0) == created {
        lease.get(1)
    } else {
        0
    };
    Ok(Some(LeaseState {
        max: link.get(0),
        humans: link.get(1),
        created,
        open: link.get(3),
        leased,
    }))
}

async fn record(tx: &Transaction<'_>, id: u64, created: i64, leased: i64) -> StoreResult<()> {
    tx.execute(
        "UPDATE visit_leases SET link_created = $2, leased = $3 WHERE link_id = $1",
        &[&(id as i64), &created, &leased],
    )
    .await
    .map_err(failed("recording a visit lease"))?;
    Ok(())
}

#[async_trait]
impl VisitStore for PgStore {
    async fn lease_visits(&self, id: u64, want: u32, now: i64) -> StoreResult<u32> {
        let result = async {
            let mut client = self.pg().get().await?;
            let tx = client
                .transaction()
                .await
                .map_err(failed("starting a visit lease"))?;
            let granted = match state(&tx, id, now).await?.filter(|s| s.open) {
                Some(s) => {
                    let (granted, total) = grant(s.max, s.humans, s.leased, want);
                    if granted > 0 && s.max.is_some() {
                        record(&tx, id, s.created, total).await?;
                    }
                    granted
                }
                None => 0,
            };
            commit(tx).await?;
            Ok(granted)
        }
        .await;
        counted(self.stats(), result)
    }

    async fn return_visits(&self, id: u64, count: u32) -> StoreResult<()> {
        let result = async {
            let mut client = self.pg().get().await?;
            let tx = client
                .transaction()
                .await
                .map_err(failed("starting to take visits back"))?;
            if let Some(s) = state(&tx, id, i64::MIN).await? {
                record(&tx, id, s.created, returned(s.humans, s.leased, count)).await?;
            }
            commit(tx).await
        }
        .await;
        counted(self.stats(), result)
    }
}
