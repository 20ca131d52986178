//! Visit leases of limited links, asked by the edge when a node has no
//! visit of a link left to spend: the store grants them from what the link
//! has not leased yet, in one write, so nodes together never get more than
//! the limit; visits a node gave up unspent come back the same way.
//!
//! Both writes are bounded by the edge's deadline and finish past it: a
//! lease the worker was told failed hands what it granted back, so no
//! visit is lost to a slow database.

use shortlink_core::ipc::Reply;

use super::EdgeDeadline;
use crate::app::App;
use crate::timestamp::unix_now;

/// Leases visits of link `link_id` to the asking node (`want`: the
/// visitors waiting there); the reply to request `id`.
pub(super) async fn lease(
    app: &App,
    deadline: &EdgeDeadline,
    id: u32,
    link_id: u64,
    want: u32,
) -> Reply {
    let store = app.store.clone();
    let lease = async move { store.lease_visits(link_id, want, unix_now()).await };
    let store = app.store.clone();
    let hand_back = move |granted: u32| async move {
        if granted == 0 {
            return;
        }
        if let Err(e) = store.return_visits(link_id, granted).await {
            e.log(&format!(
                "cannot hand back {granted} visits of link {link_id} leased past edge_timeout_ms"
            ));
        }
    };
    match deadline.write(lease, hand_back).await {
        Ok(granted) => {
            app.metrics.visits_leased.inc_by(u64::from(granted));
            Reply::Visits { id, granted }
        }
        Err(e) => {
            app.metrics.errors.inc();
            e.log(&format!("cannot lease visits of link {link_id}"));
            Reply::Error {
                id,
                message: format!("while leasing visits of link {link_id}: {e}"),
            }
        }
    }
}

/// Takes back `count` visits of link `link_id` a node never spent; the
/// reply to request `id` grants nothing.
pub(super) async fn give_back(
    app: &App,
    deadline: &EdgeDeadline,
    id: u32,
    link_id: u64,
    count: u32,
) -> Reply {
    let store = app.store.clone();
    let give_back = async move { store.return_visits(link_id, count).await };
    // Past the deadline the write still finishes: nothing to undo.
    match deadline.write(give_back, |()| async {}).await {
        Ok(()) => Reply::Visits { id, granted: 0 },
        Err(e) => {
            app.metrics.errors.inc();
            e.log(&format!(
                "cannot take back unspent visits of link {link_id}"
            ));
            Reply::Error {
                id,
                message: format!("while taking back visits of link {link_id}: {e}"),
            }
        }
    }
}
