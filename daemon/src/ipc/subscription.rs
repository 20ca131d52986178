//! A subscribed connection: the alias snapshot, the changes the worker
//! missed since its position (or a reset when the log cannot say), its new
//! position, then every change the daemon pushes, until the connection
//! closes or the hub cuts it off for falling behind (the worker then
//! reconnects and resumes from its position).

use std::sync::Arc;

use shortlink_core::ipc::{ChangePosition, Event, Reply, ALIAS_CHUNK};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::send;
use crate::app::SharedApp;
use crate::events::{encode_events, Outgoing, WriterWatch};

/// Sends the alias snapshot and the missed changes, then forwards live
/// pushes until the connection closes. Registration comes before the
/// read, so a push made meanwhile is either in what was read (and skipped
/// when it arrives live) or after it.
#[allow(clippy::too_many_arguments)]
pub(super) async fn subscription(
    app: SharedApp,
    id: u32,
    since: Option<ChangePosition>,
    out: mpsc::Sender<Outgoing>,
    closed: CancellationToken,
    writer: Arc<WriterWatch>,
    pid: u32,
) {
    let (sub_id, mut events) = app.hub.subscribe_connection(writer, closed.clone());
    let (aliases, missed, head) = match app.edge().resume(since).await {
        Ok(start) => start,
        Err(e) => {
            tracing::error!(pid, error = %e, "cannot read the alias snapshot and change log");
            send(
                &out,
                &Reply::Error {
                    id,
                    message: format!("cannot read the alias snapshot and change log: {e}"),
                },
            )
            .await;
            app.hub.unsubscribe(sub_id);
            return;
        }
    };
    send(&out, &Reply::Subscribed { id }).await;
    let replayed = missed.as_ref().map_or(0, Vec::len);
    let mut start = Vec::new();
    if missed.is_none() {
        start.push(Event::Reset);
    }
    start.push(Event::AliasSnapshotBegin {
        total: aliases.len() as u64,
    });
    if out
        .send(Outgoing::frames(encode_events(start)))
        .await
        .is_err()
    {
        app.hub.unsubscribe(sub_id);
        return;
    }
    let total = aliases.len() as u64;
    for chunk in aliases.chunks(ALIAS_CHUNK) {
        let frames = encode_events([Event::Aliases {
            aliases: chunk.to_vec(),
        }]);
        if out.send(Outgoing::frames(frames)).await.is_err() {
            app.hub.unsubscribe(sub_id);
            return;
        }
    }
    drop(aliases);
    let mut tail = vec![Event::AliasSnapshotEnd];
    if let Some(missed) = &missed {
        tail.extend(app.edge().replay(missed));
    }
    tail.push(Event::Position(head));
    if out
        .send(Outgoing::frames(encode_events(tail)))
        .await
        .is_err()
    {
        app.hub.unsubscribe(sub_id);
        return;
    }
    tracing::info!(
        pid,
        aliases = total,
        replayed,
        reset = missed.is_none(),
        position = head.seq,
        "nginx worker subscribed"
    );
    loop {
        tokio::select! {
            _ = closed.cancelled() => break,
            msg = events.recv() => match msg {
                Some(msg) if msg.seq != 0 && msg.seq <= head.seq => {
                    // Already in the replay.
                    if let Some(ack) = msg.ack {
                        let _ = ack.send(());
                    }
                }
                Some(msg) => {
                    if out.send(msg).await.is_err() {
                        break;
                    }
                }
                None => {
                    // The hub dropped us (too slow): close so the worker
                    // reconnects and resumes from its position.
                    closed.cancel();
                    break;
                }
            }
        }
    }
    app.hub.unsubscribe(sub_id);
}
