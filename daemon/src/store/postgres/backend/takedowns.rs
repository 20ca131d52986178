//! [`TakedownStore`] over PostgreSQL, with the semantics of the SQLite
//! implementation (`crate::store::sqlite::backend::takedowns`): a takedown and its
//! undo are one transaction each, under one advisory lock so two nodes
//! never apply them at once; the switch re-checks each row's state as it
//! updates it, so an edit racing a takedown is never overwritten.

use async_trait::async_trait;
use deadpool_postgres::{GenericClient, Transaction};
use tokio_postgres::Row;

use super::links::{commit, counted};
use super::rows::failed;
use super::PgStore;
use crate::store::postgres::changes;
use crate::store::{
    ChangedLink, Matcher, NewTakedown, StoreError, StoreResult, Takedown, TakedownLink,
    TakedownStore, TakenDown, Undone, WebhookEvent,
};

/// The advisory lock every takedown and undo holds ("takedown" in ASCII).
const TAKEDOWN_LOCK: i64 = 0x74616b65646f776e;

const COLUMNS: &str = "id, kind, selector, reason, created_by, created_at, matched, disabled, \
                       undone_at, undone_by, restored";

fn record(r: &Row) -> Takedown {
    Takedown {
        id: r.get(0),
        kind: r.get(1),
        selector: r.get(2),
        reason: r.get(3),
        created_by: r.get(4),
        created_at: r.get(5),
        matched: r.get::<_, i64>(6) as u64,
        disabled: r.get::<_, i64>(7) as u64,
        undone_at: r.get(8),
        undone_by: r.get(9),
        restored: r.get::<_, Option<i64>>(10).map(|n| n as u64),
    }
}

async fn by_id(c: &impl GenericClient, id: i64) -> StoreResult<Option<Takedown>> {
    let row = c
        .query_opt(
            &format!("SELECT {COLUMNS} FROM takedowns WHERE id = $1"),
            &[&id],
        )
        .await
        .map_err(failed("reading a takedown"))?;
    Ok(row.as_ref().map(record))
}

async fn recorded(c: &impl GenericClient, id: i64) -> StoreResult<Takedown> {
    by_id(c, id)
        .await?
        .ok_or_else(|| StoreError::NotFound(format!("takedown {id}")))
}

async fn lock(tx: &Transaction<'_>) -> StoreResult<()> {
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&TAKEDOWN_LOCK])
        .await
        .map_err(failed("taking the takedown lock"))?;
    Ok(())
}

/// The ids of the links `matcher` covers.
async fn matching(tx: &Transaction<'_>, matcher: &Matcher) -> StoreResult<Vec<i64>> {
    let rows = match matcher {
        Matcher::Creator(who) => {
            tx.query(
                "SELECT id, url FROM links WHERE created_by = $1 \
                 OR created_by IN (SELECT 'key:' || k.id FROM api_keys k \
                     JOIN users u ON u.id = k.user_id WHERE 'user:' || u.name = $1)",
                &[who],
            )
            .await
        }
        Matcher::Urls {
            contains: Some(part),
            ..
        } => {
            tx.query(
                "SELECT id, url FROM links WHERE strpos(lower(url), $1) > 0",
                &[part],
            )
            .await
        }
        Matcher::Urls { contains: None, .. } => tx.query("SELECT id, url FROM links", &[]).await,
    }
    .map_err(failed("reading the links a takedown matches"))?;
    Ok(rows
        .iter()
        .filter(|r| match matcher {
            Matcher::Creator(_) => true,
            Matcher::Urls { test, .. } => test(r.get::<_, &str>(1)),
        })
        .map(|r| r.get(0))
        .collect())
}

fn changed_links(rows: &[Row]) -> Vec<(i64, Option<String>)> {
    rows.iter().map(|r| (r.get(0), r.get(1))).collect()
}

fn as_changed(links: Vec<(i64, Option<String>)>) -> Vec<ChangedLink> {
    links.into_iter().map(|(id, a)| (id as u64, a)).collect()
}

async fn take_down(tx: &Transaction<'_>, t: &NewTakedown) -> StoreResult<Option<TakenDown>> {
    lock(tx).await?;
    if t.once {
        let last = tx
            .query_opt(
                "SELECT selector FROM takedowns WHERE kind = $1 ORDER BY id DESC LIMIT 1",
                &[&t.kind],
            )
            .await
            .map_err(failed("reading the last takedown"))?;
        let same = last
            .as_ref()
            .is_some_and(|r| r.get::<_, &str>(0) == t.selector);
        if same || (last.is_none() && t.unless_first) {
            return Ok(None);
        }
    }
    let id: i64 = tx
        .query_one(
            "INSERT INTO takedowns (kind, selector, reason, created_by, created_at, switch_off) \
             VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
            &[&t.kind, &t.selector, &t.reason, &t.by, &t.at, &t.switch_off],
        )
        .await
        .map_err(failed("recording a takedown"))?
        .get(0);
    let matched = matching(tx, &t.matcher).await?;
    let switched = if t.switch_off {
        tx.query(
            "UPDATE links SET taken_down = true, updated_at = $2 \
             WHERE id = ANY($1) AND NOT taken_down RETURNING id, alias",
            &[&matched, &t.at],
        )
        .await
        .map_err(failed("switching off the links of a takedown"))?
    } else {
        Vec::new()
    };
    let changed = changed_links(&switched);
    let off: Vec<u64> = changed.iter().map(|(id, _)| *id as u64).collect();
    super::webhooks::link_events(tx, WebhookEvent::Disabled, &off, t.at).await?;
    let changed_ids: std::collections::HashSet<i64> = changed.iter().map(|(id, _)| *id).collect();
    let flags: Vec<bool> = matched.iter().map(|id| changed_ids.contains(id)).collect();
    tx.execute(
        "INSERT INTO takedown_links (takedown_id, link_id, changed) \
         SELECT $1, u.id, u.changed FROM unnest($2::bigint[], $3::bool[]) AS u(id, changed)",
        &[&id, &matched, &flags],
    )
    .await
    .map_err(failed("recording the links of a takedown"))?;
    changes::append_in_place(tx, &changed).await?;
    tx.execute(
        "UPDATE takedowns SET matched = $2, disabled = $3 WHERE id = $1",
        &[&id, &(matched.len() as i64), &(changed.len() as i64)],
    )
    .await
    .map_err(failed("counting the links of a takedown"))?;
    Ok(Some(TakenDown {
        record: recorded(tx, id).await?,
        changed: as_changed(changed),
    }))
}

async fn undo(tx: &Transaction<'_>, id: i64, by: &str, at: i64) -> StoreResult<Undone> {
    lock(tx).await?;
    let Some(found) = by_id(tx, id).await? else {
        return Ok(Undone::NotFound);
    };
    if found.undone_at.is_some() {
        return Ok(Undone::Already(found));
    }
    let switched = tx
        .query(
            // Lifted: this takedown's links that no other switching
            // takedown in force covers (whoever took them down first).
            "UPDATE links SET taken_down = false, updated_at = $2 WHERE taken_down AND id IN ( \
                 SELECT t.link_id FROM takedown_links t \
                 WHERE t.takedown_id = $1 \
                 AND NOT EXISTS (SELECT 1 FROM takedown_links o \
                     JOIN takedowns d ON d.id = o.takedown_id \
                     WHERE o.link_id = t.link_id AND o.takedown_id <> $1 \
                     AND d.undone_at IS NULL AND d.switch_off)) \
             RETURNING id, alias",
            &[&id, &at],
        )
        .await
        .map_err(failed("switching back on the links of a takedown"))?;
    let changed = changed_links(&switched);
    let on: Vec<u64> = changed.iter().map(|(id, _)| *id as u64).collect();
    super::webhooks::link_events(tx, WebhookEvent::Updated, &on, at).await?;
    changes::append_in_place(tx, &changed).await?;
    tx.execute(
        "UPDATE takedowns SET undone_at = $2, undone_by = $3, restored = $4 WHERE id = $1",
        &[&id, &at, &by, &(changed.len() as i64)],
    )
    .await
    .map_err(failed("recording the undo of a takedown"))?;
    Ok(Undone::Done {
        record: recorded(tx, id).await?,
        changed: as_changed(changed),
    })
}

#[async_trait]
impl TakedownStore for PgStore {
    async fn take_down(&self, t: NewTakedown) -> StoreResult<Option<TakenDown>> {
        let result = async {
            let mut client = self.pg().get().await?;
            let tx = client
                .transaction()
                .await
                .map_err(failed("starting a takedown"))?;
            let done = take_down(&tx, &t).await?;
            commit(tx).await?;
            if done.as_ref().is_some_and(|d| !d.changed.is_empty()) {
                self.pg.wake(&client).await;
            }
            Ok(done)
        }
        .await;
        counted(self.stats(), result)
    }

    async fn undo_takedown(&self, id: i64, by: String, at: i64) -> StoreResult<Undone> {
        let result = async {
            let mut client = self.pg().get().await?;
            let tx = client
                .transaction()
                .await
                .map_err(failed("starting the undo of a takedown"))?;
            let done = undo(&tx, id, &by, at).await?;
            commit(tx).await?;
            if matches!(&done, Undone::Done { changed, .. } if !changed.is_empty()) {
                self.pg.wake(&client).await;
            }
            Ok(done)
        }
        .await;
        counted(self.stats(), result)
    }

    async fn taken_down_hosts(&self) -> StoreResult<Vec<String>> {
        let c = self.pg().get().await?;
        let rows = c
            .query(
                "SELECT DISTINCT selector FROM takedowns \
                 WHERE kind = 'host' AND undone_at IS NULL AND switch_off",
                &[],
            )
            .await
            .map_err(failed("reading the hosts taken down"))?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    async fn takedowns(&self, limit: u32) -> StoreResult<Vec<Takedown>> {
        let c = self.pg().get().await?;
        let rows = c
            .query(
                &format!("SELECT {COLUMNS} FROM takedowns ORDER BY id DESC LIMIT $1"),
                &[&i64::from(limit)],
            )
            .await
            .map_err(failed("listing takedowns"))?;
        Ok(rows.iter().map(record).collect())
    }

    async fn takedown(&self, id: i64) -> StoreResult<Option<Takedown>> {
        let c = self.pg().get().await?;
        by_id(&c, id).await
    }

    async fn takedown_links(
        &self,
        id: i64,
        after: u64,
        limit: u32,
    ) -> StoreResult<Vec<TakedownLink>> {
        let c = self.pg().get().await?;
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        let rows = c
            .query(
                "SELECT t.link_id, t.changed, l.alias, l.url FROM takedown_links t \
                 LEFT JOIN links l ON l.id = t.link_id \
                 WHERE t.takedown_id = $1 AND t.link_id > $2 ORDER BY t.link_id LIMIT $3",
                &[&id, &after, &i64::from(limit)],
            )
            .await
            .map_err(failed("listing the links of a takedown"))?;
        Ok(rows
            .iter()
            .map(|r| TakedownLink {
                link_id: r.get::<_, i64>(0) as u64,
                switched_off: r.get(1),
                alias: r.get(2),
                url: r.get(3),
            })
            .collect())
    }
}
