//! Admin UI accounts: adding users, changing passwords, finding an account
//! and signing in. Passwords are hashed and checked in `password.rs` only,
//! in the bounded pool of `argon2_pool.rs`; the stored hash never leaves
//! this module (sessions see an account's [`Account::version`] instead).

pub mod argon2_pool;
pub mod client;
pub mod lockout;
pub(crate) mod password;
mod sign_in;

pub use client::{ApiPeer, ClientAddr};
pub use lockout::LoginThrottle;
pub(crate) use password::hash_with;
pub use password::{account_version, verify_password};
pub use sign_in::{sign_in, SignInError, BUSY_RETRY};

use crate::access::{Role, Scope};
use crate::auth::{AuthCache, AuthError, Principal};
use crate::store::{Store, StoreError, User};
use crate::timestamp::unix_now;

/// Shortest accepted password, in characters.
pub const MIN_PASSWORD: usize = 8;
/// Longest accepted password, in bytes (argon2 hashes it whole).
const MAX_PASSWORD: usize = 1024;
/// Longest user name, in bytes.
const MAX_NAME: usize = 64;

/// Why a user could not be added, changed or read.
#[derive(Debug, thiserror::Error)]
pub enum UserError {
    /// The user name has characters or a length not allowed.
    #[error("user names are 1 to 64 of A-Z a-z 0-9 . _ - @")]
    InvalidName,
    /// The password is too short or too long.
    #[error("passwords must be {MIN_PASSWORD} to 1024 characters")]
    WeakPassword,
    /// Hashing or checking a password failed (not a wrong password).
    #[error("{0}")]
    Hashing(String),
    /// The caller may not manage users.
    #[error(transparent)]
    Denied(#[from] AuthError),
    /// The store failed, the name is taken or there is no such user.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// An admin UI account as the rest of the daemon sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    /// Numeric id.
    pub id: i64,
    /// Sign-in name.
    pub name: String,
    /// Unix seconds.
    pub created_at: i64,
    /// Changes with every password change, so sessions opened with an
    /// older password can be ended (see [`account_version`]).
    pub version: String,
    /// The team the account belongs to.
    pub team_id: i64,
    /// What the account may do.
    pub role: Role,
}

impl From<&User> for Account {
    fn from(u: &User) -> Self {
        Account {
            id: u.id,
            name: u.name.clone(),
            created_at: u.created_at,
            version: account_version(&u.password_hash),
            team_id: u.team_id,
            role: u.role,
        }
    }
}

fn check_name(name: &str) -> Result<(), UserError> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || "._-@".contains(c);
    if name.is_empty() || name.len() > MAX_NAME || !name.chars().all(allowed) {
        return Err(UserError::InvalidName);
    }
    Ok(())
}

fn check_password(p: &str) -> Result<(), UserError> {
    if p.chars().count() < MIN_PASSWORD || p.chars().count() > MAX_PASSWORD {
        return Err(UserError::WeakPassword);
    }
    Ok(())
}

/// Adds a user (name trimmed) to team `team_id` with `role`; a taken name
/// is a [`StoreError::Conflict`].
pub async fn create(
    store: &Store,
    by: &Principal,
    name: &str,
    password: String,
    team_id: i64,
    role: Role,
) -> Result<Account, UserError> {
    by.require(Scope::Admin)?;
    let name = name.trim().to_string();
    check_name(&name)?;
    check_password(&password)?;
    let hash = password::hash(password).await?;
    let now = unix_now();
    let version = account_version(&hash);
    let id = store
        .add_user(name.clone(), hash, now, team_id, role)
        .await?;
    tracing::info!(user = %name, team = team_id, role = %role, by = %by.who, "user added");
    Ok(Account {
        id,
        name,
        created_at: now,
        version,
        team_id,
        role,
    })
}

/// Moves a user to team `team_id` with `role`. Their admin sessions see it
/// at their next request; their keys when the key is next read from the
/// store (at most the auth cache's lifetime later, on every node).
pub async fn set_membership(
    store: &Store,
    auth: &AuthCache,
    by: &Principal,
    name: &str,
    team_id: i64,
    role: Role,
) -> Result<Account, UserError> {
    by.require(Scope::Admin)?;
    let user = store
        .set_user_membership(name.to_string(), team_id, role)
        .await?;
    forget_keys_of(store, auth, user.id).await?;
    tracing::info!(user = %name, team = team_id, role = %role, by = %by.who, "user's team or role changed");
    Ok(Account::from(&user))
}

/// Drops the keys of user `id` from this daemon's auth cache, so a change
/// of their user takes effect here at once (other daemons within the
/// cache's lifetime).
async fn forget_keys_of(store: &Store, auth: &AuthCache, id: i64) -> Result<(), UserError> {
    for prefix in keys_of(store, id).await? {
        auth.forget_key(&prefix);
    }
    Ok(())
}

/// The prefixes of user `id`'s keys.
async fn keys_of(store: &Store, id: i64) -> Result<Vec<String>, UserError> {
    let keys = store.list_keys().await?;
    Ok(keys
        .into_iter()
        .filter(|k| k.user_id == Some(id))
        .map(|k| k.prefix)
        .collect())
}

/// Sets a user's password, which ends the sessions opened with the old one.
pub async fn set_password(
    store: &Store,
    by: &Principal,
    name: &str,
    password: String,
) -> Result<(), UserError> {
    by.require(Scope::Admin)?;
    check_password(&password)?;
    let hash = password::hash(password).await?;
    let now = unix_now();
    store.set_user_password(name.to_string(), hash, now).await?;
    tracing::info!(user = %name, by = %by.who, "password changed");
    Ok(())
}

/// Every account, by name.
pub async fn list(store: &Store, by: &Principal) -> Result<Vec<Account>, UserError> {
    by.require(Scope::Admin)?;
    let all = store.list_users().await?;
    Ok(all.iter().map(Account::from).collect())
}

/// Deletes an account and revokes its keys; its admin sessions end at
/// their next request (the session check finds no account).
pub async fn delete(
    store: &Store,
    auth: &AuthCache,
    by: &Principal,
    name: &str,
) -> Result<(), UserError> {
    by.require(Scope::Admin)?;
    // Their keys are found before the delete: PostgreSQL clears the
    // keys' user with it.
    let keys = match store.user_by_name(name.to_string()).await? {
        Some(user) => keys_of(store, user.id).await?,
        None => Vec::new(),
    };
    store.delete_user(name.to_string(), unix_now()).await?;
    for prefix in keys {
        auth.forget_key(&prefix);
    }
    tracing::info!(user = %name, by = %by.who, "user deleted");
    Ok(())
}

/// The account named `name`, if there is one.
pub async fn find(store: &Store, name: &str) -> Result<Option<Account>, UserError> {
    let user = store.user_by_name(name.to_string()).await?;
    Ok(user.as_ref().map(Account::from))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_passwords_are_checked() {
        for good in ["alice", "a.b_c-d@e", &"x".repeat(MAX_NAME)] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in ["", "al ice", "ålice", &"x".repeat(MAX_NAME + 1)] {
            assert!(
                matches!(check_name(bad), Err(UserError::InvalidName)),
                "{bad}"
            );
        }
        assert!(check_password("12345678").is_ok());
        assert!(check_password("ééééééé€").is_ok(), "characters, not bytes");
        assert!(matches!(
            check_password("1234567"),
            Err(UserError::WeakPassword)
        ));
        assert!(matches!(
            check_password(&"x".repeat(MAX_PASSWORD + 1)),
            Err(UserError::WeakPassword)
        ));
    }
}
