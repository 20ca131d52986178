//! A connection to PostgreSQL that gives up on a server that stopped
//! answering in the middle of a request.
//!
//! The server-side bounds (`statement_timeout`, `lock_timeout`) end a slow
//! statement on a server that runs; TCP keepalives and `tcp_user_timeout`
//! end a connection to a host that is gone. Neither ends a request sent to
//! a server that hangs on a host that is up (a stopped process, a disk
//! that stopped answering): the kernel still acknowledges every byte and
//! every probe, and the request waits for ever, holding its pooled
//! connection and whatever task awaits it.
//!
//! [`Watched`] sits between the driver and the socket and fails the read
//! side when a request is owed an answer ([`super::exchange`]) and the
//! server has sent nothing for `bound` (a bound above the statement
//! timeout, so a server that runs always answers first). The driver then
//! fails every request on the connection and the pool drops it. A session
//! that owes nothing (an idle pooled one, a `LISTEN` session waiting) is
//! never timed out here.
//!
//! Over TLS the messages cannot be read off the bytes; there a request is
//! taken as answered by the first byte that comes back, which misses a
//! server that hangs between two answers of pipelined requests (the
//! kernel's bounds and the pool's checks still apply).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

use super::exchange::Exchange;

/// A stream whose reads fail once a request has gone unanswered for the
/// bound.
pub struct Watched<S> {
    inner: S,
    bound: Bound,
    /// The session's requests, read off the protocol.
    exchange: Exchange,
    /// While a request is owed: when it was sent or the server last sent
    /// a byte, whichever is later (`None`: nothing is owed).
    waiting_since: Option<Instant>,
    timer: Pin<Box<Sleep>>,
}

/// The bound of a [`Watched`] stream, changed from outside while the
/// stream is owned by the driver (short while connecting, then the bound
/// of a request).
#[derive(Debug, Clone)]
pub struct Bound(Arc<AtomicU64>);

impl Bound {
    /// A bound of `d`.
    pub fn new(d: Duration) -> Self {
        Self(Arc::new(AtomicU64::new(millis(d))))
    }

    /// Changes it to `d` (a request already waiting is timed anew).
    pub fn set(&self, d: Duration) {
        self.0.store(millis(d), Ordering::Relaxed);
    }

    fn get(&self) -> Duration {
        Duration::from_millis(self.0.load(Ordering::Relaxed))
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl<S> Watched<S> {
    /// Watches `inner`, failing a request unanswered for `bound`.
    pub fn new(inner: S, bound: Bound) -> Self {
        Self {
            inner,
            bound,
            exchange: Exchange::default(),
            waiting_since: None,
            timer: Box::pin(tokio::time::sleep(Duration::ZERO)),
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        let before = buf.filled().len();
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(r) => {
                let got = &buf.filled()[before..];
                if !got.is_empty() {
                    this.exchange.read(got);
                    // Over TLS (no count) any byte counts as the answer.
                    this.waiting_since =
                        (this.exchange.counting() && this.exchange.owed()).then(Instant::now);
                }
                Poll::Ready(r)
            }
            Poll::Pending => {
                let Some(since) = this.waiting_since else {
                    return Poll::Pending;
                };
                let bound = this.bound.get();
                let deadline = since + bound;
                if this.timer.deadline() != deadline {
                    this.timer.as_mut().reset(deadline);
                }
                match this.timer.as_mut().poll(cx) {
                    Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("the server has not answered for {} ms", bound.as_millis()),
                    ))),
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        let r = Pin::new(&mut this.inner).poll_write(cx, data);
        if let Poll::Ready(Ok(n)) = r {
            this.exchange.wrote(&data[..n]);
            let owed = !this.exchange.counting() || this.exchange.owed();
            if n > 0 && owed && this.waiting_since.is_none() {
                let now = Instant::now();
                this.waiting_since = Some(now);
                // The driver may read before it writes and not read again
                // until the socket is readable: the timer must wake it.
                this.timer.as_mut().reset(now + this.bound.get());
                let _ = this.timer.as_mut().poll(cx);
            }
        }
        r
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::super::exchange::wire::{startup, typed};
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test(start_paused = true)]
    async fn a_request_left_unanswered_fails_after_the_bound() {
        let (near, mut far) = tokio::io::duplex(256);
        let mut w = Watched::new(near, Bound::new(Duration::from_secs(10)));
        let hello = startup();
        w.write_all(&hello).await.unwrap();
        let mut got = vec![0u8; hello.len()];
        far.read_exact(&mut got).await.unwrap();
        let started = Instant::now();
        let mut buf = [0u8; 8];
        let e = w.read(&mut buf).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        assert_eq!(started.elapsed(), Duration::from_secs(10));
    }

    /// The driver's order within one poll: read (nothing yet), then
    /// write the request, then wait to be woken.
    struct ReadThenWrite<'a> {
        w: &'a mut Watched<tokio::io::DuplexStream>,
        wrote: bool,
    }

    impl Future for ReadThenWrite<'_> {
        type Output = io::Result<()>;

        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            let mut buf = [0u8; 8];
            let mut rb = ReadBuf::new(&mut buf);
            if let Poll::Ready(r) = Pin::new(&mut *self.w).poll_read(cx, &mut rb) {
                return Poll::Ready(r);
            }
            if !self.wrote {
                let hello = startup();
                match Pin::new(&mut *self.w).poll_write(cx, &hello) {
                    Poll::Ready(Ok(n)) => assert_eq!(n, hello.len()),
                    other => panic!("{other:?}"),
                }
                self.wrote = true;
            }
            Poll::Pending
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_written_after_the_last_read_still_wakes_the_driver() {
        let (near, _far) = tokio::io::duplex(256);
        let mut w = Watched::new(near, Bound::new(Duration::from_secs(10)));
        let started = Instant::now();
        let driven = ReadThenWrite {
            w: &mut w,
            wrote: false,
        };
        let got = tokio::time::timeout(Duration::from_secs(60), driven)
            .await
            .expect("the driver was never woken");
        assert_eq!(got.unwrap_err().kind(), io::ErrorKind::TimedOut);
        assert_eq!(started.elapsed(), Duration::from_secs(10));
    }

    #[tokio::test(start_paused = true)]
    async fn a_server_that_never_answers_the_ssl_request_is_given_up() {
        // What a hung server does to a new connection: the kernel
        // accepted it, nobody greets.
        let (near, _far) = tokio::io::duplex(256);
        let mut w = Watched::new(near, Bound::new(Duration::from_secs(1)));
        w.write_all(&[0, 0, 0, 8, 4, 210, 22, 47]).await.unwrap();
        let mut buf = [0u8; 1];
        let e = w.read(&mut buf).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
    }

    #[tokio::test(start_paused = true)]
    async fn an_answered_request_and_an_idle_session_wait_without_end() {
        let (near, mut far) = tokio::io::duplex(256);
        let mut w = Watched::new(near, Bound::new(Duration::from_secs(10)));
        w.write_all(&startup()).await.unwrap();
        tokio::time::sleep(Duration::from_secs(9)).await;
        // Part of the answer moves the deadline; its Z ends the wait.
        far.write_all(&typed(b'R', &[0; 4])).await.unwrap();
        let mut buf = [0u8; 9];
        w.read_exact(&mut buf).await.unwrap();
        tokio::time::sleep(Duration::from_secs(9)).await;
        far.write_all(&typed(b'Z', b"I")).await.unwrap();
        let mut buf = [0u8; 6];
        w.read_exact(&mut buf).await.unwrap();
        // Nothing owed: a read waits past the bound (a LISTEN session
        // waiting for a notification).
        let idle = tokio::time::timeout(Duration::from_secs(60), w.read(&mut buf)).await;
        assert!(idle.is_err(), "an idle session was timed out");
        // The next request is timed from its own write.
        w.write_all(&typed(b'Q', b"select 1\0")).await.unwrap();
        let started = Instant::now();
        let e = w.read(&mut buf).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        assert_eq!(started.elapsed(), Duration::from_secs(10));
    }
}
