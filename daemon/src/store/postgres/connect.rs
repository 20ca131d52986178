//! Making one session to PostgreSQL: the URL's servers tried in order as
//! libpq tries them, each attempt bounded as a whole, and the session's
//! socket [watched](super::watched) for a server that stops answering.
//!
//! The driver's own `Config::connect` bounds only the TCP connect of each
//! server: a server that accepts the connection and never greets (a
//! stopped process on a live host) holds the attempt until the caller's
//! bound, and the next server of the list is never tried, so a failover
//! to a standby is not followed while the old primary hangs. Here the
//! socket, the start-up and the `target_session_attrs` check of each
//! server share its `connect_timeout`; a failure moves on to the next.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpStream, UnixStream};
use tokio_postgres::config::{Host, TargetSessionAttrs};
use tokio_postgres::tls::{MakeTlsConnect, TlsConnect};
use tokio_postgres::{Client, Config, Connection};
use tokio_postgres_rustls::MakeRustlsConnect;

use super::watched::{Bound, Watched};

/// The socket under a session: TCP or a Unix socket, watched.
pub type Stream = Watched<Transport>;

/// A session and the connection that drives it (to be polled or spawned).
pub type Session = (
    Client,
    Connection<
        Stream,
        <<MakeRustlsConnect as MakeTlsConnect<Stream>>::TlsConnect as TlsConnect<Stream>>::Stream,
    >,
);

/// The bound of an unwatched session's requests: longer than anything
/// runs, short enough that a deadline computed from it cannot overflow.
const UNWATCHED: Duration = Duration::from_secs(365 * 24 * 3600);

/// Opens sessions for the pool and for the change follower.
#[derive(Clone)]
pub struct Connector {
    tls: MakeRustlsConnect,
    /// How long a request on an open session may go unanswered.
    request_bound: Duration,
}

impl Connector {
    /// Sessions with TLS as `tls` says, whose requests are given up after
    /// `request_bound` without an answer.
    pub fn new(tls: MakeRustlsConnect, request_bound: Duration) -> Self {
        Self { tls, request_bound }
    }

    /// The same, with requests never given up (each server's attempt is
    /// still bounded).
    pub fn unwatched(&self) -> Self {
        Self {
            tls: self.tls.clone(),
            request_bound: UNWATCHED,
        }
    }

    /// A session to the first server of `pc` that answers within its
    /// `connect_timeout` and is what `target_session_attrs` asks for; the
    /// last server's error if none is.
    pub async fn session(&self, pc: &Config) -> Result<Session, tokio_postgres::Error> {
        let per_server = pc
            .get_connect_timeout()
            .copied()
            .unwrap_or(self.request_bound);
        let ports = pc.get_ports();
        let mut last = None;
        for (i, host) in pc.get_hosts().iter().enumerate() {
            let port = ports.get(i).or(ports.first()).copied().unwrap_or(5432);
            match self.attempt(pc, host, port, per_server).await {
                Ok(session) => return Ok(session),
                Err(e) => last = Some(e),
            }
        }
        Err(match last {
            Some(e) => e,
            None => {
                driver_error(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "the URL names no server",
                ))
                .await
            }
        })
    }

    /// One server: its socket, the start-up and the session check, all
    /// within `within`.
    async fn attempt(
        &self,
        pc: &Config,
        host: &Host,
        port: u16,
        within: Duration,
    ) -> Result<Session, tokio_postgres::Error> {
        let bound = Bound::new(within);
        let started = tokio::time::Instant::now();
        let (transport, name) = match open(pc, host, port, within).await {
            Ok(t) => t,
            Err(e) => return Err(driver_error(e).await),
        };
        // The start-up is timed by the watched socket (`within`); what
        // the socket took counts against it.
        bound.set(
            within
                .saturating_sub(started.elapsed())
                .max(Duration::from_millis(1)),
        );
        let stream = Watched::new(transport, bound.clone());
        let mut tls = self.tls.clone();
        let tls = MakeTlsConnect::<Stream>::make_tls_connect(&mut tls, &name)
            .map_err(|e| io::Error::other(e.to_string()));
        let tls = match tls {
            Ok(t) => t,
            Err(e) => return Err(driver_error(e).await),
        };
        let (client, mut connection) = pc.connect_raw(stream, tls).await?;
        if pc.get_target_session_attrs() == TargetSessionAttrs::ReadWrite {
            let check = client.simple_query("SHOW transaction_read_only");
            let rows = tokio::select! {
                rows = check => rows?,
                ended = &mut connection => {
                    ended?;
                    return Err(driver_error(io::Error::new(
                        io::ErrorKind::ConnectionReset,
                        "the server closed the session during the start-up",
                    )).await);
                }
            };
            let read_only = rows.iter().any(|m| match m {
                tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0) == Some("on"),
                _ => false,
            });
            if read_only {
                return Err(driver_error(io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    format!("{name}:{port} does not accept writes (a standby)"),
                ))
                .await);
            }
        }
        bound.set(self.request_bound);
        Ok((client, connection))
    }
}

impl deadpool_postgres::Connect for Connector {
    fn connect(
        &self,
        pc: &Config,
    ) -> BoxFuture<'_, Result<(Client, tokio::task::JoinHandle<()>), tokio_postgres::Error>> {
        let pc = pc.clone();
        Box::pin(async move {
            let (client, connection) = self.session(&pc).await?;
            let task = tokio::spawn(async move {
                if let Err(e) = connection.await {
                    tracing::debug!(error = %e, "a PostgreSQL session ended");
                }
            });
            Ok((client, task))
        })
    }
}

/// The socket to one server, and the name TLS checks.
async fn open(
    pc: &Config,
    host: &Host,
    port: u16,
    within: Duration,
) -> io::Result<(Transport, String)> {
    let timed_out = || io::Error::new(io::ErrorKind::TimedOut, "connecting timed out");
    match host {
        Host::Tcp(name) => {
            let connecting = TcpStream::connect((name.as_str(), port));
            let stream = tokio::time::timeout(within, connecting)
                .await
                .map_err(|_| timed_out())??;
            stream.set_nodelay(true)?;
            let sock = socket2::SockRef::from(&stream);
            if let Some(t) = pc.get_tcp_user_timeout() {
                sock.set_tcp_user_timeout(Some(*t))?;
            }
            if pc.get_keepalives() {
                let mut ka = socket2::TcpKeepalive::new().with_time(pc.get_keepalives_idle());
                if let Some(i) = pc.get_keepalives_interval() {
                    ka = ka.with_interval(i);
                }
                if let Some(r) = pc.get_keepalives_retries() {
                    ka = ka.with_retries(r);
                }
                sock.set_tcp_keepalive(&ka)?;
            }
            Ok((Transport::Tcp(stream), name.clone()))
        }
        Host::Unix(dir) => {
            let path = dir.join(format!(".s.PGSQL.{port}"));
            let stream = tokio::time::timeout(within, UnixStream::connect(&path))
                .await
                .map_err(|_| timed_out())??;
            Ok((Transport::Unix(stream), String::new()))
        }
    }
}

/// The driver's error for an I/O error of ours: its constructors are its
/// own, so the error is passed through its start-up on a socket that fails
/// at once.
async fn driver_error(e: io::Error) -> tokio_postgres::Error {
    let failing = Failing(Some(e));
    match Config::new()
        .user("-")
        .connect_raw(failing, tokio_postgres::NoTls)
        .await
    {
        Err(e) => e,
        Ok(_) => unreachable!("a start-up on a failing socket cannot succeed"),
    }
}

/// A socket whose first write fails with the error it holds.
struct Failing(Option<io::Error>);

impl AsyncRead for Failing {
    fn poll_read(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        _: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Poll::Ready(Err(io::ErrorKind::BrokenPipe.into()))
    }
}

impl AsyncWrite for Failing {
    fn poll_write(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        _: &[u8],
    ) -> Poll<io::Result<usize>> {
        let e = self
            .0
            .take()
            .unwrap_or_else(|| io::ErrorKind::BrokenPipe.into());
        Poll::Ready(Err(e))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// A TCP or Unix socket.
pub enum Transport {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl AsyncRead for Transport {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Transport::Tcp(s) => Pin::new(s).poll_read(cx, buf),
            Transport::Unix(s) => Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Transport {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, b: &[u8]) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Transport::Tcp(s) => Pin::new(s).poll_write(cx, b),
            Transport::Unix(s) => Pin::new(s).poll_write(cx, b),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Transport::Tcp(s) => Pin::new(s).poll_flush(cx),
            Transport::Unix(s) => Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Transport::Tcp(s) => Pin::new(s).poll_shutdown(cx),
            Transport::Unix(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_statement_waiting_on_a_server_that_hangs_fails_after_the_bound() {
        let pg = testpg::PgCluster::start("watched-lock");
        let url = pg.create_db("w");
        pg.psql("w", "CREATE TABLE t (v int); INSERT INTO t VALUES (1)");
        let mut pc: Config = url.parse().unwrap();
        pc.password(testpg::PASSWORD)
            .connect_timeout(Duration::from_secs(2));
        let tls = super::super::tls::connector(crate::config::SslMode::Prefer, None).unwrap();
        let connector = Connector::new(tls, Duration::from_secs(3));
        let (mut holder, conn) = connector.session(&pc).await.unwrap();
        tokio::spawn(conn);
        let (mut waiter, conn) = connector.session(&pc).await.unwrap();
        let driven = tokio::spawn(conn);
        let hold = holder.transaction().await.unwrap();
        hold.batch_execute("SELECT * FROM t FOR UPDATE")
            .await
            .unwrap();
        let tx = waiter.transaction().await.unwrap();
        let st = tx
            .prepare("SELECT * FROM t WHERE v = $1 FOR UPDATE")
            .await
            .unwrap();
        let waiting = tx.query(&st, &[&1i32]);
        let freeze = async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            pg.freeze();
        };
        let started = std::time::Instant::now();
        let (got, ()) = tokio::join!(
            tokio::time::timeout(Duration::from_secs(30), waiting),
            freeze
        );
        pg.thaw();
        let got = got.expect("the statement hung past the bound");
        assert!(got.is_err(), "{got:?}");
        assert!(started.elapsed() >= Duration::from_secs(3));
        drop(tx);
        let _ = driven.await;
        drop(hold);
    }
}
