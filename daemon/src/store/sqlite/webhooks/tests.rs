//! The subscription lookups every link write runs.

use rusqlite::StatementStatus;

use super::{link_event_by_id, subscribed, WebhookEvent, ANY_SUBSCRIBED, SUBSCRIBED};
use crate::store::sqlite::tests::temp_store;

#[tokio::test]
async fn the_subscription_reads_are_compiled_once() {
    let (_dir, store) = temp_store();
    let (hooks, compiled) = store
        .write(|c| {
            c.execute(
                "INSERT INTO webhooks (team_id, url, secret, events, active, created_at) \
                 VALUES (1, 'https://hooks.example/a', 'k', 'link.deleted,link.created', 1, 0), \
                        (1, 'https://hooks.example/b', 'k', 'link.created_x', 1, 0)",
                [],
            )?;
            let mut hooks = Vec::new();
            for event in WebhookEvent::ALL.into_iter().chain(WebhookEvent::ALL) {
                hooks.push((event, subscribed(c, 1, event)?));
                link_event_by_id(c, event, 1, 0)?;
            }
            let compiled = [SUBSCRIBED, ANY_SUBSCRIBED].map(|sql| {
                c.prepare_cached(sql)
                    .map(|s| s.get_status(StatementStatus::RePrepare))
            });
            Ok((hooks, compiled))
        })
        .await
        .unwrap();
    // Each event matches whole names in the list only.
    for (event, ids) in hooks {
        let want: Vec<i64> = match event {
            WebhookEvent::Created | WebhookEvent::Deleted => vec![1],
            _ => vec![],
        };
        assert_eq!(ids, want, "{event:?}");
    }
    // New bindings reuse the compiled statements.
    for n in compiled {
        assert_eq!(n.unwrap(), 0);
    }
    store.close();
}
