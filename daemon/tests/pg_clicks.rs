//! Click batches on a real PostgreSQL: a batch counts once by its id,
//! however often and from however many nodes it is sent, and across a
//! PostgreSQL restart.

mod pg_common;

use std::time::Duration;

use pg_common::{add_link, migrated};
use shortlinkd::store::postgres::changes::{self, LogRead};
use shortlinkd::store::postgres::clicks::{record_batch, BatchOutcome, ClickDelta};
use shortlinkd::store::postgres::Pg;
use testpg::PgCluster;

fn delta(link_id: u64, hour: i64, bot: bool, referrer: &str, count: i64) -> ClickDelta {
    ClickDelta {
        link_id,
        hour,
        device: 1,
        bot,
        referrer: referrer.into(),
        country: "--".into(),
        count,
    }
}

async fn send(pg: &Pg, id: &[u8], deltas: &[ClickDelta]) -> BatchOutcome {
    let mut client = pg.get().await.unwrap();
    let tx = client.transaction().await.unwrap();
    let outcome = record_batch(&tx, id, 1_700_000_000, deltas, &[])
        .await
        .unwrap();
    tx.commit().await.unwrap();
    outcome
}

/// (clicks, bot_clicks) of a link and its per-hour rows.
fn counts(cluster: &PgCluster, db: &str, id: i64) -> (String, String) {
    (
        cluster.psql(
            db,
            &format!("SELECT clicks || '/' || bot_clicks FROM links WHERE id = {id}"),
        ),
        cluster.psql(
            db,
            &format!(
                "SELECT string_agg(hour || ':' || bot || ':' || referrer || '=' || count, ' ' \
                 ORDER BY hour, bot, referrer) FROM clicks WHERE link_id = {id}"
            ),
        ),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_batch_counts_once_when_resent_concurrently_and_after_a_restart() {
    let cluster = PgCluster::start("clicks");
    let pg = migrated(&cluster, "clicks").await;
    add_link(&pg, 1, None, None).await;
    add_link(&pg, 2, None, None).await;
    let batch = [
        delta(1, 10, false, "", 3),
        delta(1, 10, true, "", 1),
        delta(1, 11, false, "example.com", 2),
        delta(2, 10, false, "", 5),
        delta(77, 10, false, "", 9), // no such link: dropped
    ];
    let first = send(&pg, b"batch-0001", &batch).await;
    assert!(first.counted_now);
    assert_eq!(first.counted, 11);
    let expected = (
        "6/1".to_string(),
        "10:false:=3 10:true:=1 11:false:example.com=2".to_string(),
    );
    assert_eq!(counts(&cluster, "clicks", 1), expected);
    // Sent again, and by two nodes at once: nothing more.
    assert_eq!(
        send(&pg, b"batch-0001", &batch).await,
        BatchOutcome::default()
    );
    let (a, b) = (pg.clone(), pg.clone());
    let both = tokio::join!(
        async { send(&a, b"batch-0002", &batch[3..4]).await },
        async { send(&b, b"batch-0002", &batch[3..4]).await }
    );
    assert_eq!(both.0.counted_now as u8 + both.1.counted_now as u8, 1);
    assert_eq!(
        cluster.psql("clicks", "SELECT clicks FROM links WHERE id = 2"),
        "10"
    );
    // After a PostgreSQL restart, a retry of an acknowledged batch.
    cluster.stop();
    cluster.restart();
    assert!(cluster.wait_ready(Duration::from_secs(10)));
    let mut retried = None;
    for _ in 0..50 {
        // The pool's old connections went with the server: retry as a daemon would.
        if let Ok(mut client) = pg.get().await {
            if let Ok(tx) = client.transaction().await {
                let o = record_batch(&tx, b"batch-0001", 0, &batch, &[])
                    .await
                    .unwrap();
                tx.commit().await.unwrap();
                retried = Some(o);
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(retried, Some(BatchOutcome::default()));
    assert_eq!(counts(&cluster, "clicks", 1), expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rolled_back_batch_counts_when_resent_and_a_limit_reached_is_logged() {
    let cluster = PgCluster::start("limits");
    let pg = migrated(&cluster, "limits").await;
    add_link(&pg, 5, Some("sale"), Some(4)).await;
    {
        let mut client = pg.get().await.unwrap();
        let tx = client.transaction().await.unwrap();
        record_batch(&tx, b"lost", 0, &[delta(5, 1, false, "", 2)], &[])
            .await
            .unwrap();
        tx.rollback().await.unwrap();
    }
    let o = send(&pg, b"lost", &[delta(5, 1, false, "", 2)]).await;
    assert!(o.counted_now && o.exhausted.is_empty(), "{o:?}");
    // Bots do not count towards the limit; the third and fourth human do.
    let o = send(&pg, b"b2", &[delta(5, 1, true, "", 7)]).await;
    assert!(o.exhausted.is_empty(), "{o:?}");
    let o = send(&pg, b"b3", &[delta(5, 2, false, "", 2)]).await;
    assert_eq!(o.exhausted, vec![(5, Some("sale".to_string()))]);
    let o = send(&pg, b"b4", &[delta(5, 2, false, "", 1)]).await;
    assert!(o.exhausted.is_empty(), "crossed once, logged once");
    let mut client = pg.get().await.unwrap();
    changes::sequence(&mut client).await.unwrap();
    match changes::read_after(&client, 0, 10).await.unwrap() {
        LogRead::Changes(c) => {
            assert_eq!(c.len(), 1);
            assert_eq!((c[0].link_id, c[0].new_alias.as_deref()), (5, Some("sale")));
        }
        LogRead::Pruned => panic!("nothing was pruned"),
    }
    assert_eq!(
        cluster.psql("limits", "SELECT clicks || '/' || bot_clicks FROM links"),
        "12/7"
    );
}
