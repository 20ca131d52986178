//! [`WebhookStore`] over SQLite: reads on a reader thread, everything that
//! writes (claims included) a job on the writer thread, so two claims
//! never see the same row free.

use async_trait::async_trait;

use crate::store::sqlite::{webhooks as table, SqliteStore};
use crate::store::{
    Attempt, Delivery, DueDelivery, FairShare, NewWebhook, StoreResult, Swept, Webhook,
    WebhookStore,
};

#[async_trait]
impl WebhookStore for SqliteStore {
    async fn add_webhook(&self, w: NewWebhook) -> StoreResult<Webhook> {
        self.write(move |c| table::insert(c, &w)).await
    }

    async fn webhooks(&self, team: Option<i64>) -> StoreResult<Vec<Webhook>> {
        self.read(move |c| table::list(c, team)).await
    }

    async fn webhook(&self, id: i64) -> StoreResult<Option<Webhook>> {
        self.read(move |c| table::by_id(c, id)).await
    }

    async fn delete_webhook(&self, id: i64) -> StoreResult<bool> {
        self.write(move |c| table::delete(c, id)).await
    }

    async fn deliveries(
        &self,
        webhook_id: i64,
        before: Option<i64>,
        limit: u32,
    ) -> StoreResult<Vec<Delivery>> {
        self.read(move |c| table::deliveries(c, webhook_id, before, limit))
            .await
    }

    async fn redeliver(&self, webhook_id: i64, id: i64, now: i64) -> StoreResult<Option<Delivery>> {
        self.write(move |c| table::redeliver(c, webhook_id, id, now))
            .await
    }

    async fn claim_deliveries(
        &self,
        now: i64,
        until: i64,
        limit: u32,
        share: FairShare,
    ) -> StoreResult<Vec<DueDelivery>> {
        self.write(move |c| table::claim(c, now, until, limit, &share))
            .await
    }

    async fn record_attempt(&self, id: i64, at: i64, attempt: Attempt) -> StoreResult<()> {
        self.write(move |c| table::record(c, id, at, &attempt))
            .await
    }

    async fn sweep_webhook_events(&self, now: i64, summary_every: i64) -> StoreResult<Swept> {
        // No webhook, nothing to look for (the marks move to the time the
        // first one is added).
        if !self.read(table::any_active).await? {
            return Ok(Swept::default());
        }
        self.write(move |c| table::sweep(c, now, summary_every))
            .await
    }
}
