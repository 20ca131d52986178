//! Recently verified keys and apps, and the signatures already used: what
//! lets most requests authenticate without a database read, and what makes
//! a replayed signature fail without one.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::store::{ApiKey, App};
use crate::timestamp::unix_now;

/// Verified credentials are re-read from the database after this long, so
/// a revocation made by another process takes effect within it.
const CACHE_TTL: Duration = Duration::from_secs(30);
/// Beyond this many remembered signatures, those too old to be accepted
/// anyway are dropped.
const MAX_SIGNATURES: usize = 10_000;

/// Rows by an identifier, each valid for [`CACHE_TTL`] after it was read.
struct Fresh<T> {
    rows: Mutex<HashMap<String, (T, Instant)>>,
}

impl<T> Default for Fresh<T> {
    fn default() -> Self {
        Self {
            rows: Mutex::new(HashMap::new()),
        }
    }
}

impl<T: Clone> Fresh<T> {
    fn get(&self, id: &str) -> Option<T> {
        let rows = self.rows.lock().expect("auth cache");
        rows.get(id)
            .filter(|(_, at)| at.elapsed() < CACHE_TTL)
            .map(|(row, _)| row.clone())
    }

    fn keep(&self, id: &str, row: T) {
        self.rows
            .lock()
            .expect("auth cache")
            .insert(id.to_string(), (row, Instant::now()));
    }

    fn forget(&self, id: &str) {
        self.rows.lock().expect("auth cache").remove(id);
    }
}

/// Recently verified credentials and used signatures; one per daemon,
/// held by [`crate::app::App`].
#[derive(Default)]
pub struct AuthCache {
    /// API keys by their public prefix.
    keys: Fresh<ApiKey>,
    /// Apps by their app id.
    apps: Fresh<App>,
    /// Signature → its timestamp, while the timestamp is inside the window.
    signatures: Mutex<HashMap<String, i64>>,
}

impl AuthCache {
    /// Drops a key (revoked) so the next request re-reads it.
    pub fn forget_key(&self, prefix: &str) {
        self.keys.forget(prefix);
    }

    /// Drops an app (revoked) so the next request re-reads it.
    pub fn forget_app(&self, app_id: &str) {
        self.apps.forget(app_id);
    }

    /// Loads signatures recorded by an earlier run, so a restart does not
    /// reopen the replay window.
    pub fn remember_signatures(&self, sigs: Vec<(String, i64)>) {
        self.signatures.lock().expect("auth cache").extend(sigs);
    }

    /// The key with this prefix, if read recently.
    pub(super) fn key(&self, prefix: &str) -> Option<ApiKey> {
        self.keys.get(prefix)
    }

    /// Keeps a key just read from the database.
    pub(super) fn keep_key(&self, prefix: &str, key: ApiKey) {
        self.keys.keep(prefix, key);
    }

    /// The app with this app id, if read recently.
    pub(super) fn app(&self, app_id: &str) -> Option<App> {
        self.apps.get(app_id)
    }

    /// Keeps an app just read from the database.
    pub(super) fn keep_app(&self, app_id: &str, app: App) {
        self.apps.keep(app_id, app);
    }

    /// Records a signature; false if it was already used.
    pub(super) fn first_use(&self, signature: &str, ts: i64, window: i64) -> bool {
        let mut sigs = self.signatures.lock().expect("auth cache");
        if sigs.len() > MAX_SIGNATURES {
            let cutoff = unix_now() - 2 * window;
            sigs.retain(|_, t| *t >= cutoff);
        }
        sigs.insert(signature.to_string(), ts).is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_are_used_once_and_survive_a_restart() {
        let cache = AuthCache::default();
        let now = unix_now();
        assert!(cache.first_use("aa", now, 60));
        assert!(!cache.first_use("aa", now, 60));
        let restarted = AuthCache::default();
        restarted.remember_signatures(vec![("aa".into(), now)]);
        assert!(!restarted.first_use("aa", now, 60));
        assert!(restarted.first_use("bb", now, 60));
    }

    #[test]
    fn forgotten_rows_are_gone() {
        let cache = AuthCache::default();
        let key = ApiKey {
            id: 1,
            name: "ci".into(),
            prefix: "0123456789ab".into(),
            hash: vec![0; 32],
            scopes: "admin".into(),
            created_at: 0,
            revoked_at: None,
            expires_at: None,
            user_id: None,
            team_id: 1,
            role: crate::access::Role::Admin,
        };
        cache.keep_key(&key.prefix, key.clone());
        assert_eq!(cache.key("0123456789ab"), Some(key));
        cache.forget_key("0123456789ab");
        assert_eq!(cache.key("0123456789ab"), None);
    }
}
