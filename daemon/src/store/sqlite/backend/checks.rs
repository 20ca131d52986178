//! [`CheckStore`] over SQLite: candidates and results are read on a reader
//! thread; claims and results are writer jobs.

use async_trait::async_trait;
use rusqlite::{params, OptionalExtension, Row};
use shortlink_core::check_mode::CheckMode;

use crate::store::sqlite::{changes, SqliteStore};
use crate::store::{CheckResult, CheckStore, CheckTarget, LinkCheck, Recorded, StoreResult};

/// The columns [`check_row`] reads, `c` being `link_checks` and `l` links.
const CHECK_COLUMNS: &str = "c.link_id, l.url, c.checked_at, c.status, c.error, c.failures";

fn check_row(r: &Row) -> rusqlite::Result<LinkCheck> {
    Ok(LinkCheck {
        link_id: r.get::<_, i64>(0)? as u64,
        url: r.get(1)?,
        checked_at: r.get(2)?,
        status: r.get::<_, Option<i64>>(3)?.map(|s| s as u16),
        error: r.get(4)?,
        failures: r.get::<_, i64>(5)? as u32,
    })
}

#[async_trait]
impl CheckStore for SqliteStore {
    async fn check_candidates(
        &self,
        after: u64,
        limit: u32,
        now: i64,
        checked_before: i64,
    ) -> StoreResult<Vec<CheckTarget>> {
        self.read(move |c| {
            Ok(c.prepare_cached(
                "SELECT l.id, l.url, l.check_mode FROM links l \
                 LEFT JOIN link_checks c ON c.link_id = l.id \
                 WHERE l.id > ?1 AND l.disabled = 0 AND l.taken_down = 0 AND (l.expires_at IS NULL OR l.expires_at > ?3) \
                 AND (l.check_mode IS NULL OR l.check_mode <> 'off') \
                 AND (c.link_id IS NULL OR ((c.checked_at IS NULL OR c.checked_at < ?4) \
                     AND c.claimed_until <= ?3)) \
                 ORDER BY l.id LIMIT ?2",
            )?
            .query_map(params![after as i64, limit, now, checked_before], |r| {
                let check = r
                    .get::<_, Option<String>>(2)?
                    .map(|m| CheckMode::parse(&m))
                    .transpose()
                    .map_err(|e| {
                        rusqlite::Error::FromSqlConversionFailure(
                            2,
                            rusqlite::types::Type::Text,
                            Box::new(e),
                        )
                    })?;
                Ok(CheckTarget {
                    link_id: r.get::<_, i64>(0)? as u64,
                    url: r.get(1)?,
                    check,
                })
            })?
            .collect::<rusqlite::Result<_>>()?)
        })
        .await
    }

    async fn claim_checks(
        &self,
        ids: Vec<u64>,
        now: i64,
        checked_before: i64,
        until: i64,
    ) -> StoreResult<Vec<u64>> {
        self.write(move |c| {
            let mut claim = c.prepare_cached(
                "INSERT INTO link_checks (link_id, claimed_until) VALUES (?1, ?4) \
                 ON CONFLICT (link_id) DO UPDATE SET claimed_until = ?4 \
                 WHERE claimed_until <= ?2 AND (checked_at IS NULL OR checked_at < ?3) \
                 RETURNING link_id",
            )?;
            let mut claimed = Vec::new();
            for id in ids {
                let mut rows = claim.query(params![id as i64, now, checked_before, until])?;
                if rows.next()?.is_some() {
                    claimed.push(id);
                }
            }
            Ok(claimed)
        })
        .await
    }

    async fn record_check(&self, r: CheckResult, fallback_after: u32) -> StoreResult<Recorded> {
        self.write(move |c| {
            let failures: Option<i64> = c
                .prepare_cached(
                    "UPDATE link_checks SET checked_at = ?2, status = ?3, error = ?4, \
                     failures = CASE ?5 WHEN 1 THEN failures + 1 WHEN 0 THEN 0 ELSE failures END, \
                     claimed_until = 0 WHERE link_id = ?1 RETURNING failures",
                )?
                .query_row(
                    params![
                        r.link_id as i64,
                        r.checked_at,
                        r.status,
                        r.error,
                        r.failed.map(i64::from)
                    ],
                    |row| row.get(0),
                )
                .optional()?;
            let Some(failures) = failures.map(|n| n as u32) else {
                return Ok(Recorded {
                    failures: 0,
                    switched: None,
                });
            };
            let broken = fallback_after > 0 && failures >= fallback_after;
            // Only a probe decides: a skipped one leaves the mark as it is.
            let switched = match r.failed {
                None => None,
                Some(_) => c
                    .prepare_cached(
                        "UPDATE links SET broken = ?2 WHERE id = ?1 AND broken <> ?2 RETURNING alias",
                    )?
                    .query_row(params![r.link_id as i64, broken], |row| {
                        row.get::<_, Option<String>>(0)
                    })
                    .optional()?,
            };
            if let Some(alias) = &switched {
                changes::record(c, r.link_id, alias.as_deref(), alias.as_deref())?;
            }
            Ok(Recorded {
                failures,
                switched: switched.map(|alias| (r.link_id, alias)),
            })
        })
        .await
    }

    async fn link_checks(&self, ids: Vec<u64>) -> StoreResult<Vec<LinkCheck>> {
        self.read(move |c| {
            let mut st = c.prepare_cached(&format!(
                "SELECT {CHECK_COLUMNS} FROM link_checks c LEFT JOIN links l ON l.id = c.link_id \
                 WHERE c.link_id = ?1 AND c.checked_at IS NOT NULL"
            ))?;
            let mut out = Vec::new();
            for id in ids {
                let mut rows = st.query_map([id as i64], check_row)?;
                if let Some(row) = rows.next() {
                    out.push(row?);
                }
            }
            Ok(out)
        })
        .await
    }

    async fn failing_checks(
        &self,
        min_failures: u32,
        after: u64,
        limit: u32,
    ) -> StoreResult<Vec<LinkCheck>> {
        self.read(move |c| {
            Ok(c.prepare_cached(&format!(
                "SELECT {CHECK_COLUMNS} FROM link_checks c JOIN links l ON l.id = c.link_id \
                 WHERE c.failures >= ?1 AND c.failures > 0 AND c.link_id > ?2 \
                 ORDER BY c.link_id LIMIT ?3"
            ))?
            .query_map(params![min_failures, after as i64, limit], check_row)?
            .collect::<rusqlite::Result<_>>()?)
        })
        .await
    }

    async fn count_failing(&self, min_failures: u32) -> StoreResult<u64> {
        self.read(move |c| {
            let n: i64 = c
                .prepare_cached(
                    "SELECT count(*) FROM link_checks c JOIN links l ON l.id = c.link_id \
                     WHERE c.failures >= ?1 AND c.failures > 0",
                )?
                .query_row([min_failures], |r| r.get(0))?;
            Ok(n as u64)
        })
        .await
    }
}
