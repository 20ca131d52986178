//! Answering before the request body is read, without resetting the
//! connection.
//!
//! Many answers come before the body is read: a login redirect for a
//! stale admin session, a refused CSRF token, a missing API key, a body
//! over its limit. hyper then drops the rest of the body and closes the
//! connection; on a Unix or TCP socket with unread bytes that close is a
//! reset, and a client still writing (nginx forwarding a 2 MiB CSV upload
//! with `proxy_request_buffering`) fails its write before it reads the
//! answer: nginx turns that into a 502, the operator sees "Bad Gateway"
//! instead of the login page.
//!
//! [`finish_body`] wraps every request body so that a body dropped before
//! its end keeps being read, and discarded, by a task of its own, as
//! nginx's own lingering close does: at most [`DRAIN_BYTES`] and for at
//! most [`DRAIN_TIME`], so a client cannot hold the daemon with an endless
//! body. hyper keeps the connection open while the body is still wanted,
//! writes the answer, and the client reads it once its write is through.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use http_body::{Frame, SizeHint};

/// Most bytes read and discarded after the answer: a little over the
/// largest body any route takes (32 MiB).
pub const DRAIN_BYTES: u64 = 40 << 20;
const _: () = assert!(DRAIN_BYTES as usize > crate::api::MAX_BATCH_BODY);
/// Longest time spent reading them.
pub const DRAIN_TIME: Duration = Duration::from_secs(30);

/// Middleware: the request's body is read to its end (within the bounds
/// above) even when the handler answers without it.
pub async fn finish_body(req: Request, next: Next) -> Response {
    let (parts, body) = req.into_parts();
    if body.is_end_stream() {
        return next.run(Request::from_parts(parts, body)).await;
    }
    let body = Body::new(Lingering {
        inner: Some(body),
        ended: false,
    });
    next.run(Request::from_parts(parts, body)).await
}

/// A request body that, dropped before its end, is drained by a task.
struct Lingering {
    inner: Option<Body>,
    ended: bool,
}

impl HttpBody for Lingering {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let Some(inner) = self.inner.as_mut() else {
            return Poll::Ready(None);
        };
        let frame = Pin::new(inner).poll_frame(cx);
        match &frame {
            Poll::Ready(None) | Poll::Ready(Some(Err(_))) => self.ended = true,
            _ => {}
        }
        frame
    }

    fn is_end_stream(&self) -> bool {
        self.ended || self.inner.as_ref().is_none_or(HttpBody::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        self.inner
            .as_ref()
            .map_or_else(|| SizeHint::with_exact(0), HttpBody::size_hint)
    }
}

impl Drop for Lingering {
    fn drop(&mut self) {
        let Some(body) = self.inner.take() else {
            return;
        };
        if self.ended || body.is_end_stream() {
            return;
        }
        // Outside a runtime (never while serving) the body is just dropped.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(drain(body));
        }
    }
}

/// Reads and discards `body` until its end, [`DRAIN_BYTES`] or
/// [`DRAIN_TIME`], whichever comes first.
async fn drain(body: Body) {
    let read = async {
        let mut body = body;
        let mut left = DRAIN_BYTES;
        while let Some(Ok(frame)) =
            std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await
        {
            let n = frame.data_ref().map_or(0, |d| d.len() as u64);
            match left.checked_sub(n) {
                Some(rest) => left = rest,
                None => return,
            }
        }
    };
    let _ = tokio::time::timeout(DRAIN_TIME, read).await;
}
