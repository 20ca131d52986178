//! Single plain creates that arrive together share one statement, as the
//! SQLite writer groups the jobs queued behind it into one transaction.
//!
//! A create of its own on PostgreSQL is a transaction of its own: a commit
//! and a WAL flush each, about half of the server's time per create. Here
//! a create joins a queue; at most [`IN_FLIGHT`] drains run at once, each
//! taking what queued meanwhile (up to [`MAX_GROUP`]) into one statement
//! (`plain::insert_group`). A create that finds no drain running starts
//! one at once, so a lone create waits for nobody; under load the queue
//! fills while the drain is in its statement.
//!
//! Each create is answered after its group committed. A group the server
//! refuses stored nothing (it is one statement), and each of its creates
//! is then written alone, so one bad link fails only its own create. A
//! group that failed for any other reason (the connection lost, the
//! server gone) may or may not have committed: every create of it hears
//! that error, as a lone create would.
//!
//! Drains are tasks of their own, so a caller that goes away (its client
//! hung up) cannot cut a group short for the others.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};

use tokio::sync::{oneshot, OwnedSemaphorePermit, Semaphore};

use super::links::counted;
use super::plain::{self, MAX_GROUP};
use super::rows::failed;
use crate::store::postgres::Pg;
use crate::store::{Inserted, NewLink, StoreError, StoreResult, StoreStats};

/// Most groups being written at once (each holds a pooled connection).
/// One, as the SQLite writer: `bench/creates.py --pg`, 16 connections,
/// measured 1 / 2 / 4 at 6.9 / 4.0 / 2.4 creates per commit, 39 / 56 /
/// 78 µs of PostgreSQL CPU per create, and the same rate for 1 and 2.
const IN_FLIGHT: usize = 1;

/// A create waiting for its group.
struct Waiting {
    /// The link and when it was asked for.
    job: (NewLink, i64),
    answer: oneshot::Sender<StoreResult<Inserted>>,
}

/// The queue of single plain creates and the drains writing it.
pub(super) struct CreateGroups {
    queue: Mutex<Vec<Waiting>>,
    drains: Arc<Semaphore>,
}

impl CreateGroups {
    pub(super) fn new() -> Arc<Self> {
        Arc::new(Self {
            queue: Mutex::new(Vec::new()),
            drains: Arc::new(Semaphore::new(IN_FLIGHT)),
        })
    }

    /// Writes `new` in the next group; answers once that group committed.
    pub(super) async fn create(
        self: &Arc<Self>,
        pg: &Pg,
        stats: &Arc<StoreStats>,
        new: NewLink,
        now: i64,
    ) -> StoreResult<Inserted> {
        let (answer, answered) = oneshot::channel();
        self.lock().push(Waiting {
            job: (new, now),
            answer,
        });
        // Queued first: a drain that just found the queue empty gives its
        // permit back before looking again (`drain`), so either this finds
        // the permit or that drain finds this create.
        if let Ok(permit) = Arc::clone(&self.drains).try_acquire_owned() {
            let drain = Arc::clone(self).drain(pg.clone(), Arc::clone(stats), permit);
            tokio::spawn(drain);
        }
        answered.await.unwrap_or_else(|_| {
            Err(StoreError::Commit(
                "the grouped insert of this link was dropped".into(),
            ))
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Waiting>> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The oldest queued creates, at most [`MAX_GROUP`].
    fn take(&self) -> Vec<Waiting> {
        let mut queue = self.lock();
        let n = queue.len().min(MAX_GROUP);
        queue.drain(..n).collect()
    }

    /// Writes groups until the queue is empty.
    async fn drain(self: Arc<Self>, pg: Pg, stats: Arc<StoreStats>, permit: OwnedSemaphorePermit) {
        let mut permit = Some(permit);
        loop {
            let group = self.take();
            if !group.is_empty() {
                write(&pg, &stats, group).await;
                continue;
            }
            drop(permit.take());
            if self.lock().is_empty() {
                return;
            }
            // A create queued after `take` and found no permit free.
            match Arc::clone(&self.drains).try_acquire_owned() {
                Ok(p) => permit = Some(p),
                // Another drain has it, and will find that create.
                Err(_) => return,
            }
        }
    }
}

/// Writes one group and answers each of its creates.
async fn write(pg: &Pg, stats: &StoreStats, mut group: Vec<Waiting>) {
    let client = match pg.get().await {
        Ok(client) => client,
        Err(e) => return fail_all(stats, group.into_iter().map(|w| w.answer), e.into()),
    };
    if group.len() == 1 {
        if let Some(Waiting {
            job: (new, now),
            answer,
        }) = group.pop()
        {
            let _ = answer.send(counted(stats, plain::insert_one(&client, new, now).await));
        }
        return;
    }
    let jobs: Vec<(NewLink, i64)>;
    let answers: Vec<oneshot::Sender<StoreResult<Inserted>>>;
    (jobs, answers) = group.into_iter().map(|w| (w.job, w.answer)).unzip();
    match plain::insert_group(&client, &jobs).await {
        Ok(Ok(())) => {
            stats.transactions.fetch_add(1, Relaxed);
            stats.writes.fetch_add(jobs.len() as u64, Relaxed);
            for ((new, _), answer) in jobs.into_iter().zip(answers) {
                let _ = answer.send(Ok(Inserted::New(new.link)));
            }
        }
        // Refused by the server: nothing of it is stored.
        Ok(Err(e)) if e.as_db_error().is_some() => {
            tracing::debug!(error = %e, links = jobs.len(), "a grouped insert was refused: writing its links one by one");
            for ((new, now), answer) in jobs.into_iter().zip(answers) {
                let _ = answer.send(counted(stats, plain::insert_one(&client, new, now).await));
            }
        }
        Ok(Err(e)) => fail_all(stats, answers, failed("inserting a group of links")(e)),
        Err(e) => fail_all(stats, answers, e),
    }
}

/// Answers every create of a group with (a copy of) `e`.
fn fail_all(
    stats: &StoreStats,
    answers: impl IntoIterator<Item = oneshot::Sender<StoreResult<Inserted>>>,
    e: StoreError,
) {
    for answer in answers {
        stats.write_errors.fetch_add(1, Relaxed);
        let _ = answer.send(Err(copy(&e)));
    }
}

/// `e` again, for the next create of a failed group: an outage stays an
/// outage (the API answers 503 to it), anything else keeps its message.
fn copy(e: &StoreError) -> StoreError {
    match e {
        StoreError::Unavailable(s) => StoreError::Unavailable(s.clone()),
        StoreError::Closed => StoreError::Closed,
        StoreError::Commit(s) => StoreError::Commit(s.clone()),
        StoreError::Database(inner) => StoreError::Database(inner.to_string().into()),
        e => StoreError::Database(e.to_string().into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::contract_teams::link_of as plain;
    use crate::store::contract_webhooks::created_hook;
    use crate::store::teams::DEFAULT_TEAM;
    use crate::store::{LinkStore, TeamStore, WebhookStore};

    async fn stored_ids(store: &super::super::PgStore) -> Vec<i64> {
        let client = store.pg().get().await.unwrap();
        let rows = client
            .query("SELECT id FROM links ORDER BY id", &[])
            .await
            .unwrap();
        rows.iter().map(|r| r.get(0)).collect()
    }

    /// Creates sent at once are written a group to a statement; each is
    /// answered as stored, and each link of a subscribed team has its one
    /// webhook delivery.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn creates_sent_together_share_statements_and_each_is_answered() {
        let (_cluster, store) = crate::store::postgres::backend::tests::pg_store("groups").await;
        let store = Arc::new(store);
        let sales = store.add_team("sales".into(), 1).await.unwrap().id;
        let hook = store.add_webhook(created_hook(DEFAULT_TEAM)).await.unwrap();
        let (writes, transactions) = (
            store.stats().writes.load(Relaxed),
            store.stats().transactions.load(Relaxed),
        );
        let team = move |id: u64| {
            if id.is_multiple_of(3) {
                sales
            } else {
                DEFAULT_TEAM
            }
        };
        let creates: Vec<_> = (1..=300u64)
            .map(|id| {
                let store = Arc::clone(&store);
                tokio::spawn(async move { store.insert_links(vec![plain(id, team(id))], 1).await })
            })
            .collect();
        for (id, create) in (1..=300u64).zip(creates) {
            let out = create.await.unwrap().unwrap();
            assert!(
                matches!(&out[..], [Inserted::New(l)] if l.id == id),
                "{out:?}"
            );
        }
        assert_eq!(stored_ids(&store).await, (1..=300).collect::<Vec<i64>>());
        let writes = store.stats().writes.load(Relaxed) - writes;
        let transactions = store.stats().transactions.load(Relaxed) - transactions;
        assert_eq!(writes, 300);
        assert!(
            transactions < 300,
            "{transactions} transactions: nothing was grouped"
        );
        let mut delivered: Vec<u64> = store
            .deliveries(hook.id, None, 1000)
            .await
            .unwrap()
            .into_iter()
            .map(|d| {
                let id = d.link_id.unwrap();
                assert!(d
                    .payload
                    .contains(&format!("\"url\":\"https://e.com/{id}\"")));
                id
            })
            .collect();
        delivered.sort_unstable();
        let subscribed: Vec<u64> = (1..=300).filter(|&id| team(id) == DEFAULT_TEAM).collect();
        assert_eq!(delivered, subscribed);
    }

    /// A group the server refuses stores nothing, and each of its creates
    /// is then tried alone: only the bad one fails.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_refused_group_fails_only_its_bad_create() {
        let (_cluster, store) = crate::store::postgres::backend::tests::pg_store("refused").await;
        store
            .insert_links(vec![plain(5, DEFAULT_TEAM)], 1)
            .await
            .unwrap();
        let mut answers = Vec::new();
        let group = [4, 5, 6]
            .into_iter()
            .map(|id| {
                let (answer, answered) = oneshot::channel();
                answers.push(answered);
                Waiting {
                    job: (plain(id, DEFAULT_TEAM), 1),
                    answer,
                }
            })
            .collect();
        let errors = store.stats().write_errors.load(Relaxed);
        write(store.pg(), store.stats(), group).await;
        let mut out = Vec::new();
        for answered in answers {
            out.push(answered.await.unwrap());
        }
        assert!(
            matches!(&out[0], Ok(Inserted::New(l)) if l.id == 4),
            "{out:?}"
        );
        let refused = out[1].as_ref().unwrap_err().to_string();
        assert!(refused.contains("links_pkey"), "{refused}");
        assert!(
            matches!(&out[2], Ok(Inserted::New(l)) if l.id == 6),
            "{out:?}"
        );
        assert_eq!(stored_ids(&store).await, [4, 5, 6]);
        assert_eq!(store.stats().write_errors.load(Relaxed), errors + 1);
    }
}
