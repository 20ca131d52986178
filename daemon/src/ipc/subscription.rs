//! A subscribed connection: the alias snapshot first, then every event the
//! hub publishes, until the connection closes or the hub cuts it off for
//! falling behind (the worker then reconnects and resyncs).

use std::sync::Arc;

use shortlink_core::ipc::{self, Event, Reply, ALIAS_CHUNK};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::send;
use crate::app::SharedApp;
use crate::events::{encode_events, Outgoing, WriterWatch};

/// Sends the alias snapshot, then forwards live events until the
/// connection closes. Registration comes first, so nothing published while
/// the snapshot is read is lost (at worst it arrives twice).
pub(super) async fn subscription(
    app: SharedApp,
    id: u32,
    out: mpsc::Sender<Outgoing>,
    closed: CancellationToken,
    writer: Arc<WriterWatch>,
    pid: u32,
) {
    let (sub_id, mut events) = app.hub.subscribe_connection(writer, closed.clone());
    let snapshot = app.store.read(crate::store::links::all_aliases).await;
    let aliases = match snapshot {
        Ok(a) => a,
        Err(e) => {
            tracing::error!(pid, error = %e, "cannot read the alias snapshot");
            send(
                &out,
                &Reply::Error {
                    id,
                    message: format!("cannot read the alias snapshot: {e}"),
                },
            )
            .await;
            app.hub.unsubscribe(sub_id);
            return;
        }
    };
    send(&out, &Reply::Subscribed { id }).await;
    let total = aliases.len() as u64;
    let mut head = Vec::new();
    let _ = ipc::write_frame(
        &Reply::Event(Event::AliasSnapshotBegin { total }),
        &mut head,
    );
    let _ = out
        .send(Outgoing {
            frames: head,
            ack: None,
        })
        .await;
    for chunk in aliases.chunks(ALIAS_CHUNK) {
        let frames = encode_events([Event::Aliases {
            aliases: chunk.to_vec(),
        }]);
        if out.send(Outgoing { frames, ack: None }).await.is_err() {
            app.hub.unsubscribe(sub_id);
            return;
        }
    }
    drop(aliases);
    let end = encode_events([Event::AliasSnapshotEnd]);
    let _ = out
        .send(Outgoing {
            frames: end,
            ack: None,
        })
        .await;
    tracing::info!(pid, aliases = total, "nginx worker subscribed");
    loop {
        tokio::select! {
            _ = closed.cancelled() => break,
            msg = events.recv() => match msg {
                Some(msg) => {
                    if out.send(msg).await.is_err() {
                        break;
                    }
                }
                None => {
                    // The hub dropped us (too slow): close so the worker
                    // reconnects and gets a fresh snapshot.
                    closed.cancel();
                    break;
                }
            }
        }
    }
    app.hub.unsubscribe(sub_id);
}
