//! API keys and signing apps: create (the secret is shown once), list,
//! revoke. The API, the admin UI and (through the API) the CLI all manage
//! credentials here, so names, scopes and cache invalidation follow one
//! set of rules.

use crate::access::{parse_scopes, scopes_from_stored, scopes_to_string, Role, Scope, ScopeError};
use crate::app::App;
use crate::app_secret::{new_app_id, AppSecret};
use crate::auth::{AuthError, NewApiKey, Principal};
use crate::store::{self, Owner, StoreError};
use crate::timestamp::unix_now;

/// Longest credential name, in bytes.
const MAX_NAME: usize = 100;

/// Why a credential could not be created, listed or revoked.
#[derive(Debug, thiserror::Error)]
pub enum CredentialError {
    /// The name is empty, too long or has control characters.
    #[error("name must be 1 to 100 characters without control characters")]
    InvalidName,
    /// The scope list is empty or names an unknown scope.
    #[error(transparent)]
    InvalidScopes(ScopeError),
    /// The expiry is not in the future.
    #[error("expires_at ({0}) must be in the future")]
    InvalidExpiry(i64),
    /// The key was to act for a user who does not exist.
    #[error("no user \"{0}\" to make the key for")]
    UnknownUser(String),
    /// The caller may not manage credentials.
    #[error(transparent)]
    Denied(#[from] AuthError),
    /// The store failed, or has no such key or app.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// An API key as listed (never with its secret).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyInfo {
    /// Numeric id, used to revoke.
    pub id: i64,
    /// What the key is for.
    pub name: String,
    /// First characters after `slk_`, to recognise a key.
    pub prefix: String,
    /// What the key may do.
    pub scopes: Vec<Scope>,
    /// Unix seconds.
    pub created_at: i64,
    /// Unix seconds, once revoked.
    pub revoked_at: Option<i64>,
    /// Unix seconds after which the key is refused; `None`: never.
    pub expires_at: Option<i64>,
    /// The user the key acts for (`None`: a key of its own).
    pub user_id: Option<i64>,
    /// The team the key acts in.
    pub team_id: i64,
    /// The most the key may do, whatever its scopes say.
    pub role: Role,
}

/// A key just made: the only time its secret is known.
#[derive(Debug)]
pub struct CreatedKey {
    /// The stored key.
    pub key: KeyInfo,
    /// Send as `X-Api-Key`; cannot be shown again.
    pub secret: String,
}

/// A signing app as listed (never with its secret).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppInfo {
    /// Numeric id.
    pub id: i64,
    /// Public id, sent as `X-App-Id`.
    pub app_id: String,
    /// What the app is.
    pub name: String,
    /// What the app may do.
    pub scopes: Vec<Scope>,
    /// Unix seconds.
    pub created_at: i64,
    /// Unix seconds, once revoked.
    pub revoked_at: Option<i64>,
}

/// An app just made: the only time its secret is shown.
#[derive(Debug)]
pub struct CreatedApp {
    /// The stored app.
    pub app: AppInfo,
    /// The HMAC key for `X-Signature`.
    pub secret: AppSecret,
}

impl From<&store::ApiKey> for KeyInfo {
    fn from(k: &store::ApiKey) -> Self {
        KeyInfo {
            id: k.id,
            name: k.name.clone(),
            prefix: k.prefix.clone(),
            scopes: scopes_from_stored(&k.scopes),
            created_at: k.created_at,
            revoked_at: k.revoked_at,
            expires_at: k.expires_at,
            user_id: k.user_id,
            team_id: k.team_id,
            role: k.role,
        }
    }
}

impl From<&store::App> for AppInfo {
    fn from(a: &store::App) -> Self {
        AppInfo {
            id: a.id,
            app_id: a.app_id.clone(),
            name: a.name.clone(),
            scopes: scopes_from_stored(&a.scopes),
            created_at: a.created_at,
            revoked_at: a.revoked_at,
        }
    }
}

/// The trimmed name and the scopes of a new credential, or why not.
fn check_new(name: &str, scopes: &[String]) -> Result<(String, Vec<Scope>), CredentialError> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > MAX_NAME || name.chars().any(char::is_control) {
        return Err(CredentialError::InvalidName);
    }
    let scopes = parse_scopes(scopes).map_err(CredentialError::InvalidScopes)?;
    Ok((name.to_string(), scopes))
}

/// Who a new key acts for: the user named `user` (the key follows their
/// team and role from then on), else a key of its own in the creator's
/// team with the role its scopes give.
async fn key_owner(
    app: &App,
    by: &Principal,
    user: Option<&str>,
    scopes: &[Scope],
) -> Result<Owner, CredentialError> {
    let Some(name) = user.map(str::trim).filter(|n| !n.is_empty()) else {
        return Ok(Owner::of_team(by.team_id, Role::from_scopes(scopes)));
    };
    let user = app
        .store
        .user_by_name(name.to_string())
        .await?
        .ok_or_else(|| CredentialError::UnknownUser(name.to_string()))?;
    Ok(Owner {
        user_id: Some(user.id),
        team_id: user.team_id,
        role: user.role,
    })
}

/// Creates an API key named `name` with `scopes` (wire names), refused
/// after `expires_at` (Unix seconds) when given, acting for `user` when
/// named (never beyond that user's role).
pub async fn create_key(
    app: &App,
    by: &Principal,
    name: &str,
    scopes: &[String],
    expires_at: Option<i64>,
    user: Option<&str>,
) -> Result<CreatedKey, CredentialError> {
    by.require(Scope::Admin)?;
    let (name, scopes) = check_new(name, scopes)?;
    if let Some(at) = expires_at.filter(|&at| at <= unix_now()) {
        return Err(CredentialError::InvalidExpiry(at));
    }
    let owner = key_owner(app, by, user, &scopes).await?;
    let NewApiKey {
        secret,
        prefix,
        hash,
    } = NewApiKey::generate();
    let now = unix_now();
    let stored_scopes = scopes_to_string(&scopes);
    let id = app
        .store
        .create_key(
            name.clone(),
            prefix.clone(),
            hash,
            stored_scopes,
            now,
            expires_at,
            owner,
        )
        .await?;
    tracing::info!(key = id, name = %name, by = %by.who, "API key created");
    Ok(CreatedKey {
        key: KeyInfo {
            id,
            name,
            prefix,
            scopes,
            created_at: now,
            revoked_at: None,
            expires_at,
            user_id: owner.user_id,
            team_id: owner.team_id,
            role: owner.role,
        },
        secret,
    })
}

/// Every API key, revoked ones included, oldest first.
pub async fn list_keys(app: &App, by: &Principal) -> Result<Vec<KeyInfo>, CredentialError> {
    by.require(Scope::Admin)?;
    let keys = app.store.list_keys().await?;
    Ok(keys.iter().map(KeyInfo::from).collect())
}

/// Revokes an API key; it stops working at once (also if cached).
pub async fn revoke_key(app: &App, by: &Principal, id: i64) -> Result<KeyInfo, CredentialError> {
    by.require(Scope::Admin)?;
    let now = unix_now();
    let key = app.store.revoke_key(id, now).await?;
    app.auth.forget_key(&key.prefix);
    tracing::info!(key = id, by = %by.who, "API key revoked");
    Ok(KeyInfo::from(&key))
}

/// Creates a signing app named `name` with `scopes` (wire names).
pub async fn create_app(
    app: &App,
    by: &Principal,
    name: &str,
    scopes: &[String],
) -> Result<CreatedApp, CredentialError> {
    by.require(Scope::Admin)?;
    let (name, scopes) = check_new(name, scopes)?;
    let app_id = new_app_id();
    let secret = AppSecret::generate();
    let now = unix_now();
    let stored_scopes = scopes_to_string(&scopes);
    let owner = Owner::of_team(by.team_id, Role::from_scopes(&scopes));
    let id = app
        .store
        .create_app(
            app_id.clone(),
            name.clone(),
            secret.to_stored(),
            stored_scopes,
            now,
            owner,
        )
        .await?;
    tracing::info!(app = %app_id, name = %name, by = %by.who, "app created");
    Ok(CreatedApp {
        app: AppInfo {
            id,
            app_id,
            name,
            scopes,
            created_at: now,
            revoked_at: None,
        },
        secret,
    })
}

/// Every app, revoked ones included, oldest first.
pub async fn list_apps(app: &App, by: &Principal) -> Result<Vec<AppInfo>, CredentialError> {
    by.require(Scope::Admin)?;
    let apps = app.store.list_apps().await?;
    Ok(apps.iter().map(AppInfo::from).collect())
}

/// Revokes an app, by app id or numeric id; it stops working at once.
pub async fn revoke_app(
    app: &App,
    by: &Principal,
    which: &str,
) -> Result<AppInfo, CredentialError> {
    by.require(Scope::Admin)?;
    let now = unix_now();
    let which = which.to_string();
    let revoked = app.store.revoke_app(which, now).await?;
    app.auth.forget_app(&revoked.app_id);
    tracing::info!(app = %revoked.app_id, by = %by.who, "app revoked");
    Ok(AppInfo::from(&revoked))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth;

    #[test]
    fn new_credentials_are_checked() {
        let scopes = vec!["links:read, stats:read".to_string()];
        let (name, s) = check_new("  deploy ", &scopes).unwrap();
        assert_eq!(name, "deploy");
        assert_eq!(s, vec![Scope::LinksRead, Scope::StatsRead]);
        for bad in ["", "   ", "a\u{7}b", &"x".repeat(MAX_NAME + 1)] {
            assert!(
                matches!(check_new(bad, &scopes), Err(CredentialError::InvalidName)),
                "{bad:?}"
            );
        }
        assert!(check_new(&"x".repeat(MAX_NAME), &scopes).is_ok());
        assert!(matches!(
            check_new("ci", &["links:delete".into()]),
            Err(CredentialError::InvalidScopes(ScopeError::Unknown(s))) if s == "links:delete"
        ));
        assert!(matches!(
            check_new("ci", &[]),
            Err(CredentialError::InvalidScopes(ScopeError::Empty))
        ));
    }

    async fn app(dir: &std::path::Path) -> crate::app::SharedApp {
        let config = crate::config::Config {
            data_dir: dir.to_path_buf(),
            ..crate::config::Config::default()
        };
        let key = shortlink_core::DeploymentKey::from_bytes([7; 32]);
        App::with_key(config, &key, Some(100)).await.unwrap()
    }

    #[tokio::test]
    async fn keys_are_created_verified_and_revoked() {
        let dir = tempfile::tempdir().unwrap();
        let app = app(dir.path()).await;
        let cli = Principal::local();
        let made = create_key(&app, &cli, " reader ", &["links:read".into()], None, None)
            .await
            .unwrap();
        assert_eq!(made.key.name, "reader");
        assert_eq!(made.key.scopes, vec![Scope::LinksRead]);
        let reader = auth::verify_key(&app.store, &app.auth, &made.secret)
            .await
            .unwrap();
        assert_eq!(reader.who, format!("key:{}", made.key.id));
        // Only admins manage credentials.
        assert!(matches!(
            list_keys(&app, &reader).await,
            Err(CredentialError::Denied(AuthError::InsufficientScope(
                Scope::Admin
            )))
        ));
        assert_eq!(list_keys(&app, &cli).await.unwrap(), vec![made.key.clone()]);
        // Revoking takes effect at once, although the key was cached.
        let revoked = revoke_key(&app, &cli, made.key.id).await.unwrap();
        assert!(revoked.revoked_at.is_some());
        assert!(matches!(
            auth::verify_key(&app.store, &app.auth, &made.secret).await,
            Err(AuthError::RevokedApiKey(n)) if n == "reader"
        ));
        assert!(matches!(
            revoke_key(&app, &cli, 9999).await,
            Err(CredentialError::Store(StoreError::NotFound(_)))
        ));
        app.store.close();
    }

    #[tokio::test]
    async fn apps_are_created_verified_and_revoked() {
        let dir = tempfile::tempdir().unwrap();
        let app = app(dir.path()).await;
        let cli = Principal::local();
        let made = create_app(&app, &cli, "mailer", &["links:write".into()])
            .await
            .unwrap();
        assert!(made.app.app_id.starts_with("app_"));
        let window = app.config.signature_window;
        let ts = unix_now();
        let message = auth::signing_string(ts, "GET", "/api/v1/links", b"");
        let sig = made.secret.sign(&message);
        let ts_text = ts.to_string();
        let req = auth::SignedRequest {
            app_id: &made.app.app_id,
            timestamp: Some(&ts_text),
            signature: Some(&sig),
            method: "GET",
            path_and_query: "/api/v1/links",
            body: b"",
        };
        let p = auth::verify_signature(&app.store, &app.auth, window, &req)
            .await
            .unwrap();
        assert_eq!(p.who, format!("app:{}", made.app.app_id));
        assert!(p.has(Scope::LinksWrite) && !p.has(Scope::LinksRead));
        assert!(matches!(
            auth::verify_signature(&app.store, &app.auth, window, &req).await,
            Err(AuthError::ReplayedSignature)
        ));
        let listed = list_apps(&app, &cli).await.unwrap();
        assert_eq!(listed, vec![made.app.clone()]);
        // By numeric id as well as by app id.
        let revoked = revoke_app(&app, &cli, &made.app.id.to_string())
            .await
            .unwrap();
        assert_eq!(revoked.app_id, made.app.app_id);
        let ts = ts + 1;
        let sig = made
            .secret
            .sign(&auth::signing_string(ts, "GET", "/api/v1/links", b""));
        let ts_text = ts.to_string();
        let req = auth::SignedRequest {
            timestamp: Some(&ts_text),
            signature: Some(&sig),
            ..req
        };
        assert!(matches!(
            auth::verify_signature(&app.store, &app.auth, window, &req).await,
            Err(AuthError::RevokedApp(_))
        ));
        app.store.close();
    }
}
