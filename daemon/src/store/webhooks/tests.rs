//! The subscription lookup every link write runs.

use rusqlite::StatementStatus;

use super::{subscribed, WebhookEvent, SUBSCRIBED};
use crate::store::tests::temp_store;

#[tokio::test]
async fn subscriptions_are_found_by_event_name_without_preparing_again() {
    let (_dir, store) = temp_store();
    store
        .write(|c| {
            c.execute_batch(
                "INSERT INTO teams (id, name, created_at) VALUES (2, 'two', 0); \
                 INSERT INTO webhooks (id, team_id, url, secret, events, created_at) VALUES \
                 (1, 1, 'https://h.example/1', 's', 'link.updated,link.created', 0), \
                 (2, 1, 'https://h.example/2', 's', 'link.deleted', 0), \
                 (3, 2, 'https://h.example/3', 's', 'link.created', 0);",
            )?;
            for _ in 0..3 {
                assert_eq!(subscribed(c, 1, WebhookEvent::Created)?, vec![1]);
                assert_eq!(subscribed(c, 1, WebhookEvent::Deleted)?, vec![2]);
                assert_eq!(subscribed(c, 1, WebhookEvent::Expired)?, Vec::<i64>::new());
                assert_eq!(subscribed(c, 2, WebhookEvent::Created)?, vec![3]);
            }
            // A `LIKE` against the bound event made SQLite compile the
            // statement again at every bind.
            let st = c.prepare_cached(SUBSCRIBED)?;
            assert_eq!(st.get_status(StatementStatus::RePrepare), 0);
            Ok(())
        })
        .await
        .unwrap();
    store.close();
}
