//! One delivery attempt: a `POST` of the JSON body to the receiver, under
//! the link checker's rules (`checker::probe`): the host is resolved and
//! refused when private, loopback or link-local (unless
//! `webhooks.private`), the connection goes to the address checked, and
//! the whole attempt has one timeout. Redirects are not followed.

use std::time::Duration;

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::{Method, Request};
use hyper_util::rt::TokioIo;

use crate::checker::probe::{self, Outcome, ProbeRules};

/// What the receiver is told the sender is.
pub const USER_AGENT: &str = concat!("shortlinkd-webhooks/", env!("CARGO_PKG_VERSION"));

/// One delivery's request.
pub struct Post<'a> {
    pub url: &'a str,
    pub body: Vec<u8>,
    /// `Shortlink-Signature`.
    pub signature: String,
    pub event: &'a str,
    pub delivery: i64,
}

/// Sends `post`; the answer's status, or why none came.
pub async fn post(post: Post<'_>, rules: &ProbeRules) -> Result<u16, String> {
    match tokio::time::timeout(rules.timeout, attempt(post, rules)).await {
        Ok(r) => r,
        Err(_) => Err(format!("no answer within {}", millis(rules.timeout))),
    }
}

fn millis(d: Duration) -> String {
    format!("{} ms", d.as_millis())
}

async fn attempt(post: Post<'_>, rules: &ProbeRules) -> Result<u16, String> {
    let url = url::Url::parse(post.url).map_err(|e| format!("not a URL: {e}"))?;
    let addr = match probe::resolve(&url, rules.allow_private).await {
        Ok(addr) => addr,
        Err(Outcome::Skipped(why)) => return Err(format!("refused: {why}")),
        Err(Outcome::Failed(why)) => return Err(why),
        Err(Outcome::Status(s)) => return Err(format!("unexpected status {s}")),
    };
    let io = probe::connect(&url, addr, &rules.tls).await?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io))
        .await
        .map_err(|e| format!("HTTP: {e}"))?;
    let conn = tokio::spawn(conn);
    let (path, authority) = probe::path_and_authority(&url);
    let req = Request::builder()
        .method(Method::POST)
        .uri(path)
        .header(hyper::header::HOST, authority)
        .header(hyper::header::USER_AGENT, USER_AGENT)
        .header(hyper::header::CONTENT_TYPE, "application/json")
        .header(super::signature::HEADER, post.signature)
        .header("shortlink-event", post.event)
        .header("shortlink-delivery", post.delivery.to_string())
        .body(Full::new(Bytes::from(post.body)))
        .map_err(|e| format!("request: {e}"))?;
    let resp = sender.send_request(req).await;
    conn.abort();
    let resp = resp.map_err(|e| format!("HTTP: {e}"))?;
    Ok(resp.status().as_u16())
}
