//! Where a sign-in comes from, as the lock-out counts it.
//!
//! The peer of the connection, unless the peer is a proxy we trust: the API
//! Unix socket (nginx, which sets `X-Real-IP $remote_addr`) or a loopback
//! TCP peer. Only then do `X-Real-IP` or, failing that, the last entry of
//! `X-Forwarded-For` (the one the proxy appended) name the client; from
//! anyone else these headers are ignored, so a client cannot pick the
//! address it is counted under.

use std::convert::Infallible;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};

use axum::extract::connect_info::{ConnectInfo, Connected};
use axum::http::request::Parts;
use axum::http::HeaderMap;
use axum::serve::IncomingStream;
use tokio::net::{TcpListener, UnixListener};

/// The connection a request came in on; the API listeners record it
/// (`into_make_service_with_connect_info::<ApiPeer>()`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiPeer {
    /// The API Unix socket: nginx, or a local process allowed to open it.
    Unix,
    /// A TCP connection (`api_listen`).
    Tcp(SocketAddr),
}

impl Connected<IncomingStream<'_, UnixListener>> for ApiPeer {
    fn connect_info(_: IncomingStream<'_, UnixListener>) -> Self {
        ApiPeer::Unix
    }
}

impl Connected<IncomingStream<'_, TcpListener>> for ApiPeer {
    fn connect_info(stream: IncomingStream<'_, TcpListener>) -> Self {
        ApiPeer::Tcp(*stream.remote_addr())
    }
}

impl ApiPeer {
    /// Whether this peer's `X-Real-IP`/`X-Forwarded-For` are believed.
    fn is_trusted_proxy(self) -> bool {
        match self {
            ApiPeer::Unix => true,
            ApiPeer::Tcp(addr) => addr.ip().to_canonical().is_loopback(),
        }
    }
}

/// The address a sign-in is counted under.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ClientAddr {
    /// An IPv4 address, or an IPv6 /64 (one host usually holds a whole
    /// /64, so single addresses would be free to rotate).
    Ip(String),
    /// The Unix socket without a forwarded address: every client through
    /// it looks the same.
    Local,
    /// The connection was not recorded.
    Unknown,
}

impl ClientAddr {
    /// The key for `ip`.
    pub fn of_ip(ip: IpAddr) -> Self {
        match ip.to_canonical() {
            IpAddr::V4(v4) => ClientAddr::Ip(v4.to_string()),
            IpAddr::V6(v6) => {
                let s = v6.segments();
                let net = Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0);
                ClientAddr::Ip(format!("{net}/64"))
            }
        }
    }

    /// The client of a request that came from `peer` with `headers`.
    pub fn resolve(peer: Option<ApiPeer>, headers: &HeaderMap) -> Self {
        let Some(peer) = peer else {
            return ClientAddr::Unknown;
        };
        if peer.is_trusted_proxy() {
            if let Some(ip) = forwarded_ip(headers) {
                return Self::of_ip(ip);
            }
        }
        match peer {
            ApiPeer::Unix => ClientAddr::Local,
            ApiPeer::Tcp(addr) => Self::of_ip(addr.ip()),
        }
    }

    /// False when many clients may share this address.
    pub fn is_known(&self) -> bool {
        matches!(self, ClientAddr::Ip(_))
    }

    /// The address as text, for logs.
    pub fn as_str(&self) -> &str {
        match self {
            ClientAddr::Ip(ip) => ip,
            ClientAddr::Local => "local",
            ClientAddr::Unknown => "unknown",
        }
    }
}

impl std::fmt::Display for ClientAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `X-Real-IP`, else the last `X-Forwarded-For` entry, when it is an IP.
fn forwarded_ip(headers: &HeaderMap) -> Option<IpAddr> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(ip) = header("x-real-ip").and_then(|v| v.trim().parse().ok()) {
        return Some(ip);
    }
    header("x-forwarded-for")?
        .rsplit(',')
        .next()
        .and_then(|v| v.trim().parse().ok())
}

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for ClientAddr {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let peer = parts
            .extensions
            .get::<ConnectInfo<ApiPeer>>()
            .map(|ConnectInfo(p)| *p);
        Ok(ClientAddr::resolve(peer, &parts.headers))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        h
    }

    fn tcp(ip: &str) -> Option<ApiPeer> {
        Some(ApiPeer::Tcp(SocketAddr::new(ip.parse().unwrap(), 40000)))
    }

    #[test]
    fn trusted_proxies_name_the_client() {
        let real = headers(&[("x-real-ip", "192.0.2.7")]);
        for peer in [Some(ApiPeer::Unix), tcp("127.0.0.1"), tcp("::1")] {
            assert_eq!(ClientAddr::resolve(peer, &real).as_str(), "192.0.2.7");
        }
        // The last X-Forwarded-For entry is the proxy's; earlier ones are
        // whatever the client sent.
        let xff = headers(&[("x-forwarded-for", "10.9.9.9, 198.51.100.4")]);
        let unix = Some(ApiPeer::Unix);
        assert_eq!(ClientAddr::resolve(unix, &xff).as_str(), "198.51.100.4");
        // No usable header: the socket itself.
        let junk = headers(&[("x-real-ip", "not an address")]);
        assert_eq!(ClientAddr::resolve(unix, &junk).as_str(), "local");
        assert_eq!(
            ClientAddr::resolve(tcp("127.0.0.1"), &HeaderMap::new()).as_str(),
            "127.0.0.1"
        );
    }

    #[test]
    fn other_peers_cannot_choose_their_address() {
        let spoof = headers(&[("x-real-ip", "192.0.2.7"), ("x-forwarded-for", "192.0.2.8")]);
        assert_eq!(
            ClientAddr::resolve(tcp("203.0.113.5"), &spoof).as_str(),
            "203.0.113.5"
        );
        assert_eq!(ClientAddr::resolve(None, &spoof).as_str(), "unknown");
    }

    #[test]
    fn ipv6_clients_count_by_their_64() {
        let a = ClientAddr::resolve(
            Some(ApiPeer::Unix),
            &headers(&[("x-real-ip", "2001:db8:1:2::1")]),
        );
        let b = ClientAddr::of_ip("2001:db8:1:2:ffff::9".parse().unwrap());
        assert_eq!(a, b);
        assert_eq!(a.as_str(), "2001:db8:1:2::/64");
        assert_ne!(a, ClientAddr::of_ip("2001:db8:1:3::1".parse().unwrap()));
        // An IPv4-mapped address is the IPv4 one.
        let mapped = ClientAddr::of_ip("::ffff:192.0.2.1".parse().unwrap());
        assert_eq!(mapped.as_str(), "192.0.2.1");
    }
}
