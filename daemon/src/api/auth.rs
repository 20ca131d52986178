//! Authentication: API keys (`X-Api-Key`) and signed requests (`X-App-Id`,
//! `X-Timestamp`, `X-Signature`), and the scopes they carry.
//!
//! API keys look like `slk_<12 hex prefix><40 hex secret>`; only the SHA-256
//! of the whole key is stored and compared in constant time. A signature is
//! the hex HMAC-SHA256, keyed with the app secret, of
//! `"{timestamp}\n{METHOD}\n{path?query}\n{hex sha256(body)}"`; timestamps
//! more than the window (60 s) away are refused, and a signature is refused
//! the second time it is seen.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::Response;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::error::ApiError;
use crate::app::{App, SharedApp};
use crate::store::keys::{self, ApiKey};
use crate::store::unix_now;

/// Verified credentials are re-read from the database after this long.
const CACHE_TTL: Duration = Duration::from_secs(30);
/// Largest body a signed request may carry (it is hashed in memory).
pub const MAX_SIGNED_BODY: usize = 32 * 1024 * 1024;

/// A permission an API key or app carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Create, edit and delete links.
    LinksWrite,
    /// Read links.
    LinksRead,
    /// Read click stats and metrics.
    StatsRead,
    /// Manage keys, apps and users; implies every other scope.
    Admin,
}

impl Scope {
    /// Every scope.
    pub const ALL: [Scope; 4] = [
        Scope::LinksWrite,
        Scope::LinksRead,
        Scope::StatsRead,
        Scope::Admin,
    ];

    /// Wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::LinksWrite => "links:write",
            Scope::LinksRead => "links:read",
            Scope::StatsRead => "stats:read",
            Scope::Admin => "admin",
        }
    }

    /// Parses a wire name.
    pub fn parse(s: &str) -> Option<Scope> {
        Scope::ALL.into_iter().find(|x| x.as_str() == s.trim())
    }

    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

/// Parses a comma-separated scope list; `Err` names the unknown scope.
pub fn parse_scopes(list: &[String]) -> Result<Vec<Scope>, String> {
    let mut out = Vec::new();
    for s in list
        .iter()
        .flat_map(|s| s.split(','))
        .filter(|s| !s.trim().is_empty())
    {
        let scope = Scope::parse(s).ok_or_else(|| {
            format!(
                "unknown scope \"{}\" (known: links:write, links:read, stats:read, admin)",
                s.trim()
            )
        })?;
        if !out.contains(&scope) {
            out.push(scope);
        }
    }
    if out.is_empty() {
        return Err("at least one scope is needed".into());
    }
    Ok(out)
}

/// Stored form of a scope list.
pub fn scopes_to_string(scopes: &[Scope]) -> String {
    scopes
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(",")
}

/// Who is calling and what they may do; put in request extensions by the
/// auth middleware (or by the control socket for the local CLI).
#[derive(Debug, Clone)]
pub struct Principal {
    /// `key:<id>`, `app:<app id>` or `cli`.
    pub who: String,
    bits: u8,
}

impl Principal {
    /// The owner of the control socket: every scope.
    pub fn local() -> Self {
        Self {
            who: "cli".into(),
            bits: 0xff,
        }
    }

    fn from_stored(who: String, scopes: &str) -> Self {
        let bits = scopes
            .split(',')
            .filter_map(Scope::parse)
            .fold(0u8, |b, s| b | s.bit());
        Self { who, bits }
    }

    /// True when the scope (or `admin`) was granted.
    pub fn has(&self, scope: Scope) -> bool {
        self.bits & (scope.bit() | Scope::Admin.bit()) != 0
    }

    /// 403 unless the scope was granted.
    pub fn require(&self, scope: Scope) -> Result<(), ApiError> {
        if self.has(scope) {
            Ok(())
        } else {
            Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "insufficient_scope",
                format!(
                    "these credentials lack the {} scope needed here",
                    scope.as_str()
                ),
            ))
        }
    }
}

/// Recently verified credentials and used signatures.
#[derive(Default)]
pub struct AuthCache {
    keys: Mutex<HashMap<String, (ApiKey, Instant)>>,
    apps: Mutex<HashMap<String, (keys::App, Instant)>>,
    /// Signature → its timestamp, while the timestamp is inside the window.
    signatures: Mutex<HashMap<String, i64>>,
}

impl AuthCache {
    /// Drops a key (revoked) so the next request re-reads it.
    pub fn forget_key(&self, prefix: &str) {
        self.keys.lock().expect("auth cache").remove(prefix);
    }

    /// Drops an app (revoked).
    pub fn forget_app(&self, app_id: &str) {
        self.apps.lock().expect("auth cache").remove(app_id);
    }

    /// Loads signatures recorded by an earlier run, so a restart does not
    /// reopen the replay window.
    pub fn remember_signatures(&self, sigs: Vec<(String, i64)>) {
        self.signatures.lock().expect("auth cache").extend(sigs);
    }

    /// Records a signature; false if it was already used.
    fn first_use(&self, signature: &str, ts: i64, window: i64) -> bool {
        let mut sigs = self.signatures.lock().expect("auth cache");
        if sigs.len() > 10_000 {
            let cutoff = unix_now() - 2 * window;
            sigs.retain(|_, t| *t >= cutoff);
        }
        sigs.insert(signature.to_string(), ts).is_none()
    }
}

fn unauthorized(code: &'static str, message: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::UNAUTHORIZED, code, message)
}

/// Generates a new API key secret and its stored prefix and hash.
pub fn new_api_key() -> (String, String, Vec<u8>) {
    let mut bytes = [0u8; 26];
    getrandom::getrandom(&mut bytes).expect("OS random source");
    let prefix = hex::encode(&bytes[..6]);
    let secret = format!("slk_{prefix}{}", hex::encode(&bytes[6..]));
    let hash = Sha256::digest(secret.as_bytes()).to_vec();
    (secret, prefix, hash)
}

/// Generates a new app id and secret.
pub fn new_app_credentials() -> (String, String) {
    let mut bytes = [0u8; 40];
    getrandom::getrandom(&mut bytes).expect("OS random source");
    (
        format!("app_{}", hex::encode(&bytes[..8])),
        hex::encode(&bytes[8..]),
    )
}

async fn verify_key(app: &App, presented: &str) -> Result<Principal, ApiError> {
    let bad = || unauthorized("invalid_api_key", "the API key is not valid");
    let rest = presented.trim().strip_prefix("slk_").ok_or_else(bad)?;
    if rest.len() != 12 + 40 || !rest.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(bad());
    }
    let prefix = rest[..12].to_string();
    let cached = {
        let keys = app.auth.keys.lock().expect("auth cache");
        keys.get(&prefix)
            .filter(|(_, at)| at.elapsed() < CACHE_TTL)
            .map(|(k, _)| k.clone())
    };
    let key = match cached {
        Some(k) => k,
        None => {
            let p = prefix.clone();
            let found = app
                .store
                .read(move |c| keys::key_by_prefix(c, &p))
                .await
                .map_err(ApiError::from)?;
            let Some(k) = found else {
                return Err(bad());
            };
            app.auth
                .keys
                .lock()
                .expect("auth cache")
                .insert(prefix, (k.clone(), Instant::now()));
            k
        }
    };
    let hash = Sha256::digest(presented.trim().as_bytes());
    if !bool::from(hash.as_slice().ct_eq(&key.hash)) {
        return Err(bad());
    }
    if key.revoked_at.is_some() {
        return Err(unauthorized(
            "revoked_api_key",
            format!("the API key \"{}\" was revoked", key.name),
        ));
    }
    Ok(Principal::from_stored(
        format!("key:{}", key.id),
        &key.scopes,
    ))
}

/// The string an app signs.
pub fn signing_string(ts: i64, method: &str, path_and_query: &str, body: &[u8]) -> String {
    format!(
        "{ts}\n{method}\n{path_and_query}\n{}",
        hex::encode(Sha256::digest(body))
    )
}

/// Hex HMAC-SHA256 of `message` under `secret` (what clients send).
pub fn sign(secret: &str, message: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("any key length");
    mac.update(message.as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

async fn verify_signature(
    app: &App,
    app_id: &str,
    headers: &axum::http::HeaderMap,
    method: &str,
    path_and_query: &str,
    body: &[u8],
) -> Result<Principal, ApiError> {
    let header = |name: &'static str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .ok_or_else(|| {
                unauthorized(
                    "missing_credentials",
                    format!("signed requests need X-App-Id, X-Timestamp and X-Signature; {name} is missing"),
                )
            })
    };
    let ts_raw = header("x-timestamp")?;
    let sig = header("x-signature")?.to_ascii_lowercase();
    let ts: i64 = ts_raw
        .parse()
        .map_err(|_| unauthorized("invalid_timestamp", "X-Timestamp must be Unix seconds"))?;
    let window = app.config.signature_window;
    let now = unix_now();
    if (now - ts).abs() > window {
        return Err(unauthorized(
            "stale_timestamp",
            format!("X-Timestamp {ts} is more than {window} s away from the daemon clock ({now})"),
        ));
    }
    let cached = {
        let apps = app.auth.apps.lock().expect("auth cache");
        apps.get(app_id)
            .filter(|(_, at)| at.elapsed() < CACHE_TTL)
            .map(|(a, _)| a.clone())
    };
    let stored = match cached {
        Some(a) => a,
        None => {
            let id = app_id.to_string();
            let found = app
                .store
                .read(move |c| keys::app_by_app_id(c, &id))
                .await
                .map_err(ApiError::from)?;
            let Some(a) = found else {
                return Err(unauthorized("unknown_app", format!("no app \"{app_id}\"")));
            };
            app.auth
                .apps
                .lock()
                .expect("auth cache")
                .insert(app_id.to_string(), (a.clone(), Instant::now()));
            a
        }
    };
    if stored.revoked_at.is_some() {
        return Err(unauthorized(
            "revoked_app",
            format!("the app \"{app_id}\" was revoked"),
        ));
    }
    let presented = hex::decode(&sig)
        .map_err(|_| unauthorized("invalid_signature", "X-Signature must be hex HMAC-SHA256"))?;
    let mut mac = Hmac::<Sha256>::new_from_slice(stored.secret.as_bytes()).expect("any key length");
    mac.update(signing_string(ts, method, path_and_query, body).as_bytes());
    if mac.verify_slice(&presented).is_err() {
        return Err(unauthorized(
            "invalid_signature",
            "X-Signature does not match this request",
        ));
    }
    if !app.auth.first_use(&sig, ts, window) {
        return Err(unauthorized(
            "replayed_signature",
            "this signature was already used; sign every request afresh",
        ));
    }
    let s = sig.clone();
    let recorded = app
        .store
        .write(move |c| keys::record_signature(c, &s, ts))
        .await
        .map_err(ApiError::from)?;
    if !recorded {
        return Err(unauthorized(
            "replayed_signature",
            "this signature was already used; sign every request afresh",
        ));
    }
    Ok(Principal::from_stored(
        format!("app:{}", stored.app_id),
        &stored.scopes,
    ))
}

/// Middleware: authenticates the request or answers 401.
pub async fn authenticate(State(app): State<SharedApp>, req: Request, next: Next) -> Response {
    match authenticated(&app, req).await {
        Ok(req) => next.run(req).await,
        Err(e) => axum::response::IntoResponse::into_response(e),
    }
}

async fn authenticated(app: &App, mut req: Request) -> Result<Request, ApiError> {
    let headers = req.headers();
    let principal = if let Some(key) = headers.get("x-api-key") {
        let key = key
            .to_str()
            .map_err(|_| unauthorized("invalid_api_key", "the API key is not valid"))?;
        verify_key(app, key).await?
    } else if let Some(app_id) = headers.get("x-app-id") {
        let app_id = app_id
            .to_str()
            .map_err(|_| unauthorized("unknown_app", "X-App-Id is not valid"))?
            .trim()
            .to_string();
        let (parts, body) = req.into_parts();
        let bytes = axum::body::to_bytes(body, MAX_SIGNED_BODY)
            .await
            .map_err(|_| {
                ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "body_too_large",
                    "the body of a signed request is too large",
                )
            })?;
        let pq = parts
            .uri
            .path_and_query()
            .map(|p| p.as_str())
            .unwrap_or("/");
        let principal = verify_signature(
            app,
            &app_id,
            &parts.headers,
            parts.method.as_str(),
            pq,
            &bytes,
        )
        .await?;
        req = Request::from_parts(parts, Body::from(bytes));
        principal
    } else {
        return Err(unauthorized(
            "missing_credentials",
            "send an API key in X-Api-Key, or sign the request (X-App-Id, X-Timestamp, X-Signature)",
        ));
    };
    req.extensions_mut().insert(principal);
    Ok(req)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_parse_and_admin_implies_all() {
        let s = parse_scopes(&["links:read, stats:read".into()]).unwrap();
        assert_eq!(s, vec![Scope::LinksRead, Scope::StatsRead]);
        assert!(parse_scopes(&["links:delete".into()])
            .unwrap_err()
            .contains("links:delete"));
        let p = Principal::from_stored("key:1".into(), &scopes_to_string(&s));
        assert!(p.has(Scope::LinksRead));
        assert!(!p.has(Scope::LinksWrite));
        assert_eq!(p.require(Scope::LinksWrite).unwrap_err().status, 403);
        let admin = Principal::from_stored("key:2".into(), "admin");
        assert!(Scope::ALL.iter().all(|s| admin.has(*s)));
    }

    #[test]
    fn keys_have_the_documented_shape() {
        let (secret, prefix, hash) = new_api_key();
        assert!(secret.starts_with(&format!("slk_{prefix}")));
        assert_eq!(secret.len(), 4 + 52);
        assert_eq!(hash, Sha256::digest(secret.as_bytes()).to_vec());
    }

    #[test]
    fn signature_is_hmac_of_the_documented_string() {
        let msg = signing_string(1700000000, "POST", "/api/v1/links", b"{}");
        assert!(msg.starts_with("1700000000\nPOST\n/api/v1/links\n44136fa3"));
        assert_eq!(sign("k", "m").len(), 64);
        assert_ne!(sign("k", "m"), sign("k2", "m"));
    }
}
