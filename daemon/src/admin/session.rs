//! Sign-in sessions and CSRF tokens for the admin UI.
//!
//! A session is a random 256-bit token in an `HttpOnly`, `SameSite=Strict`
//! cookie (`Secure` behind https). The server keeps only the SHA-256 of the
//! token, the user name, the session's CSRF token and its timestamps, in
//! memory: a daemon restart signs everyone out. Sessions end after
//! [`IDLE_TIMEOUT`] without a request or [`MAX_AGE`] after sign-in,
//! whichever comes first, and when the user's password changes (the
//! session remembers the [`crate::users::Account::version`] it was opened
//! with).
//!
//! Every form carries the session's CSRF token in a hidden `csrf` field; the
//! sign-in form, before any session exists, carries a random token that must
//! equal the one in a short-lived `shortlink_login` cookie (double submit).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::http::HeaderMap;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The session cookie.
pub const SESSION_COOKIE: &str = "shortlink_session";
/// The sign-in form's double-submit CSRF cookie.
pub const LOGIN_COOKIE: &str = "shortlink_login";
/// Where the cookies apply.
pub const COOKIE_PATH: &str = "/admin";
/// A session unused this long is over.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(8 * 3600);
/// A session is over this long after sign-in, used or not.
pub const MAX_AGE: Duration = Duration::from_secs(7 * 86_400);
/// Most sessions kept; the least recently used goes first beyond this.
const MAX_SESSIONS: usize = 10_000;

/// 32 random bytes, hex.
pub fn random_token() -> String {
    let mut bytes = [0u8; 32];
    getrandom::getrandom(&mut bytes).expect("OS random source");
    hex::encode(bytes)
}

/// Constant-time comparison of a presented token with the expected one.
pub fn tokens_match(expected: &str, presented: &str) -> bool {
    !expected.is_empty() && bool::from(expected.as_bytes().ct_eq(presented.as_bytes()))
}

/// Something to show once on the next page (e.g. a new API secret).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flash {
    /// What the message is about, e.g. "API key \"deploy\" created".
    pub title: String,
    /// A secret to copy now; it is never shown again.
    pub secret: Option<String>,
}

struct Session {
    user: String,
    account_version: String,
    csrf: String,
    created: Instant,
    last_seen: Instant,
    flash: Option<Flash>,
}

/// What a request learns about its session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionInfo {
    /// The signed-in user name.
    pub user: String,
    /// The account's [`crate::users::Account::version`] at sign-in.
    pub account_version: String,
    /// The token every form of this session must carry.
    pub csrf: String,
}

/// All live sessions, keyed by the SHA-256 of their cookie token.
#[derive(Default)]
pub struct Sessions {
    inner: Mutex<HashMap<[u8; 32], Session>>,
}

fn key(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

impl Sessions {
    /// Starts a session for `user`, signed in with the password whose
    /// account version is given; returns the cookie token.
    pub fn create(&self, user: &str, account_version: String, now: Instant) -> String {
        let token = random_token();
        let mut map = self.inner.lock().expect("sessions");
        map.retain(|_, s| alive(s, now));
        if map.len() >= MAX_SESSIONS {
            if let Some(oldest) = map.iter().min_by_key(|(_, s)| s.last_seen).map(|(k, _)| *k) {
                map.remove(&oldest);
            }
        }
        map.insert(
            key(&token),
            Session {
                user: user.to_string(),
                account_version,
                csrf: random_token(),
                created: now,
                last_seen: now,
                flash: None,
            },
        );
        token
    }

    /// The live session behind `token`, marking it used; `None` when
    /// unknown or timed out (a timed-out session is forgotten).
    pub fn get(&self, token: &str, now: Instant) -> Option<SessionInfo> {
        let k = key(token);
        let mut map = self.inner.lock().expect("sessions");
        let s = map.get_mut(&k)?;
        if !alive(s, now) {
            map.remove(&k);
            return None;
        }
        s.last_seen = now;
        Some(SessionInfo {
            user: s.user.clone(),
            account_version: s.account_version.clone(),
            csrf: s.csrf.clone(),
        })
    }

    /// Ends the session (sign-out).
    pub fn remove(&self, token: &str) {
        self.inner.lock().expect("sessions").remove(&key(token));
    }

    /// Keeps `flash` for the next page this session shows.
    pub fn set_flash(&self, token: &str, flash: Flash) {
        if let Some(s) = self.inner.lock().expect("sessions").get_mut(&key(token)) {
            s.flash = Some(flash);
        }
    }

    /// Takes the pending flash, so it shows once.
    pub fn take_flash(&self, token: &str) -> Option<Flash> {
        self.inner
            .lock()
            .expect("sessions")
            .get_mut(&key(token))
            .and_then(|s| s.flash.take())
    }

    /// Number of live sessions.
    pub fn len(&self) -> usize {
        self.inner.lock().expect("sessions").len()
    }

    /// True when nobody is signed in.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn alive(s: &Session, now: Instant) -> bool {
    now.saturating_duration_since(s.last_seen) < IDLE_TIMEOUT
        && now.saturating_duration_since(s.created) < MAX_AGE
}

/// The value of cookie `name` in the request, if any.
pub fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(axum::http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(n, _)| *n == name)
        .map(|(_, v)| v.trim())
        .filter(|v| !v.is_empty())
}

/// A `Set-Cookie` value for the admin UI: `HttpOnly`, `SameSite=Strict`,
/// path `/admin`, `Secure` when asked. `max_age` 0 deletes the cookie;
/// `None` makes it last as long as the browser session.
pub fn set_cookie(name: &str, value: &str, max_age: Option<u64>, secure: bool) -> String {
    let mut c = format!("{name}={value}; Path={COOKIE_PATH}; HttpOnly; SameSite=Strict");
    if let Some(age) = max_age {
        c.push_str(&format!("; Max-Age={age}"));
    }
    if secure {
        c.push_str("; Secure");
    }
    c
}

/// True when the browser reached us over https: nginx says so in
/// `X-Forwarded-Proto`, or the public base URL is https.
pub fn is_secure(headers: &HeaderMap, base: &str) -> bool {
    let forwarded = headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("https"));
    forwarded || base.starts_with("https://")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_live_until_idle_or_max_age() {
        let sessions = Sessions::default();
        let t0 = Instant::now();
        let token = sessions.create("alice", "v".into(), t0);
        assert_eq!(token.len(), 64);
        let info = sessions.get(&token, t0).unwrap();
        assert_eq!(info.user, "alice");
        assert_eq!(info.csrf.len(), 64);
        assert_ne!(info.csrf, token);
        assert!(sessions.get("nope", t0).is_none());
        assert!(sessions.get(&token[..63], t0).is_none());

        // Used within the idle timeout: stays alive, the CSRF token is stable.
        let t1 = t0 + IDLE_TIMEOUT - Duration::from_secs(1);
        assert_eq!(sessions.get(&token, t1).unwrap().csrf, info.csrf);
        let t2 = t1 + IDLE_TIMEOUT - Duration::from_secs(1);
        assert!(sessions.get(&token, t2).is_some());
        // Idle too long: gone, and forgotten.
        assert!(sessions.get(&token, t2 + IDLE_TIMEOUT).is_none());
        assert!(sessions.is_empty());

        // Used all the time, but past the maximum age: gone.
        let token = sessions.create("bob", "v".into(), t0);
        let mut t = t0;
        while t < t0 + MAX_AGE - Duration::from_secs(3600) {
            t += Duration::from_secs(3600);
            assert!(sessions.get(&token, t).is_some());
        }
        assert!(sessions.get(&token, t0 + MAX_AGE).is_none());
    }

    #[test]
    fn sign_out_and_flash() {
        let sessions = Sessions::default();
        let now = Instant::now();
        let a = sessions.create("alice", "v".into(), now);
        let a2 = sessions.create("alice", "v".into(), now);
        let b = sessions.create("bob", "v".into(), now);
        assert_ne!(a, a2);
        assert_ne!(
            sessions.get(&a, now).unwrap().csrf,
            sessions.get(&a2, now).unwrap().csrf,
            "each session has its own CSRF token"
        );
        sessions.set_flash(
            &a,
            Flash {
                title: "key".into(),
                secret: Some("slk_x".into()),
            },
        );
        assert_eq!(
            sessions.take_flash(&a).unwrap().secret.as_deref(),
            Some("slk_x")
        );
        assert_eq!(sessions.take_flash(&a), None, "a flash shows once");
        assert_eq!(sessions.take_flash(&b), None);

        assert_eq!(sessions.get(&b, now).unwrap().account_version, "v");
        sessions.remove(&a);
        assert!(sessions.get(&a, now).is_none());
        assert!(sessions.get(&a2, now).is_some());
        assert!(sessions.get(&b, now).is_some());
    }

    #[test]
    fn csrf_tokens_compare_exactly() {
        let t = random_token();
        assert!(tokens_match(&t, &t));
        assert!(!tokens_match(&t, ""));
        assert!(!tokens_match(&t, &t[..63]));
        assert!(!tokens_match(&t, &format!("{t}0")));
        assert!(!tokens_match("", ""), "no expected token never matches");
        assert_ne!(random_token(), t);
    }

    #[test]
    fn cookies() {
        let mut h = HeaderMap::new();
        h.insert("cookie", "a=1; shortlink_session=abc ; x=".parse().unwrap());
        h.append("cookie", "shortlink_login=zz".parse().unwrap());
        assert_eq!(cookie(&h, SESSION_COOKIE), Some("abc"));
        assert_eq!(cookie(&h, LOGIN_COOKIE), Some("zz"));
        assert_eq!(cookie(&h, "x"), None);
        assert_eq!(cookie(&h, "missing"), None);

        let c = set_cookie(SESSION_COOKIE, "tok", None, false);
        assert_eq!(
            c,
            "shortlink_session=tok; Path=/admin; HttpOnly; SameSite=Strict"
        );
        let c = set_cookie(SESSION_COOKIE, "", Some(0), true);
        assert!(c.ends_with("; Max-Age=0; Secure"), "{c}");

        let mut h = HeaderMap::new();
        assert!(!is_secure(&h, "http://s.test"));
        assert!(is_secure(&h, "https://s.test"));
        h.insert("x-forwarded-proto", "HTTPS".parse().unwrap());
        assert!(is_secure(&h, "http://s.test"));
    }
}
