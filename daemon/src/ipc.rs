//! The IPC server the nginx workers talk to (see `shortlink_core::ipc` for
//! the wire format).
//!
//! One task reads a connection's frames and spawns a task per request, so
//! many requests are in flight and answered out of order; one writer task
//! per connection drains a channel of encoded replies and events. A frame
//! that is too large or does not decode closes that connection only.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use interprocess::local_socket::tokio::Stream;
use interprocess::local_socket::traits::tokio::Listener as _;
use shortlink_core::ipc::{self, Event, FrameError, Reply, Request, ALIAS_CHUNK, PROTOCOL_VERSION};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::app::{App, SharedApp};
use crate::events::{encode_events, Outgoing};
use crate::{links, stats};

/// Requests one connection may have in flight before reading pauses.
pub const MAX_IN_FLIGHT: usize = 1024;
/// Encoded frames queued for one connection's writer.
const WRITE_QUEUE: usize = 1024;
/// Most lookups answered by one task (one database read job).
const LOOKUP_BATCH: usize = 256;
/// Time a client has to send its hello.
const HELLO_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a connection was closed by the daemon.
#[derive(Debug, thiserror::Error)]
pub enum ConnError {
    #[error("{0}")]
    Frame(#[from] FrameError),
    #[error("read failed: {0}")]
    Io(#[from] std::io::Error),
    #[error("first frame was not a hello")]
    NoHello,
    #[error("no hello within {0:?}")]
    HelloTimeout(Duration),
    #[error("second hello on an established connection")]
    SecondHello,
    #[error("second subscribe on the same connection")]
    SecondSubscribe,
    #[error("connection ended in the middle of a frame")]
    Truncated,
}

/// Accepts connections until `shutdown` fires; connection tasks are tracked
/// by `tracker` so the caller can wait for in-flight work.
pub async fn serve(
    app: SharedApp,
    listener: interprocess::local_socket::tokio::Listener,
    shutdown: CancellationToken,
    tracker: TaskTracker,
) {
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(stream) => {
                    let app = Arc::clone(&app);
                    let shutdown = shutdown.clone();
                    tracker.spawn(connection(app, stream, shutdown));
                }
                Err(e) => {
                    tracing::warn!(error = %e, "IPC accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    }
    tracing::info!("IPC listener closed");
}

struct ConnectionGauge<'a>(&'a App);

impl Drop for ConnectionGauge<'_> {
    fn drop(&mut self) {
        self.0
            .metrics
            .ipc_connections
            .fetch_sub(1, Ordering::Relaxed);
    }
}

async fn connection(app: SharedApp, stream: Stream, shutdown: CancellationToken) {
    app.metrics.ipc_connections.fetch_add(1, Ordering::Relaxed);
    let _gauge = ConnectionGauge(&app);
    let stream = Arc::new(stream);
    let (out_tx, out_rx) = mpsc::channel::<Outgoing>(WRITE_QUEUE);
    let closed = CancellationToken::new();
    let writer = tokio::spawn(write_loop(Arc::clone(&stream), out_rx, closed.clone()));
    let mut conn = Conn {
        app: Arc::clone(&app),
        out: out_tx,
        closed: closed.clone(),
        pid: 0,
        subscribed: false,
        in_flight: Arc::new(Semaphore::new(MAX_IN_FLIGHT)),
        lookups: Vec::new(),
    };
    match conn.read_loop(&stream, &shutdown).await {
        Ok(()) => tracing::debug!(pid = conn.pid, "IPC connection closed"),
        Err(e) => {
            app.metrics
                .ipc_protocol_errors
                .fetch_add(1, Ordering::Relaxed);
            tracing::warn!(pid = conn.pid, reason = %e, "closing IPC connection");
        }
    }
    // Let in-flight requests finish and their replies go out.
    let _ = conn.in_flight.acquire_many(MAX_IN_FLIGHT as u32).await;
    closed.cancel();
    drop(conn);
    let _ = writer.await;
}

struct Conn {
    app: SharedApp,
    out: mpsc::Sender<Outgoing>,
    /// Fired when the connection is going away (either side).
    closed: CancellationToken,
    pid: u32,
    subscribed: bool,
    in_flight: Arc<Semaphore>,
    /// Lookups read from the socket and not yet answered (see
    /// [`Conn::flush_lookups`]).
    lookups: Vec<(u32, String)>,
}

impl Conn {
    async fn read_loop(
        &mut self,
        stream: &Stream,
        shutdown: &CancellationToken,
    ) -> Result<(), ConnError> {
        let result = self.read_frames(stream, shutdown).await;
        // Lookups read before a bad frame are still answered.
        self.flush_lookups().await;
        result
    }

    async fn read_frames(
        &mut self,
        stream: &Stream,
        shutdown: &CancellationToken,
    ) -> Result<(), ConnError> {
        let mut rd = stream;
        let mut buf: Vec<u8> = Vec::with_capacity(8192);
        let mut hello_done = false;
        let hello_deadline = tokio::time::Instant::now() + HELLO_TIMEOUT;
        loop {
            // Answer every complete frame already buffered.
            let mut at = 0;
            while let Some((req, used)) = ipc::read_frame::<Request>(&buf[at..])? {
                at += used;
                if !hello_done {
                    let Request::Hello(hello) = req else {
                        return Err(ConnError::NoHello);
                    };
                    self.pid = hello.pid;
                    match hello.accept(self.app.fingerprint) {
                        Ok(()) => {
                            hello_done = true;
                            tracing::info!(pid = hello.pid, "nginx worker connected");
                            self.send(Reply::Welcome {
                                protocol: PROTOCOL_VERSION,
                                fingerprint: self.app.fingerprint,
                            })
                            .await;
                        }
                        Err(reason) => {
                            self.app
                                .metrics
                                .ipc_handshakes_refused
                                .fetch_add(1, Ordering::Relaxed);
                            tracing::warn!(pid = hello.pid, %reason, "refusing IPC client");
                            self.send(Reply::Refused { reason }).await;
                            return Ok(());
                        }
                    }
                    continue;
                }
                self.dispatch(req).await?;
                if self.lookups.len() >= LOOKUP_BATCH {
                    self.flush_lookups().await;
                }
            }
            self.flush_lookups().await;
            buf.drain(..at);
            // A frame too large is refused as soon as its header is in.
            ipc::frame_len(&buf)?;
            if buf.capacity() - buf.len() < 4096 {
                buf.reserve(8192);
            }
            let read = async {
                if hello_done {
                    rd.read_buf(&mut buf).await
                } else {
                    match tokio::time::timeout_at(hello_deadline, rd.read_buf(&mut buf)).await {
                        Ok(r) => r,
                        Err(_) => Err(std::io::Error::new(
                            std::io::ErrorKind::TimedOut,
                            "hello timeout",
                        )),
                    }
                }
            };
            let n = tokio::select! {
                _ = shutdown.cancelled() => return Ok(()),
                _ = self.closed.cancelled() => return Ok(()),
                r = read => match r {
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                        return Err(ConnError::HelloTimeout(HELLO_TIMEOUT))
                    }
                    Err(e) => return Err(e.into()),
                },
            };
            if n == 0 {
                return if buf.is_empty() {
                    Ok(())
                } else {
                    Err(ConnError::Truncated)
                };
            }
        }
    }

    async fn send(&self, reply: Reply) {
        send(&self.out, &reply).await;
    }

    async fn dispatch(&mut self, req: Request) -> Result<(), ConnError> {
        match req {
            Request::Hello(_) => return Err(ConnError::SecondHello),
            Request::Ping { id } => self.send(Reply::Pong { id }).await,
            Request::Subscribe { id } => {
                if self.subscribed {
                    return Err(ConnError::SecondSubscribe);
                }
                self.subscribed = true;
                let app = Arc::clone(&self.app);
                let out = self.out.clone();
                let closed = self.closed.clone();
                let pid = self.pid;
                tokio::spawn(subscription(app, id, out, closed, pid));
            }
            Request::Lookup { id, code } => {
                self.app.metrics.ipc_lookups.fetch_add(1, Ordering::Relaxed);
                self.lookups.push((id, code));
            }
            Request::Clicks { id, batch } => {
                let permit = Arc::clone(&self.in_flight)
                    .acquire_owned()
                    .await
                    .expect("semaphore open");
                let app = Arc::clone(&self.app);
                let out = self.out.clone();
                tokio::spawn(async move {
                    let batch_id = batch.batch_id;
                    let reply = match stats::ingest(&app, vec![batch]).await {
                        Ok(_) => Reply::ClicksAck { id, batch_id },
                        Err(e) => {
                            app.metrics.errors.fetch_add(1, Ordering::Relaxed);
                            tracing::error!(batch = %batch_id.to_hex(), error = %e, "cannot store click batch");
                            Reply::Error {
                                id,
                                message: format!(
                                    "while storing click batch {}: {e}",
                                    batch_id.to_hex()
                                ),
                            }
                        }
                    };
                    send(&out, &reply).await;
                    drop(permit);
                });
            }
        }
        Ok(())
    }
}

impl Conn {
    /// Answers the lookups gathered from one read: cache hits at once, in
    /// one write, and the misses in one task that reads them all in one
    /// database job (no task, no allocation of its own per lookup).
    async fn flush_lookups(&mut self) {
        if self.lookups.is_empty() {
            return;
        }
        let items = std::mem::take(&mut self.lookups);
        let app = &self.app;
        let mut frames = Vec::new();
        let misses = links::edge_lookup_cached(app, items, |id, code, result| {
            encode_lookup(app, &mut frames, id, code, result)
        });
        if !frames.is_empty() {
            let _ = self.out.send(Outgoing { frames, ack: None }).await;
        }
        if misses.is_empty() {
            return;
        }
        let permits = Arc::clone(&self.in_flight)
            .acquire_many_owned(misses.len() as u32)
            .await
            .expect("semaphore open");
        let app = Arc::clone(&self.app);
        let out = self.out.clone();
        tokio::spawn(async move {
            let mut frames = Vec::with_capacity(misses.len() * 160);
            misses
                .resolve(&app, |id, code, result| {
                    encode_lookup(&app, &mut frames, id, code, result)
                })
                .await;
            let _ = out.send(Outgoing { frames, ack: None }).await;
            drop(permits);
        });
    }
}

/// Appends the reply to one lookup to `frames`, counting its result.
fn encode_lookup(
    app: &App,
    frames: &mut Vec<u8>,
    id: u32,
    code: &str,
    result: Result<ipc::LookupResult, &crate::store::StoreError>,
) {
    let reply = match result {
        Ok(result) => {
            let m = &app.metrics;
            match &result {
                ipc::LookupResult::Found(_) => &m.ipc_lookups_found,
                ipc::LookupResult::NotFound => &m.ipc_lookups_not_found,
                ipc::LookupResult::Gone => &m.ipc_lookups_gone,
            }
            .fetch_add(1, Ordering::Relaxed);
            Reply::Lookup { id, result }
        }
        Err(e) => {
            app.metrics.errors.fetch_add(1, Ordering::Relaxed);
            tracing::error!(code = %code, error = %e, "IPC lookup failed");
            Reply::Error {
                id,
                message: format!("while looking up code \"{code}\": {e}"),
            }
        }
    };
    if let Err(e) = ipc::write_frame(&reply, frames) {
        tracing::error!(error = %e, "cannot encode IPC reply");
    }
}

async fn send(out: &mpsc::Sender<Outgoing>, reply: &Reply) {
    match ipc::frame(reply) {
        Ok(frames) => {
            let _ = out.send(Outgoing { frames, ack: None }).await;
        }
        Err(e) => tracing::error!(error = %e, "cannot encode IPC reply"),
    }
}

/// Sends the alias snapshot, then forwards live events until the
/// connection closes. Registration comes first, so nothing published while
/// the snapshot is read is lost (at worst it arrives twice).
async fn subscription(
    app: SharedApp,
    id: u32,
    out: mpsc::Sender<Outgoing>,
    closed: CancellationToken,
    pid: u32,
) {
    let (sub_id, mut events) = app.hub.subscribe();
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

async fn write_loop(
    stream: Arc<Stream>,
    mut rx: mpsc::Receiver<Outgoing>,
    closed: CancellationToken,
) {
    let mut wr = &*stream;
    while let Some(first) = rx.recv().await {
        let mut buf = first.frames;
        let mut acks = Vec::new();
        acks.extend(first.ack);
        while buf.len() < 256 * 1024 {
            match rx.try_recv() {
                Ok(more) => {
                    buf.extend_from_slice(&more.frames);
                    acks.extend(more.ack);
                }
                Err(_) => break,
            }
        }
        let written = async {
            wr.write_all(&buf).await?;
            wr.flush().await
        };
        if let Err(e) = written.await {
            tracing::debug!(error = %e, "IPC write failed; closing");
            closed.cancel();
            break;
        }
        for ack in acks {
            let _ = ack.send(());
        }
    }
    let _ = wr.shutdown().await;
}
