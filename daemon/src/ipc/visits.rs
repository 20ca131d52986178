//! Visit leases of limited links, asked by the edge when a node has no
//! visit of a link left to spend: the store grants them from what the link
//! has not leased yet, in one write, so nodes together never get more than
//! the limit; visits a node gave up unspent come back the same way.

use shortlink_core::ipc::Reply;

use crate::app::App;
use crate::timestamp::unix_now;

/// Leases visits of link `link_id` to the asking node (`want`: the
/// visitors waiting there); the reply to request `id`.
pub(super) async fn lease(app: &App, id: u32, link_id: u64, want: u32) -> Reply {
    match app.store.lease_visits(link_id, want, unix_now()).await {
        Ok(granted) => {
            app.metrics.visits_leased.inc_by(u64::from(granted));
            Reply::Visits { id, granted }
        }
        Err(e) => {
            app.metrics.errors.inc();
            tracing::error!(link = link_id, error = %e, "cannot lease visits");
            Reply::Error {
                id,
                message: format!("while leasing visits of link {link_id}: {e}"),
            }
        }
    }
}

/// Takes back `count` visits of link `link_id` a node never spent; the
/// reply to request `id` grants nothing.
pub(super) async fn give_back(app: &App, id: u32, link_id: u64, count: u32) -> Reply {
    match app.store.return_visits(link_id, count).await {
        Ok(()) => Reply::Visits { id, granted: 0 },
        Err(e) => {
            app.metrics.errors.inc();
            tracing::error!(link = link_id, error = %e, "cannot take back unspent visits");
            Reply::Error {
                id,
                message: format!("while taking back visits of link {link_id}: {e}"),
            }
        }
    }
}
