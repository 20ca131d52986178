//! [`CheckStore`] over PostgreSQL, as on SQLite
//! (`crate::store::sqlite::backend::checks`): a claim is one upsert over the page
//! whose `WHERE` admits only rows not claimed and not checked lately, so
//! two nodes sweeping the same links probe each once.

use async_trait::async_trait;
use shortlink_core::check_mode::CheckMode;
use tokio_postgres::Row;

use super::links::{commit, counted};
use super::rows::failed;
use super::PgStore;
use crate::store::postgres::changes;
use crate::store::{
    CheckResult, CheckStore, CheckTarget, LinkCheck, Recorded, StoreError, StoreResult,
};

const CHECK_COLUMNS: &str = "c.link_id, l.url, c.checked_at, c.status, c.error, c.failures";

fn check_row(r: &Row) -> LinkCheck {
    LinkCheck {
        link_id: r.get::<_, i64>(0) as u64,
        url: r.get(1),
        checked_at: r.get(2),
        status: r.get::<_, Option<i32>>(3).map(|s| s as u16),
        error: r.get(4),
        failures: r.get::<_, i32>(5) as u32,
    }
}

fn bigints(ids: &[u64]) -> Vec<i64> {
    ids.iter().map(|&id| id as i64).collect()
}

#[async_trait]
impl CheckStore for PgStore {
    async fn check_candidates(
        &self,
        after: u64,
        limit: u32,
        now: i64,
        checked_before: i64,
    ) -> StoreResult<Vec<CheckTarget>> {
        let c = self.pg().get().await?;
        let rows = c
            .query(
                "SELECT l.id, l.url, l.check_mode FROM links l \
                 LEFT JOIN link_checks c ON c.link_id = l.id \
                 WHERE l.id > $1 AND NOT l.disabled AND NOT l.taken_down AND (l.expires_at IS NULL OR l.expires_at > $3) \
                 AND (l.check_mode IS NULL OR l.check_mode <> 'off') \
                 AND (c.link_id IS NULL OR ((c.checked_at IS NULL OR c.checked_at < $4) \
                     AND c.claimed_until <= $3)) \
                 ORDER BY l.id LIMIT $2",
                &[&(after as i64), &i64::from(limit), &now, &checked_before],
            )
            .await
            .map_err(failed("reading links to check"))?;
        rows.iter()
            .map(|r| {
                let id = r.get::<_, i64>(0) as u64;
                let check = r
                    .get::<_, Option<&str>>(2)
                    .map(CheckMode::parse)
                    .transpose()
                    .map_err(|e| StoreError::Corrupt(format!("link {id} has {e}")))?;
                Ok(CheckTarget {
                    link_id: id,
                    url: r.get(1),
                    check,
                })
            })
            .collect()
    }

    async fn claim_checks(
        &self,
        ids: Vec<u64>,
        now: i64,
        checked_before: i64,
        until: i64,
    ) -> StoreResult<Vec<u64>> {
        let c = self.pg().get().await?;
        let rows = c
            .query(
                "INSERT INTO link_checks (link_id, claimed_until) \
                 SELECT id, $4 FROM unnest($1::bigint[]) AS u(id) \
                 ON CONFLICT (link_id) DO UPDATE SET claimed_until = EXCLUDED.claimed_until \
                 WHERE link_checks.claimed_until <= $2 \
                 AND (link_checks.checked_at IS NULL OR link_checks.checked_at < $3) \
                 RETURNING link_id",
                &[&bigints(&ids), &now, &checked_before, &until],
            )
            .await
            .map_err(failed("claiming links to check"))?;
        Ok(rows.iter().map(|r| r.get::<_, i64>(0) as u64).collect())
    }

    async fn record_check(&self, r: CheckResult, fallback_after: u32) -> StoreResult<Recorded> {
        let result = async {
            let mut client = self.pg().get().await?;
            let tx = client
                .transaction()
                .await
                .map_err(failed("starting to record a link check"))?;
            let status = r.status.map(i32::from);
            let row = tx
                .query_opt(
                    "UPDATE link_checks SET checked_at = $2, status = $3, error = $4, \
                     failures = CASE WHEN $5::boolean THEN failures + 1 \
                         WHEN NOT $5::boolean THEN 0 ELSE failures END, \
                     claimed_until = 0 WHERE link_id = $1 RETURNING failures",
                    &[&(r.link_id as i64), &r.checked_at, &status, &r.error, &r.failed],
                )
                .await
                .map_err(failed("recording a link check"))?;
            let Some(failures) = row.map(|row| row.get::<_, i32>(0) as u32) else {
                return Ok(Recorded {
                    failures: 0,
                    switched: None,
                });
            };
            let broken = fallback_after > 0 && failures >= fallback_after;
            let switched = match r.failed {
                None => None,
                Some(_) => tx
                    .query_opt(
                        "UPDATE links SET broken = $2 WHERE id = $1 AND broken <> $2 RETURNING alias",
                        &[&(r.link_id as i64), &broken],
                    )
                    .await
                    .map_err(failed("marking a link broken or healthy"))?
                    .map(|row| row.get::<_, Option<String>>(0)),
            };
            if let Some(alias) = &switched {
                changes::append(&tx, r.link_id, alias.as_deref(), alias.as_deref()).await?;
            }
            commit(tx).await?;
            if switched.is_some() {
                self.pg.wake(&client).await;
            }
            Ok(Recorded {
                failures,
                switched: switched.map(|alias| (r.link_id, alias)),
            })
        }
        .await;
        counted(self.stats(), result)
    }

    async fn link_checks(&self, ids: Vec<u64>) -> StoreResult<Vec<LinkCheck>> {
        let c = self.pg().get().await?;
        let rows = c
            .query(
                &format!(
                    "SELECT {CHECK_COLUMNS} FROM link_checks c LEFT JOIN links l ON l.id = c.link_id \
                     WHERE c.link_id = ANY($1) AND c.checked_at IS NOT NULL ORDER BY c.link_id"
                ),
                &[&bigints(&ids)],
            )
            .await
            .map_err(failed("reading link checks"))?;
        Ok(rows.iter().map(check_row).collect())
    }

    async fn failing_checks(
        &self,
        min_failures: u32,
        after: u64,
        limit: u32,
    ) -> StoreResult<Vec<LinkCheck>> {
        let c = self.pg().get().await?;
        let rows = c
            .query(
                &format!(
                    "SELECT {CHECK_COLUMNS} FROM link_checks c JOIN links l ON l.id = c.link_id \
                     WHERE c.failures >= $1 AND c.failures > 0 AND c.link_id > $2 \
                     ORDER BY c.link_id LIMIT $3"
                ),
                &[&(min_failures as i32), &(after as i64), &i64::from(limit)],
            )
            .await
            .map_err(failed("listing failing links"))?;
        Ok(rows.iter().map(check_row).collect())
    }

    async fn count_failing(&self, min_failures: u32) -> StoreResult<u64> {
        let c = self.pg().get().await?;
        let row = c
            .query_one(
                "SELECT count(*) FROM link_checks c JOIN links l ON l.id = c.link_id \
                 WHERE c.failures >= $1 AND c.failures > 0",
                &[&(min_failures as i32)],
            )
            .await
            .map_err(failed("counting failing links"))?;
        Ok(row.get::<_, i64>(0) as u64)
    }
}
