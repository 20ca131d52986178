//! The daemon's end of PostgreSQL's shared change log: follows it
//! (`store::postgres::follow`) for as long as the server runs and applies
//! what it reads to this node's edge (`crate::edge::Edge::followed`): the
//! daemon's cached links are dropped and the subscribed nginx workers
//! told, whichever node made the change. It drives the edge, so it lives
//! beside the store, not in it.

use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::app::SharedApp;
use crate::store::postgres::follow::{follow, FollowOptions, Followed};
use crate::store::postgres::Pg;

/// Batches waiting between the follower and the edge.
const QUEUE: usize = 16;

/// How often the log is read when no notification comes.
pub const POLL: Duration = Duration::from_secs(1);

/// Follows the log of `pg` from the store's head at open until `stop`.
pub async fn run(app: SharedApp, pg: Pg, stop: CancellationToken) {
    let (tx, mut rx) = mpsc::channel(QUEUE);
    let from = app.store.changes_at_open().seq;
    let options = FollowOptions {
        poll: POLL,
        listen: pg.notifies(),
    };
    let follower = tokio::spawn(follow(pg, from, options, tx, stop));
    // Ends when the follower stops and drops its sender.
    while let Some(followed) = rx.recv().await {
        match followed {
            Followed::Changes(changes) => app.edge().followed(&changes).await,
            Followed::Resync(head) => {
                tracing::warn!(
                    head,
                    "the shared change log was pruned past this daemon's position; \
                     dropping every cached link and resyncing the workers"
                );
                app.edge().resync(head).await;
            }
        }
    }
    let _ = follower.await;
}
