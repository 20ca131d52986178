//! Signing in to the admin UI: the lock-out check, the password check and
//! the counting of failures, in this order and in this one place.

use std::time::{Duration, Instant};

use super::lockout::{LoginThrottle, Subject};
use super::{password, Account, UserError};
use crate::app::App;
use crate::store::users;

/// Why a sign-in did not succeed.
#[derive(Debug, thiserror::Error)]
pub enum SignInError {
    /// Too many failures for this name or address; try again after this.
    #[error("too many failed sign-ins; locked for {0:?}")]
    LockedOut(Duration),
    /// Wrong name or password (not told apart); `locked_for` when this
    /// failure started a lock-out.
    #[error("wrong user name or password")]
    Rejected {
        /// The lock-out this failure started, if any.
        locked_for: Option<Duration>,
    },
    /// The account could not be read or the password not checked.
    #[error(transparent)]
    User(#[from] UserError),
}

/// Checks `name` and `password`, coming from the client address `addr`
/// (when known), against the lock-out and the stored hash.
pub async fn sign_in(
    app: &App,
    throttle: &LoginThrottle,
    name: &str,
    password: String,
    addr: Option<String>,
) -> Result<Account, SignInError> {
    let mut subjects = vec![Subject::user(name)];
    if let Some(addr) = addr {
        subjects.push(Subject::Addr(addr));
    }
    if let Err(wait) = throttle.check(&subjects, Instant::now()) {
        tracing::warn!(user = %name, "admin sign-in refused: locked out");
        return Err(SignInError::LockedOut(wait));
    }
    let n = name.to_string();
    let user = app
        .store
        .read(move |c| users::by_name(c, &n))
        .await
        .map_err(UserError::from)?;
    let hash = user.as_ref().map(|u| u.password_hash.clone());
    let ok = password::verify(password, hash).await?;
    let Some(user) = user.filter(|_| ok) else {
        let locked_for = throttle.failed(&subjects, Instant::now());
        tracing::warn!(user = %name, "admin sign-in failed");
        return Err(SignInError::Rejected { locked_for });
    };
    throttle.succeeded(&Subject::user(name));
    Ok(Account::from(&user))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::Principal;
    use crate::users::lockout::{BASE_DELAY, USER_FREE};

    #[tokio::test]
    async fn signs_in_counts_failures_and_locks_out() {
        let dir = tempfile::tempdir().unwrap();
        let config = crate::config::Config {
            data_dir: dir.path().to_path_buf(),
            ..crate::config::Config::default()
        };
        let key = shortlink_core::DeploymentKey::from_bytes([7; 32]);
        let app = App::with_key(config, &key, Some(100)).unwrap();
        let made = super::super::create(&app, &Principal::local(), "bob", "right password".into())
            .await
            .unwrap();
        let throttle = LoginThrottle::default();
        let addr = || Some("192.0.2.1".to_string());

        let bob = sign_in(&app, &throttle, "bob", "right password".into(), addr())
            .await
            .unwrap();
        assert_eq!(bob, made);
        // Unknown names and wrong passwords look the same.
        for (name, pw) in [("nobody", "right password"), ("bob", "wrong")] {
            assert!(matches!(
                sign_in(&app, &throttle, name, pw.into(), addr()).await,
                Err(SignInError::Rejected { locked_for: None })
            ));
        }
        for _ in 2..USER_FREE {
            let r = sign_in(&app, &throttle, "bob", "wrong".into(), addr()).await;
            assert!(matches!(r, Err(SignInError::Rejected { locked_for: None })));
        }
        let r = sign_in(&app, &throttle, "bob", "wrong".into(), addr()).await;
        assert!(matches!(
            r,
            Err(SignInError::Rejected { locked_for: Some(d) }) if d == BASE_DELAY
        ));
        // Locked: even the right password is refused unchecked.
        let r = sign_in(&app, &throttle, "bob", "right password".into(), addr()).await;
        assert!(matches!(r, Err(SignInError::LockedOut(_))));
        app.store.close();
    }
}
