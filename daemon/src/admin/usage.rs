//! When each API key and app was last used, for the keys page.
//!
//! A layer around the API's authenticated routes notes the credential of
//! every request the auth middleware let through (any status but 401). The
//! time is kept in memory and written to the `credential_use` table at most
//! once a minute per credential, off the request path, so the API's
//! throughput does not change. The table is the admin UI's own and created
//! on first write.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::Response;
use rusqlite::{params, Connection};

use crate::app::SharedApp;
use crate::store::{unix_now, StoreResult};

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
        if let Some(key) = h("x-api-key") {
            let rest = key.strip_prefix("slk_")?;
            return rest.get(..12).map(|p| Credential::Key(p.to_string()));
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

const CREATE: &str = "CREATE TABLE IF NOT EXISTS credential_use (\
    kind TEXT NOT NULL, ident TEXT NOT NULL, last_used_at INTEGER NOT NULL, \
    PRIMARY KEY (kind, ident)) WITHOUT ROWID";

fn store_use(conn: &Connection, c: &Credential, at: i64) -> StoreResult<()> {
    conn.execute_batch(CREATE)?;
    conn.execute(
        "INSERT INTO credential_use (kind, ident, last_used_at) VALUES (?1, ?2, ?3) \
         ON CONFLICT (kind, ident) DO UPDATE SET last_used_at = max(last_used_at, excluded.last_used_at)",
        params![c.kind(), c.ident(), at],
    )?;
    Ok(())
}

fn stored(conn: &Connection) -> StoreResult<HashMap<Credential, i64>> {
    let mut st = match conn.prepare("SELECT kind, ident, last_used_at FROM credential_use") {
        Ok(st) => st,
        // Nothing was ever used.
        Err(e) if e.to_string().contains("no such table") => return Ok(HashMap::new()),
        Err(e) => return Err(e.into()),
    };
    let rows = st.query_map([], |r| {
        let kind: String = r.get(0)?;
        let ident: String = r.get(1)?;
        let at: i64 = r.get(2)?;
        Ok((kind, ident, at))
    })?;
    let mut out = HashMap::new();
    for row in rows {
        let (kind, ident, at) = row?;
        let c = if kind == "key" {
            Credential::Key(ident)
        } else {
            Credential::App(ident)
        };
        out.insert(c, at);
    }
    Ok(out)
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
        let mut out = app.store.read(stored).await?;
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
    pub app: SharedApp,
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
                    if let Err(e) = app.store.write(move |conn| store_use(conn, &c, now)).await {
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
