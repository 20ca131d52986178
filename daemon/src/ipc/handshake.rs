//! The daemon's half of the IPC handshake: hello (protocol version and key
//! fingerprint), then a challenge the client must answer with a proof that
//! it holds the deployment key, then the welcome carrying the daemon's own
//! proof (see [`shortlink_core::handshake`]).
//!
//! The socket is open to the nginx workers' group, and the fingerprint is
//! no secret, so the proof is what keeps any other process of that group
//! from forging clicks or reading links. A client that fails is refused
//! with a reason, logged once with the pid the kernel reports for it, and
//! the connection closed.

use std::fmt;

use shortlink_core::handshake::{self, Nonce};
use shortlink_core::ipc::{Reply, Request, PROTOCOL_VERSION};

use super::ConnError;
use crate::app::App;

/// Where a connection is in the handshake.
#[derive(Debug)]
pub(super) enum Handshake {
    /// Nothing received yet: the first frame must be a hello.
    Hello,
    /// The hello passed and a challenge went out: the next frame must be
    /// the client's proof.
    Challenged {
        /// The daemon's nonce, which the proof must cover.
        nonce: Nonce,
        /// The pid the hello claimed, which the proof must cover too.
        pid: u32,
    },
    /// The client proved it holds the key.
    Done,
}

/// What the kernel says about the process at the other end of the socket
/// (`SO_PEERCRED`), for the logs: a claimed pid proves nothing.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Peer {
    pub pid: Option<i32>,
    pub uid: Option<u32>,
}

impl Peer {
    /// The peer of a connected stream, as far as the kernel tells.
    pub fn of(stream: &interprocess::local_socket::tokio::Stream) -> Peer {
        use interprocess::local_socket::traits::StreamCommon as _;
        match stream.peer_creds() {
            Ok(c) => Peer {
                pid: c.pid(),
                uid: c.euid(),
            },
            Err(_) => Peer::default(),
        }
    }
}

impl fmt::Display for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let show = |v: Option<String>| v.unwrap_or_else(|| "?".into());
        write!(
            f,
            "pid {} uid {}",
            show(self.pid.map(|p| p.to_string())),
            show(self.uid.map(|u| u.to_string()))
        )
    }
}

/// What the connection does after a handshake frame.
#[derive(Debug)]
pub(super) enum Step {
    /// Send this and read on.
    Send(Reply),
    /// Send this refusal, then close.
    Refuse(Reply),
}

impl Handshake {
    /// True once the client has proved it holds the key.
    pub fn is_done(&self) -> bool {
        matches!(self, Handshake::Done)
    }

    /// Takes one frame of the handshake. `Err` closes the connection
    /// without a reply (the client does not speak the protocol).
    pub fn step(&mut self, req: Request, app: &App, peer: Peer) -> Result<Step, ConnError> {
        match std::mem::replace(self, Handshake::Done) {
            Handshake::Hello => {
                let Request::Hello(hello) = req else {
                    *self = Handshake::Hello;
                    return Err(ConnError::NoHello);
                };
                if let Err(reason) = hello.accept(app.fingerprint) {
                    return Ok(refuse(app, hello.pid, peer, reason));
                }
                let nonce = handshake::nonce().map_err(|e| ConnError::Nonce(e.to_string()))?;
                *self = Handshake::Challenged {
                    nonce,
                    pid: hello.pid,
                };
                Ok(Step::Send(Reply::Challenge { nonce }))
            }
            Handshake::Challenged { nonce, pid } => {
                let Request::Auth {
                    nonce: client_nonce,
                    proof,
                } = req
                else {
                    return Err(ConnError::NoAuth);
                };
                if !app
                    .link_auth
                    .verify_edge(&nonce, &client_nonce, pid, &proof)
                {
                    let reason = "authentication failed: the proof does not match the \
                                  deployment key (the client has the fingerprint, not the key)"
                        .to_string();
                    return Ok(refuse(app, pid, peer, reason));
                }
                tracing::info!(pid, peer = %peer, "nginx worker connected");
                Ok(Step::Send(Reply::Welcome {
                    protocol: PROTOCOL_VERSION,
                    fingerprint: app.fingerprint,
                    proof: app.link_auth.daemon_proof(&client_nonce, &nonce),
                }))
            }
            Handshake::Done => match req {
                Request::Hello(_) => Err(ConnError::SecondHello),
                _ => Err(ConnError::SecondAuth),
            },
        }
    }
}

/// Counts and logs a refusal (once: the connection closes after it).
fn refuse(app: &App, pid: u32, peer: Peer, reason: String) -> Step {
    app.metrics.ipc_handshakes_refused.inc();
    tracing::warn!(pid, peer = %peer, %reason, "refusing IPC client");
    Step::Refuse(Reply::Refused { reason })
}
