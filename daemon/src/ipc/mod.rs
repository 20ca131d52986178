//! The IPC server the nginx workers talk to (see `shortlink_core::ipc` for
//! the wire format).
//!
//! One task reads a connection's frames and spawns a task per request, so
//! many requests are in flight and answered out of order; one writer task
//! per connection drains a channel of encoded replies and events. A frame
//! that is too large or does not decode closes that connection only.
//!
//! * `handshake.rs`: hello, challenge and proofs; nothing else is served
//!   before the client has proved it holds the deployment key.
//! * `clicks.rs`: click batches, checked against the click bounds before
//!   anything is counted.
//! * `subscription.rs`: the alias snapshot and live events.
//! * `password.rs`: password checks of protected links, bounded and
//!   throttled.
//! * `visits.rs`: visit leases of limited links.
//! * [`crate::edge_deadline`]: `edge_timeout_ms` on every store call a
//!   worker waits for, so a slow database fails requests, never the
//!   worker's link (a module of its own: the edge lookup in `links` uses
//!   it too).

mod clicks;
mod handshake;
mod password;
mod subscription;
mod visits;

use std::sync::Arc;
use std::time::Duration;

use interprocess::local_socket::tokio::Stream;
use interprocess::local_socket::traits::tokio::Listener as _;
use shortlink_core::ipc::{self, FrameError, Reply, Request};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::app::{App, SharedApp};
pub use crate::edge_deadline::EdgeDeadline;
use crate::events::{Outgoing, WriterWatch};
use handshake::{Handshake, Peer, Step};

/// Requests one connection may have in flight before reading pauses.
pub const MAX_IN_FLIGHT: usize = 1024;
/// Encoded frames queued for one connection's writer.
const WRITE_QUEUE: usize = 1024;
/// Most lookups answered by one task (one database read job).
const LOOKUP_BATCH: usize = 256;
/// Most missed lookups read on the connection's own task (see
/// `store::sqlite::inline`): a few µs each, so the task is held well under the
/// 100 µs an async task should run between awaits.
const INLINE_MISSES: usize = 16;
/// Time a client has to finish the handshake.
const HELLO_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a connection was closed by the daemon.
#[derive(Debug, thiserror::Error)]
pub enum ConnError {
    /// A frame too large or that does not decode.
    #[error("{0}")]
    Frame(#[from] FrameError),
    /// Reading the socket failed.
    #[error("read failed: {0}")]
    Io(#[from] std::io::Error),
    /// The client spoke before saying hello.
    #[error("first frame was not a hello")]
    NoHello,
    /// The client said nothing in time.
    #[error("no complete handshake within {0:?}")]
    HelloTimeout(Duration),
    /// A hello after the handshake.
    #[error("second hello on an established connection")]
    SecondHello,
    /// The client answered the challenge with something else.
    #[error("expected the authentication proof after the challenge")]
    NoAuth,
    /// A proof after the handshake.
    #[error("authentication proof on an established connection")]
    SecondAuth,
    /// No random challenge could be made.
    #[error("cannot make a challenge nonce: {0}")]
    Nonce(String),
    /// A second subscription on one connection.
    #[error("second subscribe on the same connection")]
    SecondSubscribe,
    /// The connection ended inside a frame.
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
    let deadline = Arc::new(EdgeDeadline::new(Duration::from_millis(
        app.config.edge_timeout_ms,
    )));
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(stream) => {
                    let app = Arc::clone(&app);
                    let shutdown = shutdown.clone();
                    let deadline = Arc::clone(&deadline);
                    tracker.spawn(connection(app, deadline, stream, shutdown));
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
        self.0.metrics.ipc_connections.dec();
    }
}

async fn connection(
    app: SharedApp,
    deadline: Arc<EdgeDeadline>,
    stream: Stream,
    shutdown: CancellationToken,
) {
    app.metrics.ipc_connections.inc();
    let _gauge = ConnectionGauge(&app);
    let stream = Arc::new(stream);
    let (out_tx, out_rx) = mpsc::channel::<Outgoing>(WRITE_QUEUE);
    let closed = CancellationToken::new();
    let watch = Arc::new(WriterWatch::default());
    let writer = tokio::spawn(write_loop(
        Arc::clone(&stream),
        out_rx,
        closed.clone(),
        Arc::clone(&watch),
    ));
    let mut conn = Conn {
        app: Arc::clone(&app),
        deadline,
        out: out_tx,
        closed: closed.clone(),
        writer: watch,
        peer: Peer::of(&stream),
        handshake: Handshake::Hello,
        pid: 0,
        subscribed: false,
        in_flight: Arc::new(Semaphore::new(MAX_IN_FLIGHT)),
        lookups: Vec::new(),
    };
    match conn.read_loop(&stream, &shutdown).await {
        Ok(()) => tracing::debug!(pid = conn.pid, "IPC connection closed"),
        Err(e) => {
            app.metrics.ipc_protocol_errors.inc();
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
    /// Bounds the store calls this connection's worker waits for.
    deadline: Arc<EdgeDeadline>,
    out: mpsc::Sender<Outgoing>,
    /// Fired when the connection is going away (either side).
    closed: CancellationToken,
    /// The writer's state, handed to the hub when the worker subscribes.
    writer: Arc<WriterWatch>,
    /// Who the kernel says is at the other end.
    peer: Peer,
    handshake: Handshake,
    /// The worker pid the hello claimed (for the logs).
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
        let hello_deadline = tokio::time::Instant::now() + HELLO_TIMEOUT;
        loop {
            // Answer every complete frame already buffered.
            let mut at = 0;
            while let Some((req, used)) = ipc::read_frame::<Request>(&buf[at..])? {
                at += used;
                if !self.handshake.is_done() {
                    if let Request::Hello(hello) = &req {
                        self.pid = hello.pid;
                    }
                    match self.handshake.step(req, &self.app, self.peer)? {
                        Step::Send(reply) => self.send(reply).await,
                        Step::Refuse(reply) => {
                            self.send(reply).await;
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
                if self.handshake.is_done() {
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
            Request::Subscribe { id, since } => {
                if self.subscribed {
                    return Err(ConnError::SecondSubscribe);
                }
                self.subscribed = true;
                let app = Arc::clone(&self.app);
                let out = self.out.clone();
                let closed = self.closed.clone();
                let pid = self.pid;
                let writer = Arc::clone(&self.writer);
                tokio::spawn(subscription::subscription(
                    app, id, since, out, closed, writer, pid,
                ));
            }
            Request::Lookup { id, code } => {
                self.app.metrics.ipc_lookups.inc();
                self.lookups.push((id, code));
            }
            Request::Clicks { id, batch } => {
                let pid = self.pid;
                self.answer_in_task(move |app, _| async move {
                    clicks::take(&app, id, batch, pid).await
                })
                .await;
            }
            Request::Auth { .. } => return Err(ConnError::SecondAuth),
            Request::CheckPassword {
                id,
                code,
                password,
                client,
            } => {
                self.answer_in_task(move |app, deadline| async move {
                    password::check(&app, &deadline, id, code, password, client).await
                })
                .await;
            }
            Request::LeaseVisits { id, link_id, want } => {
                self.answer_in_task(move |app, deadline| async move {
                    visits::lease(&app, &deadline, id, link_id, want).await
                })
                .await;
            }
            Request::ReturnVisits { id, link_id, count } => {
                self.answer_in_task(move |app, deadline| async move {
                    visits::give_back(&app, &deadline, id, link_id, count).await
                })
                .await;
            }
        }
        Ok(())
    }

    /// Answers a request in a task of its own, holding one of the
    /// connection's in-flight permits until the reply is sent (so a worker
    /// cannot start unbounded work).
    async fn answer_in_task<F, Fut>(&self, answer: F)
    where
        F: FnOnce(Arc<App>, Arc<EdgeDeadline>) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = Reply> + Send + 'static,
    {
        let permit = Arc::clone(&self.in_flight)
            .acquire_owned()
            .await
            .expect("semaphore open");
        let app = Arc::clone(&self.app);
        let deadline = Arc::clone(&self.deadline);
        let out = self.out.clone();
        tokio::spawn(async move {
            let reply = answer(app, deadline).await;
            send(&out, &reply).await;
            drop(permit);
        });
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
        let started = std::time::Instant::now();
        let app = &self.app;
        let mut frames = Vec::with_capacity(items.len() * LOOKUP_REPLY_BYTES);
        let mut cached = 0;
        let misses = app.links().edge_lookup_cached(items, |id, code, result| {
            cached += 1;
            encode_lookup(app, &mut frames, id, code, result)
        });
        // A small burst of misses is read here and answered in the same
        // write as the cache hits.
        let mut stored = 0;
        let misses = match misses.len() {
            0 => None,
            n if n <= INLINE_MISSES => misses
                .resolve_now(&app.store, |id, code, result| {
                    stored += 1;
                    encode_lookup(app, &mut frames, id, code, result)
                })
                .err(),
            _ => Some(misses),
        };
        if !frames.is_empty() {
            let _ = self.out.send(Outgoing::frames(frames)).await;
            let took = started.elapsed().as_secs_f64();
            (0..cached).for_each(|_| app.metrics.ipc_lookup_cached.observe(took));
            (0..stored).for_each(|_| app.metrics.ipc_lookup_stored.observe(took));
        }
        let Some(misses) = misses else {
            return;
        };
        let permits = Arc::clone(&self.in_flight)
            .acquire_many_owned(misses.len() as u32)
            .await
            .expect("semaphore open");
        let app = Arc::clone(&self.app);
        let deadline = Arc::clone(&self.deadline);
        let out = self.out.clone();
        tokio::spawn(async move {
            let mut frames = Vec::with_capacity(misses.len() * LOOKUP_REPLY_BYTES);
            let mut stored = 0;
            misses
                .resolve(&app.store, &deadline, |id, code, result| {
                    stored += 1;
                    encode_lookup(&app, &mut frames, id, code, result)
                })
                .await;
            let _ = out.send(Outgoing::frames(frames)).await;
            let took = started.elapsed().as_secs_f64();
            (0..stored).for_each(|_| app.metrics.ipc_lookup_stored.observe(took));
            drop(permits);
        });
    }
}

/// Room made for each lookup's reply before they are encoded, so the
/// buffer seldom grows on the way (a link with one target of ~130 bytes).
const LOOKUP_REPLY_BYTES: usize = 192;

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
            .inc();
            Reply::Lookup { id, result }
        }
        Err(e) => {
            app.metrics.errors.inc();
            e.log(&format!("IPC lookup of \"{code}\" failed"));
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
            let _ = out.send(Outgoing::frames(frames)).await;
        }
        Err(e) => tracing::error!(error = %e, "cannot encode IPC reply"),
    }
}

/// Writes what the connection's tasks queue, many frames per write, and
/// acknowledges each message once the socket took it. Reports to `watch`
/// while a write waits for the socket, and gives up (dropping what it
/// holds, so senders fail fast) when the hub cuts the connection off.
async fn write_loop(
    stream: Arc<Stream>,
    mut rx: mpsc::Receiver<Outgoing>,
    closed: CancellationToken,
    watch: Arc<WriterWatch>,
) {
    let mut wr = &*stream;
    loop {
        let first = tokio::select! {
            _ = watch.aborted() => break,
            m = rx.recv() => match m {
                Some(m) => m,
                None => break,
            },
        };
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
        let written = tokio::select! {
            _ = watch.aborted() => Err(std::io::Error::other("cut off as too slow")),
            r = write_watched(&mut wr, &buf, &watch) => r,
        };
        if let Err(e) = written {
            tracing::debug!(error = %e, "IPC write failed; closing");
            closed.cancel();
            break;
        }
        for ack in acks {
            let _ = ack.send(());
        }
    }
    drop(rx);
    let _ = tokio::time::timeout(Duration::from_secs(1), wr.shutdown()).await;
}

/// `write_all` + `flush`, telling `watch` while the socket takes nothing.
async fn write_watched(wr: &mut &Stream, buf: &[u8], watch: &WriterWatch) -> std::io::Result<()> {
    let mut at = 0;
    while at < buf.len() {
        watch.waiting();
        let n = wr.write(&buf[at..]).await;
        watch.progressed();
        match n? {
            0 => return Err(std::io::ErrorKind::WriteZero.into()),
            n => at += n,
        }
    }
    wr.flush().await
}
