//! Who made a link, as people call them: links store `created_by` as the
//! principal (`key:3`, `app:app_…`, `user:alice`, `cli`); pages show the
//! key's or the app's name instead of its id.

use std::collections::HashMap;

use super::{AdminError, AdminState, Authed};
use crate::credentials::{self, CredentialError};

/// Names of the API keys and apps, loaded once per page.
#[derive(Debug, Default)]
pub struct Creators {
    /// Key id → key name.
    keys: HashMap<i64, String>,
    /// App id (`app_…`) → app name.
    apps: HashMap<String, String>,
}

impl Creators {
    /// The names of every key and app (revoked ones too: their links stay).
    pub async fn load(admin: &AdminState, a: &Authed) -> Result<Self, AdminError> {
        let p = a.principal();
        let (keys, apps) = match (
            credentials::list_keys(&admin.app, &p).await,
            credentials::list_apps(&admin.app, &p).await,
        ) {
            (Ok(k), Ok(a)) => (k, a),
            // Without the admin scope the ids stay as they are.
            (Err(CredentialError::Denied(_)), _) | (_, Err(CredentialError::Denied(_))) => {
                return Ok(Self::default())
            }
            (Err(e), _) | (_, Err(e)) => return Err(e.into()),
        };
        Ok(Self {
            keys: keys.into_iter().map(|k| (k.id, k.name)).collect(),
            apps: apps.into_iter().map(|a| (a.app_id, a.name)).collect(),
        })
    }

    /// How a page shows `created_by`: `key "deploy"`, `app "crm"`, the
    /// user's name, `CLI`; an unknown key or app keeps its id.
    pub fn label(&self, created_by: &str) -> String {
        match created_by.split_once(':') {
            Some(("key", id)) => match id.parse().ok().and_then(|id| self.keys.get(&id)) {
                Some(name) => format!("key \"{name}\""),
                None => created_by.to_string(),
            },
            Some(("app", id)) => match self.apps.get(id) {
                Some(name) => format!("app \"{name}\""),
                None => created_by.to_string(),
            },
            Some(("user", name)) => name.to_string(),
            _ if created_by == "cli" => "CLI".to_string(),
            _ => created_by.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_apps_are_shown_by_name() {
        let c = Creators {
            keys: HashMap::from([(3, "newsletter".to_string())]),
            apps: HashMap::from([("app_x1".to_string(), "crm".to_string())]),
        };
        assert_eq!(c.label("key:3"), "key \"newsletter\"");
        assert_eq!(c.label("key:4"), "key:4", "an unknown key keeps its id");
        assert_eq!(c.label("key:x"), "key:x");
        assert_eq!(c.label("app:app_x1"), "app \"crm\"");
        assert_eq!(c.label("app:app_zz"), "app:app_zz");
        assert_eq!(c.label("user:alice"), "alice");
        assert_eq!(c.label("cli"), "CLI");
        assert_eq!(c.label("something"), "something");
    }
}
