//! When each API key and app was last used, for the keys page.
//!
//! A layer around the API's authenticated routes notes the credential of
//! every request the auth middleware let through (any status but 401). The
//! time is kept in memory and written to the `credential_use` table at most
//! once a minute per credential, off the request path, so the API's
//! throughput does not change.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::Response;

use crate::app::SharedApp;
use crate::auth::key_prefix;
use crate::store::StoreResult;
use crate::timestamp::unix_now;

/// Stored times are refreshed after this many seconds.
pub const WRITE_EVERY: i64 = 60;

/// A credential as the API identifies it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Credential {
    /// An API key, by its public prefix.
    Key(String),
    /// A signing app, by its app id.
    App(String),
}

impl Credential {
    fn kind(&self) -> &'static str {
        match self {
            Credential::Key(_) => "key",
            Credential::App(_) => "app",
        }
    }

    fn ident(&self) -> &str {
        match self {
            Credential::Key(s) | Credential::App(s) => s,
        }
    }

    /// The credential a request presents, from its headers (not verified:
    /// only requests the auth middleware accepted are recorded).
    pub fn of(headers: &axum::http::HeaderMap) -> Option<Credential> {
        let h = |n: &str| headers.get(n).and_then(|v| v.to_str().ok()).map(str::trim);
        if let Some(key) = crate::api::auth::presented_key(headers) {
            return key_prefix(key.ok()?).map(|p| Credential::Key(p.to_string()));
        }
        h("x-app-id")
            .filter(|a| !a.is_empty() && a.len() <= 100)
            .map(|a| Credential::App(a.to_string()))
    }
}

#[derive(Debug, Clone, Copy)]
struct Seen {
    last: i64,
    written: i64,
}

/// Last-use times noted since start, and when each was last stored.
#[derive(Default)]
pub struct CredentialUse {
    seen: Mutex<HashMap<Credential, Seen>>,
}

/// Every stored last use, by credential.
async fn stored(app: &SharedApp) -> StoreResult<HashMap<Credential, i64>> {
    let rows = app.store.credential_uses().await?;
    Ok(rows
        .into_iter()
        .map(|(kind, ident, at)| {
            let c = if kind == "key" {
                Credential::Key(ident)
            } else {
                Credential::App(ident)
            };
            (c, at)
        })
        .collect())
}

impl CredentialUse {
    /// Notes a use at `now`; true when it is due to be stored.
    pub fn note(&self, c: &Credential, now: i64) -> bool {
        let mut seen = self.seen.lock().expect("credential use");
        match seen.get_mut(c) {
            Some(s) => {
                s.last = s.last.max(now);
                if now - s.written >= WRITE_EVERY {
                    s.written = now;
                    true
                } else {
                    false
                }
            }
            None => {
                seen.insert(
                    c.clone(),
                    Seen {
                        last: now,
                        written: now,
                    },
                );
                true
            }
        }
    }

    /// Last use of every credential: stored times, newer ones from memory.
    pub async fn all(&self, app: &SharedApp) -> StoreResult<HashMap<Credential, i64>> {
        let mut out = stored(app).await?;
        for (c, s) in self.seen.lock().expect("credential use").iter() {
            let e = out.entry(c.clone()).or_insert(s.last);
            *e = (*e).max(s.last);
        }
        Ok(out)
    }
}

/// State of the [`track`] layer.
#[derive(Clone)]
pub struct Tracker {
    /// Where the last uses are stored.
    pub app: SharedApp,
    /// The admin UI's record of last uses, shared with the keys page.
    pub uses: Arc<CredentialUse>,
}

/// Middleware on the API's routes: notes the credential of every request
/// that got past authentication.
pub async fn track(State(t): State<Tracker>, req: Request, next: Next) -> Response {
    let path = req.uri().path();
    let public = path == "/api/v1/health" || (path == "/metrics" && !t.app.config.metrics_auth);
    let credential = if public {
        None
    } else {
        Credential::of(req.headers())
    };
    let resp = next.run(req).await;
    if let Some(c) = credential {
        if resp.status() != StatusCode::UNAUTHORIZED {
            let now = unix_now();
            if t.uses.note(&c, now) {
                let app = t.app.clone();
                tokio::spawn(async move {
                    let stored = app
                        .store
                        .record_credential_use(c.kind().to_string(), c.ident().to_string(), now)
                        .await;
                    if let Err(e) = stored {
                        tracing::warn!(error = %e, "could not record credential use");
                    }
                });
            }
        }
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderMap;

    #[test]
    fn credentials_from_headers() {
        let mut h = HeaderMap::new();
        assert_eq!(Credential::of(&h), None);
        h.insert("x-app-id", "app_0123".parse().unwrap());
        assert_eq!(Credential::of(&h), Some(Credential::App("app_0123".into())));
        h.insert(
            "x-api-key",
            format!("slk_0123456789ab{}", "f".repeat(40))
                .parse()
                .unwrap(),
        );
        assert_eq!(
            Credential::of(&h),
            Some(Credential::Key("0123456789ab".into()))
        );
        h.insert("x-api-key", "bogus".parse().unwrap());
        assert_eq!(Credential::of(&h), None);
    }

    #[test]
    fn writes_at_most_once_a_minute() {
        let u = CredentialUse::default();
        let k = Credential::Key("abc".into());
        assert!(u.note(&k, 1000));
        assert!(!u.note(&k, 1001));
        assert!(!u.note(&k, 1000 + WRITE_EVERY - 1));
        assert!(u.note(&k, 1000 + WRITE_EVERY));
        assert!(u.note(&Credential::App("abc".into()), 1001));
    }
}
