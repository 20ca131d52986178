//! Authentication and authorisation, apart from HTTP: who a request comes
//! from ([`Principal`]) and what it may do ([`Scope`]).
//!
//! Callers prove who they are with an API key ([`verify_key`]) or a signed
//! request ([`verify_signature`]); [`AuthCache`] keeps recently verified
//! credentials and used signatures. Failures are [`AuthError`]s, which the
//! API's middleware turns into 401 and 403 replies.

mod api_key;
mod cache;
mod principal;
mod signature;

pub use api_key::{key_prefix, verify_key, NewApiKey};
pub use cache::AuthCache;
pub use principal::Principal;
pub use signature::{sign, signing_string, verify_signature, SignedRequest};

use crate::access::Scope;
use crate::store::StoreError;

/// Why a request was not authenticated, or not allowed.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// Neither an API key nor a signature was sent.
    #[error(
        "send an API key in X-Api-Key or Authorization: Bearer, or sign the request (X-App-Id, X-Timestamp, X-Signature)"
    )]
    MissingCredentials,
    /// More than one credential was sent (two ways of sending a key, or a
    /// key and a signature's headers): which one should count is not
    /// guessed (RFC 6750 2: one method per request).
    #[error(
        "the request presents more than one credential ({0}); send an API key or a signature, once"
    )]
    AmbiguousCredentials(&'static str),
    /// A signed request lacks one of its headers (named, lower case).
    #[error("signed requests need X-App-Id, X-Timestamp and X-Signature; {0} is missing")]
    MissingSignedHeader(&'static str),
    /// The API key is malformed, unknown or wrong.
    #[error("the API key is not valid")]
    InvalidApiKey,
    /// The API key (named) was revoked.
    #[error("the API key \"{0}\" was revoked")]
    RevokedApiKey(String),
    /// The API key (named) is past its expiry (Unix seconds).
    #[error("the API key \"{0}\" expired at {1}")]
    ExpiredApiKey(String, i64),
    /// `X-App-Id` is not readable text.
    #[error("X-App-Id is not valid")]
    InvalidAppId,
    /// No app has this app id.
    #[error("no app \"{0}\"")]
    UnknownApp(String),
    /// The app was revoked.
    #[error("the app \"{0}\" was revoked")]
    RevokedApp(String),
    /// `X-Timestamp` is not a number.
    #[error("X-Timestamp must be Unix seconds")]
    InvalidTimestamp,
    /// `X-Timestamp` is outside the window around the daemon's clock.
    #[error("X-Timestamp {ts} is more than {window} s away from the daemon clock ({now})")]
    StaleTimestamp {
        /// What the request said.
        ts: i64,
        /// The accepted distance, in seconds.
        window: i64,
        /// The daemon's clock.
        now: i64,
    },
    /// `X-Signature` is not hex.
    #[error("X-Signature must be hex HMAC-SHA256")]
    MalformedSignature,
    /// `X-Signature` is not the HMAC of this request.
    #[error("X-Signature does not match this request")]
    SignatureMismatch,
    /// The signature was used before.
    #[error("this signature was already used; sign every request afresh")]
    ReplayedSignature,
    /// Authenticated, but without the scope the operation needs.
    #[error("these credentials lack the {} scope needed here", .0.as_str())]
    InsufficientScope(Scope),
    /// The credentials could not be read or the signature recorded.
    #[error(transparent)]
    Store(#[from] StoreError),
}
