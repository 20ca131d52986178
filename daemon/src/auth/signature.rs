//! Signed requests: an app sends `X-App-Id`, `X-Timestamp` (Unix seconds)
//! and `X-Signature`, the hex HMAC-SHA256 under the app secret of
//! `"{timestamp}\n{METHOD}\n{path?query}\n{hex sha256(body)}"`. Timestamps
//! more than the window away are refused, and a signature is refused the
//! second time it is seen (also after a restart: used signatures are
//! stored until they are too old to pass the window).

use sha2::{Digest, Sha256};

use super::{AuthCache, AuthError, Principal};
use crate::app_secret::AppSecret;
use crate::store::Store;
use crate::timestamp::unix_now;

/// What verification reads from a signed request.
#[derive(Debug, Clone, Copy)]
pub struct SignedRequest<'a> {
    /// `X-App-Id`.
    pub app_id: &'a str,
    /// `X-Timestamp`, if sent.
    pub timestamp: Option<&'a str>,
    /// `X-Signature`, if sent.
    pub signature: Option<&'a str>,
    /// The HTTP method, as signed.
    pub method: &'a str,
    /// Path and query, as signed.
    pub path_and_query: &'a str,
    /// The whole body, as signed.
    pub body: &'a [u8],
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
    AppSecret::from_clear(secret).sign(message)
}

/// The principal of a signed request: app known and not revoked,
/// timestamp within `window` seconds, signature right and never used.
pub async fn verify_signature(
    store: &Store,
    cache: &AuthCache,
    window: i64,
    req: &SignedRequest<'_>,
) -> Result<Principal, AuthError> {
    let ts_raw = req
        .timestamp
        .ok_or(AuthError::MissingSignedHeader("x-timestamp"))?;
    let sig = req
        .signature
        .ok_or(AuthError::MissingSignedHeader("x-signature"))?
        .to_ascii_lowercase();
    let ts: i64 = ts_raw.parse().map_err(|_| AuthError::InvalidTimestamp)?;
    let now = unix_now();
    if !within_window(now, ts, window) {
        return Err(AuthError::StaleTimestamp { ts, window, now });
    }
    let stored = match cache.app(req.app_id) {
        Some(a) => a,
        None => {
            let found = store.app_by_app_id(req.app_id.to_string()).await?;
            let a = found.ok_or_else(|| AuthError::UnknownApp(req.app_id.to_string()))?;
            cache.keep_app(req.app_id, a.clone());
            a
        }
    };
    if stored.revoked_at.is_some() {
        return Err(AuthError::RevokedApp(req.app_id.to_string()));
    }
    let presented = hex::decode(&sig).map_err(|_| AuthError::MalformedSignature)?;
    let message = signing_string(ts, req.method, req.path_and_query, req.body);
    if !AppSecret::from_stored(&stored.secret).verifies(&message, &presented) {
        return Err(AuthError::SignatureMismatch);
    }
    if !cache.first_use(&sig, ts, window) {
        return Err(AuthError::ReplayedSignature);
    }
    let recorded = store.record_signature(sig.clone(), ts).await?;
    if !recorded {
        return Err(AuthError::ReplayedSignature);
    }
    Ok(Principal::from_stored(
        format!("app:{}", stored.app_id),
        &stored.scopes,
        stored.team_id,
        stored.role,
    ))
}

/// True when `ts` is at most `window` seconds from `now`, either way.
/// `abs_diff` cannot overflow: `(now - ts).abs()` wrapped for a timestamp
/// 2^63 s away and let it through.
fn within_window(now: i64, ts: i64, window: i64) -> bool {
    now.abs_diff(ts) <= window.unsigned_abs()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_does_not_wrap() {
        let now = 1_800_000_000;
        assert!(within_window(now, now - 60, 60));
        assert!(within_window(now, now + 60, 60));
        assert!(!within_window(now, now - 61, 60));
        for ts in [i64::MIN, now.wrapping_sub(1 << 63), i64::MAX, 0] {
            assert!(!within_window(now, ts, 60), "{ts}");
        }
    }

    #[test]
    fn signature_is_hmac_of_the_documented_string() {
        let msg = signing_string(1700000000, "POST", "/api/v1/links", b"{}");
        assert!(msg.starts_with("1700000000\nPOST\n/api/v1/links\n44136fa3"));
        assert_eq!(sign("k", "m").len(), 64);
        assert_ne!(sign("k", "m"), sign("k2", "m"));
    }
}
