//! The link's socket and the frames on it: a non-blocking Unix stream
//! socket in an `ngx_connection_t` on nginx's event loop, a write buffer
//! drained as the socket takes it, and a read buffer cut into frames.

use core::ptr;
use std::io;

use nginx_sys::{
    ngx_close_connection, ngx_connection_t, ngx_event_t, ngx_get_connection, ngx_handle_read_event,
    ngx_handle_write_event, ngx_log_t, NGX_AGAIN, NGX_OK,
};
use serde::Serialize;
use shortlink_core::ipc::{read_frame, write_frame, Reply, Request};

use super::{now, on_event, DaemonLink, LinkDown, NotSent};
use crate::log::error;

/// Connects to the daemon's socket at `path`.
///
/// The module opens the socket itself rather than through
/// `ngx_event_connect_peer`: that function logs a failed `connect()` at
/// `[crit]` when the socket file is missing (ENOENT, the daemon is not
/// running) and at `[error]` when it is refused, on every retry. Here a
/// failure is returned, and the link logs the outage once and the recovery
/// once. A Unix socket connects at once or fails, so nothing is lost by not
/// waiting for the write event as `ngx_event_connect_peer` callers do.
pub fn open(
    path: &str,
    peer: &str,
    log: *mut ngx_log_t,
) -> Result<*mut ngx_connection_t, LinkDown> {
    let path = path.as_bytes();
    // SAFETY: plain socket(2) on no memory of ours.
    let fd = unsafe {
        libc::socket(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        )
    };
    if fd < 0 {
        return Err(LinkDown::Socket(io::Error::last_os_error()));
    }
    // SAFETY: sockaddr_un is plain data; all-zero is an empty address.
    let mut addr: libc::sockaddr_un = unsafe { core::mem::zeroed() };
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    // The directive checked the path is shorter than sun_path, so the
    // address stays zero-terminated.
    for (dst, &src) in addr.sun_path.iter_mut().zip(path) {
        *dst = src as libc::c_char;
    }
    let len = (core::mem::size_of::<libc::sa_family_t>() + path.len() + 1) as libc::socklen_t;
    // SAFETY: fd is our fresh socket; addr is a sockaddr_un of at least len bytes.
    if unsafe { libc::connect(fd, ptr::addr_of!(addr).cast(), len) } != 0 {
        let err = io::Error::last_os_error();
        // SAFETY: fd is ours and not yet handed to nginx.
        unsafe { libc::close(fd) };
        return Err(LinkDown::Connect {
            peer: peer.to_owned(),
            err,
        });
    }
    // SAFETY: nginx takes the descriptor into a connection of its own
    // table; it is closed with that connection.
    let c = unsafe { ngx_get_connection(fd, log) };
    if c.is_null() {
        // SAFETY: nginx did not take fd.
        unsafe { libc::close(fd) };
        return Err(LinkDown::NoConnection);
    }
    // SAFETY: c is the live connection nginx just made, with its read and
    // write events; ngx_io holds the event module's I/O functions.
    unsafe {
        (*c).recv = nginx_sys::ngx_io.recv;
        (*c).send = nginx_sys::ngx_io.send;
        (*c).recv_chain = nginx_sys::ngx_io.recv_chain;
        (*c).send_chain = nginx_sys::ngx_io.send_chain;
        (*c).log = log;
        (*(*c).read).log = log;
        (*(*c).write).log = log;
        (*(*c).read).handler = Some(on_read);
        (*(*c).write).handler = Some(on_write);
        (*(*c).write).set_ready(1);
        let added = match nginx_sys::ngx_event_actions.add_conn {
            Some(add_conn) => add_conn(c),
            None => ngx_handle_read_event((*c).read, 0),
        };
        if added != NGX_OK as isize {
            ngx_close_connection(c);
            return Err(LinkDown::EventLoop);
        }
    }
    Ok(c)
}

impl DaemonLink {
    /// Queues a frame and writes what the socket takes.
    pub(super) fn send(&mut self, msg: &Request) -> Result<(), NotSent> {
        self.queue(msg)?;
        self.flush_out()
    }

    /// Queues a frame to go out once the current events are handled (a
    /// posted event), with every other frame queued by then: the lookups
    /// of one pass of the event loop reach the daemon in one write, which
    /// it reads and answers as one burst, where a write per lookup woke it
    /// per lookup.
    pub(super) fn send_soon(&mut self, msg: &impl Serialize) -> Result<(), NotSent> {
        self.queue(msg)?;
        if self.send_out.posted() == 0 {
            // SAFETY: the event lives in the boxed link, which takes it off
            // the posted queue before it is dropped (`shutdown`).
            unsafe {
                nginx_sys::ngx_post_event(
                    &mut self.send_out,
                    core::ptr::addr_of_mut!(nginx_sys::ngx_posted_events),
                )
            };
        }
        Ok(())
    }

    /// Appends a frame to the write buffer. One that cannot be encoded is
    /// dropped and logged; the link itself is fine.
    fn queue(&mut self, msg: &impl Serialize) -> Result<(), NotSent> {
        if self.conn.is_null() {
            return Err(NotSent);
        }
        if let Err(e) = write_frame(msg, &mut self.out) {
            error!(
                self.log,
                "shortlink: cannot encode a frame for the daemon: {}", e
            );
        }
        Ok(())
    }

    /// Writes queued bytes until the socket would block.
    fn flush_out(&mut self) -> Result<(), NotSent> {
        let c = self.conn;
        if c.is_null() {
            return Err(NotSent);
        }
        // SAFETY: c is our live connection; send was set in `open`.
        let Some(send) = (unsafe { (*c).send }) else {
            self.fail(LinkDown::Write);
            return Err(NotSent);
        };
        while self.out_pos < self.out.len() {
            let rest = &mut self.out[self.out_pos..];
            // SAFETY: our live connection; send reads `rest.len()` bytes.
            let n = unsafe { send(c, rest.as_mut_ptr(), rest.len()) };
            if n > 0 {
                self.out_pos += n as usize;
            } else if n == NGX_AGAIN as isize {
                // SAFETY: our connection's write event.
                unsafe { ngx_handle_write_event((*c).write, 0) };
                return Ok(());
            } else {
                self.fail(LinkDown::Write);
                return Err(NotSent);
            }
        }
        self.out.clear();
        self.out_pos = 0;
        Ok(())
    }

    /// Reads what the socket has and handles every whole frame in it.
    fn read_ready(&mut self, timed_out: bool) {
        let c = self.conn;
        if c.is_null() {
            return;
        }
        if timed_out {
            self.fail(LinkDown::HandshakeTimeout);
            return;
        }
        // The frames read before the socket closed or failed are handled
        // first: a daemon refusing the handshake sends its reason and
        // closes at once, and the reason is what the operator needs.
        let read = self.read_available(c);
        let mut at = 0;
        loop {
            match read_frame::<Reply>(&self.inb[at..]) {
                Ok(Some((reply, used))) => {
                    at += used;
                    self.handle(reply);
                    if self.conn.is_null() {
                        return;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    self.fail(LinkDown::BadFrame(e));
                    return;
                }
            }
        }
        self.inb.drain(..at);
        if let Err(down) = read {
            self.fail(down);
            return;
        }
        // SAFETY: our live connection's read event.
        unsafe { ngx_handle_read_event((*c).read, 0) };
    }

    /// Appends everything the socket holds to the read buffer.
    fn read_available(&mut self, c: *mut ngx_connection_t) -> Result<(), LinkDown> {
        // SAFETY: c is our live connection; recv was set in `open`.
        let recv = unsafe { (*c).recv }.ok_or(LinkDown::Read)?;
        loop {
            self.inb.reserve(16 * 1024);
            let len = self.inb.len();
            let spare = self.inb.capacity() - len;
            // SAFETY: recv writes at most `spare` bytes into the reserved tail.
            let n = unsafe { recv(c, self.inb.as_mut_ptr().add(len), spare) };
            if n > 0 {
                // SAFETY: recv initialised n bytes.
                unsafe { self.inb.set_len(len + n as usize) };
                self.last_read = now();
            } else if n == 0 {
                return Err(LinkDown::Closed);
            } else if n == NGX_AGAIN as isize {
                return Ok(());
            } else {
                return Err(LinkDown::Read);
            }
        }
    }

    /// Closes the socket, if open.
    pub(super) fn close(&mut self) {
        if !self.conn.is_null() {
            // SAFETY: our live connection; closing removes its events and timers.
            unsafe { ngx_close_connection(self.conn) };
            self.conn = ptr::null_mut();
        }
        self.out.clear();
        self.out_pos = 0;
        self.inb.clear();
    }
}

unsafe extern "C" fn on_read(ev: *mut ngx_event_t) {
    // SAFETY: nginx passes our connection's read event.
    let timed_out = unsafe { (*ev).timedout() } != 0;
    on_event(ev, |l| l.read_ready(timed_out));
}

extern "C" fn on_write(ev: *mut ngx_event_t) {
    on_event(ev, |l| {
        let _ = l.flush_out();
    });
}

/// Posted by [`DaemonLink::send_soon`]: what the last pass queued goes out.
pub(super) unsafe extern "C" fn on_send_out(ev: *mut ngx_event_t) {
    on_event(ev, |l| {
        let _ = l.flush_out();
    });
}
