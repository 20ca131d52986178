//! Fan-out of events (invalidations, alias changes) to subscribed nginx
//! workers.
//!
//! [`EventHub::publish`] waits until every subscriber's connection has
//! written the events, so a change is pushed to the edge before the HTTP
//! reply that made it. A subscriber that falls behind never makes an edit
//! wait: one whose writer has made no progress for the flush timeout, or
//! whose queue is full, is cut off at once (before anything is sent to it),
//! and one that does not take an event within the flush timeout is cut off
//! then. Its connection closes; the worker reconnects, is replayed what it
//! missed from the change log and takes a fresh alias snapshot. Link changes
//! are published by [`crate::edge::Edge`] only.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use shortlink_core::ipc::{self, Event, Reply, ALIAS_CHUNK};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

/// Messages queued per subscriber before it is cut off as too slow.
pub const SUBSCRIBER_QUEUE: usize = 4096;

/// Frames for one connection's writer, with an optional "written" signal.
#[derive(Debug)]
pub struct Outgoing {
    /// One or more encoded frames.
    pub frames: Vec<u8>,
    /// Fired once the frames are flushed to the socket.
    pub ack: Option<oneshot::Sender<()>>,
    /// The change-log position these frames lead to (0: not changes): a
    /// subscriber that was replayed past it skips them.
    pub seq: u64,
}

impl Outgoing {
    /// Frames that are not a change push.
    pub fn frames(frames: Vec<u8>) -> Self {
        Self {
            frames,
            ack: None,
            seq: 0,
        }
    }
}

/// What the hub sees of a connection's writer, and how it stops it: since
/// when its current write has waited for the socket to take bytes (0: not
/// waiting), and a token that makes it drop what it holds and stop.
#[derive(Debug, Default)]
pub struct WriterWatch {
    waiting_since_ms: AtomicU64,
    abort: CancellationToken,
}

/// Milliseconds on a process-wide monotonic clock, never 0.
fn clock_ms() -> u64 {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_millis() as u64 + 1
}

impl WriterWatch {
    /// A write is about to wait for the socket.
    pub fn waiting(&self) {
        self.waiting_since_ms.store(clock_ms(), Ordering::Relaxed);
    }

    /// The socket took bytes.
    pub fn progressed(&self) {
        self.waiting_since_ms.store(0, Ordering::Relaxed);
    }

    /// How long the writer has been stuck on one write.
    pub fn stalled_for(&self) -> Duration {
        match self.waiting_since_ms.load(Ordering::Relaxed) {
            0 => Duration::ZERO,
            since => Duration::from_millis(clock_ms().saturating_sub(since)),
        }
    }

    /// Tells the writer to give up (its peer does not read).
    pub fn abort(&self) {
        self.abort.cancel();
    }

    /// Resolves once [`WriterWatch::abort`] was called.
    pub async fn aborted(&self) {
        self.abort.cancelled().await
    }
}

/// What the hub holds of one subscribed connection.
struct Subscriber {
    tx: mpsc::Sender<Outgoing>,
    writer: Arc<WriterWatch>,
    /// Closes the whole connection when the subscriber is cut off.
    closed: CancellationToken,
}

/// The set of subscribed connections.
pub struct EventHub {
    subscribers: Mutex<HashMap<u64, Subscriber>>,
    next_id: AtomicU64,
    /// How long a publish waits for a subscriber to write its events.
    flush_timeout: Duration,
    /// Events published.
    pub published: AtomicU64,
    /// Subscribers cut off for falling behind.
    pub dropped: AtomicU64,
    /// The change-log position pushed so far (`None`: nothing yet, the feed
    /// starts at the store's head when it was opened); held for the whole
    /// of a push, so pushes go out one at a time, in log order.
    pub feed: tokio::sync::Mutex<Option<u64>>,
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
            feed: tokio::sync::Mutex::new(None),
        }
    }

    /// Registers a subscriber with a writer and close token of its own.
    pub fn subscribe(&self) -> (u64, mpsc::Receiver<Outgoing>) {
        self.subscribe_connection(Arc::default(), CancellationToken::new())
    }

    /// Registers the connection whose writer reports to `writer` and which
    /// `closed` shuts; events published from now on queue up in the
    /// receiver.
    pub fn subscribe_connection(
        &self,
        writer: Arc<WriterWatch>,
        closed: CancellationToken,
    ) -> (u64, mpsc::Receiver<Outgoing>) {
        let (tx, rx) = mpsc::channel(SUBSCRIBER_QUEUE);
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.subscribers
            .lock()
            .expect("hub lock")
            .insert(id, Subscriber { tx, writer, closed });
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

    /// Removes a subscriber that fell behind and closes its connection.
    fn cut_off(&self, subs: &mut HashMap<u64, Subscriber>, id: u64, why: &str) {
        if let Some(sub) = subs.remove(&id) {
            sub.closed.cancel();
            sub.writer.abort();
            self.dropped.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(
                subscriber = id,
                reason = why,
                "cutting off an IPC subscriber that fell behind; it resyncs when it reconnects"
            );
        }
    }

    /// Cuts off every subscriber: each worker reconnects and resyncs.
    pub fn cut_off_all(&self, why: &str) {
        let mut subs = self.subscribers.lock().expect("hub lock");
        let ids: Vec<u64> = subs.keys().copied().collect();
        for id in ids {
            self.cut_off(&mut subs, id, why);
        }
    }

    /// Sends `events` to every subscriber and waits until each has written
    /// them (bounded by the flush timeout); never waits on one that is
    /// already behind.
    pub async fn publish(&self, events: Vec<Event>) {
        self.publish_at(events, 0).await
    }

    /// [`EventHub::publish`] for a change push that leads to change-log
    /// position `seq`.
    pub async fn publish_at(&self, events: Vec<Event>, seq: u64) {
        if events.is_empty() {
            return;
        }
        let frames = encode_events(events.iter().cloned());
        self.published
            .fetch_add(events.len() as u64, Ordering::Relaxed);
        let mut acks = Vec::new();
        {
            let mut subs = self.subscribers.lock().expect("hub lock");
            let mut behind = Vec::new();
            for (&id, sub) in subs.iter() {
                if sub.writer.stalled_for() >= self.flush_timeout {
                    behind.push((id, "its connection has taken nothing for the flush timeout"));
                    continue;
                }
                let (ack_tx, ack_rx) = oneshot::channel();
                let msg = Outgoing {
                    frames: frames.clone(),
                    ack: Some(ack_tx),
                    seq,
                };
                match sub.tx.try_send(msg) {
                    Ok(()) => acks.push((id, ack_rx)),
                    Err(mpsc::error::TrySendError::Full(_)) => {
                        behind.push((id, "its queue is full"))
                    }
                    Err(mpsc::error::TrySendError::Closed(_)) => behind.push((id, "it is gone")),
                }
            }
            for (id, why) in behind {
                self.cut_off(&mut subs, id, why);
            }
        }
        if acks.is_empty() {
            return;
        }
        let deadline = tokio::time::Instant::now() + self.flush_timeout;
        let mut late = Vec::new();
        for (id, ack) in acks {
            if tokio::time::timeout_at(deadline, ack).await.is_err() {
                late.push(id);
            }
        }
        if !late.is_empty() {
            let mut subs = self.subscribers.lock().expect("hub lock");
            for id in late {
                self.cut_off(
                    &mut subs,
                    id,
                    "it did not take events within the flush timeout",
                );
            }
        }
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
        // ... once: then it is cut off, and no later edit waits on it.
        assert!(hub.is_empty());
        assert_eq!(hub.dropped.load(Ordering::Relaxed), 1);
    }

    #[tokio::test]
    async fn a_subscriber_whose_socket_takes_nothing_is_cut_off_before_any_wait() {
        let hub = EventHub::new(Duration::from_millis(50));
        let (writer, closed) = (Arc::new(WriterWatch::default()), CancellationToken::new());
        let (_id, mut stuck) = hub.subscribe_connection(writer.clone(), closed.clone());
        let (_h, mut healthy) = hub.subscribe();
        let acker = tokio::spawn(async move {
            while let Some(msg) = healthy.recv().await {
                msg.ack.unwrap().send(()).unwrap();
            }
        });
        writer.waiting();
        tokio::time::sleep(Duration::from_millis(80)).await;
        assert!(writer.stalled_for() >= Duration::from_millis(50));
        // The healthy subscriber acks at once, so this publish returns as
        // soon as its write is done: the stuck one got nothing to wait on.
        hub.publish(vec![Event::AliasSnapshotEnd]).await;
        assert!(stuck.try_recv().is_err(), "nothing was queued for it");
        assert!(closed.is_cancelled(), "its connection is closed");
        tokio::time::timeout(Duration::from_secs(1), writer.aborted())
            .await
            .expect("its writer is told to stop");
        assert_eq!(hub.len(), 1);
        assert_eq!(hub.dropped.load(Ordering::Relaxed), 1);
        writer.progressed();
        assert_eq!(writer.stalled_for(), Duration::ZERO);
        drop(hub);
        acker.await.unwrap();
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
