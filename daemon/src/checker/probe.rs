//! One probe of a link's target, as a visitor's browser would meet it:
//! `HEAD` (then `GET`, headers only, when the server refuses `HEAD`),
//! following up to [`MAX_REDIRECTS`] redirects, within one timeout. Every
//! hop's host is resolved here and refused when an address is private,
//! loopback or link-local (unless the configuration allows those), and the
//! connection goes to the address that was checked, so a name that
//! resolves differently the second time cannot lead the checker inside.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use http_body_util::Empty;
use hyper::body::Bytes;
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_util::either::Either;

/// Redirects followed before the probe gives up.
pub const MAX_REDIRECTS: usize = 5;
/// What the checker calls itself.
pub const USER_AGENT: &str = concat!("shortlinkd-checker/", env!("CARGO_PKG_VERSION"));

/// How probes are made.
#[derive(Clone)]
pub struct ProbeRules {
    /// The whole probe, redirects included.
    pub timeout: Duration,
    /// Probe private, loopback and link-local addresses too.
    pub allow_private: bool,
    /// Certificates of `https` targets are checked against these.
    pub tls: Arc<rustls::ClientConfig>,
}

/// What a probe found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The last answer's status (after redirects).
    Status(u16),
    /// Not probed: the target (or a redirect) leads to an address the
    /// checker may not reach. Neither healthy nor failing.
    Skipped(String),
    /// No answer: why (DNS, connect, TLS, timeout, too many redirects).
    Failed(String),
}

impl Outcome {
    /// A visitor would land on an error page or none.
    pub fn is_failure(&self) -> bool {
        match self {
            Outcome::Status(s) => *s >= 400,
            Outcome::Skipped(_) => false,
            Outcome::Failed(_) => true,
        }
    }
}

/// True for addresses a public checker has no business reaching.
pub fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(a) => {
            let [a0, a1, ..] = a.octets();
            a.is_private()
                || a.is_loopback()
                || a.is_link_local()
                || a.is_unspecified()
                || a.is_broadcast()
                || a.is_multicast()
                || (a0 == 100 && (64..128).contains(&a1))
        }
        IpAddr::V6(a) => {
            if let Some(v4) = a.to_ipv4_mapped() {
                return is_private(IpAddr::V4(v4));
            }
            let first = a.segments()[0];
            a.is_loopback()
                || a.is_unspecified()
                || a.is_multicast()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
        }
    }
}

/// Probes `url` under `rules`.
pub async fn probe(url: &str, rules: &ProbeRules) -> Outcome {
    match tokio::time::timeout(rules.timeout, follow(url, rules)).await {
        Ok(outcome) => outcome,
        Err(_) => Outcome::Failed(format!("no answer within {:?}", rules.timeout)),
    }
}

async fn follow(start: &str, rules: &ProbeRules) -> Outcome {
    let mut url = match url::Url::parse(start) {
        Ok(u) => u,
        Err(e) => return Outcome::Failed(format!("not a URL: {e}")),
    };
    for _ in 0..=MAX_REDIRECTS {
        let addr = match resolve(&url, rules.allow_private).await {
            Ok(addr) => addr,
            Err(skip @ Outcome::Skipped(_)) => return skip,
            Err(e) => return e,
        };
        let mut answer = ask(&url, addr, Method::HEAD, rules).await;
        if matches!(answer, Ok((405 | 501, _))) {
            answer = ask(&url, addr, Method::GET, rules).await;
        }
        let (status, location) = match answer {
            Ok(a) => a,
            Err(why) => return Outcome::Failed(why),
        };
        let next = location
            .filter(|_| (300..400).contains(&status))
            .and_then(|l| url.join(&l).ok());
        match next {
            Some(n) if matches!(n.scheme(), "http" | "https") => url = n,
            _ => return Outcome::Status(status),
        }
    }
    Outcome::Failed(format!("more than {MAX_REDIRECTS} redirects"))
}

/// The address to connect to for `url`'s host, once checked.
pub(crate) async fn resolve(url: &url::Url, allow_private: bool) -> Result<SocketAddr, Outcome> {
    let host = url
        .host_str()
        .ok_or_else(|| Outcome::Failed("no host".into()))?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let port = url
        .port_or_known_default()
        .ok_or_else(|| Outcome::Failed(format!("no port for scheme {}", url.scheme())))?;
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), port))
        .await
        .map_err(|e| Outcome::Failed(format!("cannot resolve {host}: {e}")))?
        .collect();
    let first = *addrs
        .first()
        .ok_or_else(|| Outcome::Failed(format!("{host} has no address")))?;
    if !allow_private {
        if let Some(p) = addrs.iter().find(|a| is_private(a.ip())) {
            return Err(Outcome::Skipped(format!(
                "{host} resolves to {}, a private address (not probed)",
                p.ip()
            )));
        }
    }
    Ok(first)
}

/// A connection to `addr` for `url`: TLS for `https`, the certificate
/// checked against `tls` for the URL's host.
pub(crate) async fn connect(
    url: &url::Url,
    addr: SocketAddr,
    tls: &Arc<rustls::ClientConfig>,
) -> Result<Either<TcpStream, TlsStream<TcpStream>>, String> {
    let tcp = TcpStream::connect(addr)
        .await
        .map_err(|e| format!("cannot connect to {addr}: {e}"))?;
    if url.scheme() != "https" {
        return Ok(Either::Left(tcp));
    }
    let host = url.host_str().unwrap_or_default();
    let name = rustls::pki_types::ServerName::try_from(
        host.trim_start_matches('[')
            .trim_end_matches(']')
            .to_string(),
    )
    .map_err(|e| format!("TLS name {host}: {e}"))?;
    let tls = tokio_rustls::TlsConnector::from(Arc::clone(tls))
        .connect(name, tcp)
        .await
        .map_err(|e| format!("TLS with {host}: {e}"))?;
    Ok(Either::Right(tls))
}

/// One request; the status and `Location`.
async fn ask(
    url: &url::Url,
    addr: SocketAddr,
    method: Method,
    rules: &ProbeRules,
) -> Result<(u16, Option<String>), String> {
    let io = connect(url, addr, &rules.tls).await?;
    send(io, url, method).await
}

/// The request target (path and query) and the `Host` of `url`.
pub(crate) fn path_and_authority(url: &url::Url) -> (String, String) {
    let path = match url.query() {
        Some(q) => format!("{}?{q}", url.path()),
        None => url.path().to_string(),
    };
    let authority = match url.port() {
        Some(p) => format!("{}:{p}", url.host_str().unwrap_or_default()),
        None => url.host_str().unwrap_or_default().to_string(),
    };
    (path, authority)
}

async fn send<S>(io: S, url: &url::Url, method: Method) -> Result<(u16, Option<String>), String>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io))
        .await
        .map_err(|e| format!("HTTP: {e}"))?;
    let conn = tokio::spawn(conn);
    let (path, authority) = path_and_authority(url);
    let req = Request::builder()
        .method(method)
        .uri(path)
        .header(hyper::header::HOST, authority)
        .header(hyper::header::USER_AGENT, USER_AGENT)
        .header(hyper::header::ACCEPT, "*/*")
        .body(Empty::<Bytes>::new())
        .map_err(|e| format!("request: {e}"))?;
    let resp = sender
        .send_request(req)
        .await
        .map_err(|e| format!("HTTP: {e}"))?;
    let status: StatusCode = resp.status();
    let location = resp
        .headers()
        .get(hyper::header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    // Headers are all a probe needs: the body and the connection go.
    drop(resp);
    conn.abort();
    Ok((status.as_u16(), location))
}

/// The certificates every probe trusts: the system's store.
pub fn system_tls() -> Result<Arc<rustls::ClientConfig>, String> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS for the checker: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}
