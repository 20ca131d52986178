//! Fan-out of events (invalidations, alias changes) to subscribed nginx
//! workers.
//!
//! [`EventHub::publish`] waits until every subscriber's connection has
//! written the events (or a short timeout passed), so a change is pushed to
//! the edge before the HTTP reply that made it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use shortlink_core::ipc::{self, Event, Reply, ALIAS_CHUNK};
use tokio::sync::{mpsc, oneshot};

/// Messages queued per subscriber before it is dropped as too slow.
pub const SUBSCRIBER_QUEUE: usize = 4096;

/// Frames for one connection's writer, with an optional "written" signal.
#[derive(Debug)]
pub struct Outgoing {
    /// One or more encoded frames.
    pub frames: Vec<u8>,
    /// Fired once the frames are flushed to the socket.
    pub ack: Option<oneshot::Sender<()>>,
}

/// The set of subscribed connections.
pub struct EventHub {
    subscribers: Mutex<HashMap<u64, mpsc::Sender<Outgoing>>>,
    next_id: AtomicU64,
    /// How long a publish waits for slow subscribers.
    flush_timeout: Duration,
    /// Events published.
    pub published: AtomicU64,
    /// Subscribers dropped because their queue was full.
    pub dropped: AtomicU64,
}

impl Default for EventHub {
    fn default() -> Self {
        Self::new(Duration::from_millis(500))
    }
}

impl std::fmt::Debug for EventHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventHub")
            .field("subscribers", &self.len())
            .finish()
    }
}

impl EventHub {
    /// A hub whose publishes wait at most `flush_timeout` for subscribers.
    pub fn new(flush_timeout: Duration) -> Self {
        Self {
            subscribers: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            flush_timeout,
            published: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
        }
    }

    /// Registers a subscriber; events published from now on queue up in
    /// the receiver.
    pub fn subscribe(&self) -> (u64, mpsc::Receiver<Outgoing>) {
        let (tx, rx) = mpsc::channel(SUBSCRIBER_QUEUE);
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.subscribers.lock().expect("hub lock").insert(id, tx);
        (id, rx)
    }

    /// Removes a subscriber (its connection closed).
    pub fn unsubscribe(&self, id: u64) {
        self.subscribers.lock().expect("hub lock").remove(&id);
    }

    /// Subscribers connected.
    pub fn len(&self) -> usize {
        self.subscribers.lock().expect("hub lock").len()
    }

    /// True when nobody is subscribed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Sends `events` to every subscriber and waits until each has written
    /// them (bounded by the flush timeout).
    pub async fn publish(&self, events: Vec<Event>) {
        if events.is_empty() {
            return;
        }
        let frames = encode_events(events.iter().cloned());
        self.published
            .fetch_add(events.len() as u64, Ordering::Relaxed);
        let mut acks = Vec::new();
        {
            let mut subs = self.subscribers.lock().expect("hub lock");
            let mut slow = Vec::new();
            for (&id, tx) in subs.iter() {
                let (ack_tx, ack_rx) = oneshot::channel();
                let msg = Outgoing {
                    frames: frames.clone(),
                    ack: Some(ack_tx),
                };
                match tx.try_send(msg) {
                    Ok(()) => acks.push(ack_rx),
                    Err(mpsc::error::TrySendError::Full(_)) => slow.push(id),
                    Err(mpsc::error::TrySendError::Closed(_)) => slow.push(id),
                }
            }
            for id in slow {
                // Dropping the sender closes that connection: a subscriber
                // that missed events must resubscribe for a fresh snapshot.
                subs.remove(&id);
                self.dropped.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(
                    subscriber = id,
                    "dropping an IPC subscriber that cannot keep up with events"
                );
            }
        }
        if acks.is_empty() {
            return;
        }
        let all = futures_join(acks);
        if tokio::time::timeout(self.flush_timeout, all).await.is_err() {
            tracing::warn!(
                timeout_ms = self.flush_timeout.as_millis() as u64,
                "an IPC subscriber did not take events in time; replying anyway"
            );
        }
    }
}

async fn futures_join(acks: Vec<oneshot::Receiver<()>>) {
    for ack in acks {
        let _ = ack.await;
    }
}

/// Encodes events as `Reply::Event` frames; alias lists are split into
/// chunks of [`ALIAS_CHUNK`] so no frame exceeds the limit.
pub fn encode_events(events: impl IntoIterator<Item = Event>) -> Vec<u8> {
    let mut out = Vec::new();
    for event in events {
        match event {
            Event::Aliases { aliases } if aliases.len() > ALIAS_CHUNK => {
                for chunk in aliases.chunks(ALIAS_CHUNK) {
                    push(
                        &mut out,
                        Event::Aliases {
                            aliases: chunk.to_vec(),
                        },
                    );
                }
            }
            Event::AliasesRemoved { aliases } if aliases.len() > ALIAS_CHUNK => {
                for chunk in aliases.chunks(ALIAS_CHUNK) {
                    push(
                        &mut out,
                        Event::AliasesRemoved {
                            aliases: chunk.to_vec(),
                        },
                    );
                }
            }
            other => push(&mut out, other),
        }
    }
    out
}

fn push(out: &mut Vec<u8>, event: Event) {
    if let Err(e) = ipc::write_frame(&Reply::Event(event), out) {
        tracing::error!(error = %e, "cannot encode an IPC event");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn publish_reaches_subscribers_and_waits_for_the_write() {
        let hub = EventHub::default();
        let (_id, mut rx) = hub.subscribe();
        let reader = tokio::spawn(async move {
            let msg = rx.recv().await.unwrap();
            let (reply, used): (Reply, usize) = ipc::read_frame(&msg.frames).unwrap().unwrap();
            assert_eq!(used, msg.frames.len());
            msg.ack.unwrap().send(()).unwrap();
            reply
        });
        hub.publish(vec![Event::Invalidate { code: "abc".into() }])
            .await;
        assert_eq!(
            reader.await.unwrap(),
            Reply::Event(Event::Invalidate { code: "abc".into() })
        );
    }

    #[tokio::test]
    async fn publish_waits_for_the_ack_but_not_forever() {
        let hub = EventHub::new(Duration::from_millis(300));
        let (_a, mut slow) = hub.subscribe();
        let acker = tokio::spawn(async move {
            let msg = slow.recv().await.unwrap();
            tokio::time::sleep(Duration::from_millis(100)).await;
            msg.ack.unwrap().send(()).unwrap();
            slow
        });
        let t = std::time::Instant::now();
        hub.publish(vec![Event::AliasSnapshotEnd]).await;
        let waited = t.elapsed();
        assert!(waited >= Duration::from_millis(100), "{waited:?}");
        assert!(waited < Duration::from_millis(300), "{waited:?}");
        // A subscriber that never writes delays the reply by the timeout only.
        let _kept = acker.await.unwrap();
        let t = std::time::Instant::now();
        hub.publish(vec![Event::AliasSnapshotEnd]).await;
        let waited = t.elapsed();
        assert!(
            waited >= Duration::from_millis(300) && waited < Duration::from_millis(1000),
            "{waited:?}"
        );
    }

    #[test]
    fn big_alias_lists_are_chunked() {
        let aliases: Vec<String> = (0..ALIAS_CHUNK + 1).map(|i| format!("a{i}")).collect();
        let buf = encode_events([Event::Aliases { aliases }]);
        let mut at = 0;
        let mut sizes = Vec::new();
        while let Some((Reply::Event(Event::Aliases { aliases }), used)) =
            ipc::read_frame::<Reply>(&buf[at..]).unwrap()
        {
            sizes.push(aliases.len());
            at += used;
        }
        assert_eq!(sizes, vec![ALIAS_CHUNK, 1]);
    }
}
