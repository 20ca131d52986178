//! Signing in to the admin UI: the lock-out, the password check and the
//! counting of failures, in this order and in this one place. The attempt
//! is counted before the password is checked (see [`super::lockout`]), so
//! concurrent attempts cannot pass the limit together.

use std::time::{Duration, Instant};

use super::client::ClientAddr;
use super::lockout::LoginThrottle;
use super::password::{self, CheckError};
use super::{Account, UserError};
use crate::store::Store;

/// How long a client turned away while the password checkers are busy
/// should wait before trying again.
pub const BUSY_RETRY: Duration = Duration::from_secs(1);

/// Why a sign-in did not succeed.
#[derive(Debug, thiserror::Error)]
pub enum SignInError {
    /// Too many failures for this name or address; try again after this.
    #[error("too many failed sign-ins; locked for {0:?}")]
    LockedOut(Duration),
    /// Too many sign-ins are being checked at once; try again after
    /// [`BUSY_RETRY`]. This attempt was not counted.
    #[error("too many sign-ins at once; try again shortly")]
    Busy,
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

/// Checks `name` and `password`, coming from the client address `from`,
/// against the lock-out and the stored hash.
pub async fn sign_in(
    store: &Store,
    throttle: &LoginThrottle,
    name: &str,
    password: String,
    from: &ClientAddr,
) -> Result<Account, SignInError> {
    let attempt = match throttle.attempt(name, from, Instant::now()) {
        Ok(a) => a,
        Err(wait) => {
            tracing::warn!(user = %name, client = %from, "admin sign-in refused: locked out");
            return Err(SignInError::LockedOut(wait));
        }
    };
    let user = match store.user_by_name(name.to_string()).await {
        Ok(u) => u,
        Err(e) => {
            throttle.withdraw(attempt);
            return Err(UserError::from(e).into());
        }
    };
    let hash = user.as_ref().map(|u| u.password_hash.clone());
    let ok = match password::verify(password, hash).await {
        Ok(ok) => ok,
        Err(e) => {
            throttle.withdraw(attempt);
            return Err(match e {
                CheckError::Busy(_) => {
                    tracing::warn!(user = %name, client = %from, "admin sign-in refused: too many at once");
                    SignInError::Busy
                }
                CheckError::User(e) => e.into(),
            });
        }
    };
    let Some(user) = user.filter(|_| ok) else {
        let locked_for = attempt.locked_for();
        tracing::warn!(user = %name, client = %from, "admin sign-in failed");
        return Err(SignInError::Rejected { locked_for });
    };
    throttle.succeeded(attempt);
    Ok(Account::from(&user))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::Principal;
    use crate::users::lockout::{BASE_DELAY, USER_FREE};

    async fn app_in(dir: &std::path::Path) -> crate::app::SharedApp {
        let config = crate::config::Config {
            data_dir: dir.to_path_buf(),
            ..crate::config::Config::default()
        };
        let key = shortlink_core::DeploymentKey::from_bytes([7; 32]);
        crate::app::App::with_key(config, &key, Some(100))
            .await
            .unwrap()
    }

    fn from(ip: &str) -> ClientAddr {
        ClientAddr::of_ip(ip.parse().unwrap())
    }

    #[tokio::test]
    async fn signs_in_counts_failures_and_locks_out() {
        let dir = tempfile::tempdir().unwrap();
        let app = app_in(dir.path()).await;
        let made = super::super::create(
            &app.store,
            &Principal::local(),
            "bob",
            "right password".into(),
            crate::store::teams::DEFAULT_TEAM,
            crate::access::Role::Admin,
        )
        .await
        .unwrap();
        let throttle = LoginThrottle::default();
        let addr = from("192.0.2.1");

        let bob = sign_in(&app.store, &throttle, "bob", "right password".into(), &addr)
            .await
            .unwrap();
        assert_eq!(bob, made);
        // Unknown names and wrong passwords look the same.
        for (name, pw) in [("nobody", "right password"), ("bob", "wrong")] {
            assert!(matches!(
                sign_in(&app.store, &throttle, name, pw.into(), &addr).await,
                Err(SignInError::Rejected { locked_for: None })
            ));
        }
        for _ in 2..USER_FREE {
            let r = sign_in(&app.store, &throttle, "bob", "wrong".into(), &addr).await;
            assert!(matches!(r, Err(SignInError::Rejected { locked_for: None })));
        }
        let r = sign_in(&app.store, &throttle, "bob", "wrong".into(), &addr).await;
        assert!(matches!(
            r,
            Err(SignInError::Rejected { locked_for: Some(d) }) if d == BASE_DELAY
        ));
        // Locked: even the right password is refused unchecked...
        let r = sign_in(&app.store, &throttle, "bob", "right password".into(), &addr).await;
        assert!(matches!(r, Err(SignInError::LockedOut(_))));
        // ...from that address; bob elsewhere signs in.
        let elsewhere = from("198.51.100.2");
        let r = sign_in(
            &app.store,
            &throttle,
            "bob",
            "right password".into(),
            &elsewhere,
        )
        .await;
        assert_eq!(r.unwrap(), made);
        app.store.close();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_attempts_check_at_most_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let app = app_in(dir.path()).await;
        super::super::create(
            &app.store,
            &Principal::local(),
            "bob",
            "right password".into(),
            crate::store::teams::DEFAULT_TEAM,
            crate::access::Role::Admin,
        )
        .await
        .unwrap();
        let throttle = LoginThrottle::default();
        let addr = from("192.0.2.3");
        let attempts = (0..40).map(|i| {
            let pw = if i % 2 == 0 {
                "wrong"
            } else {
                "right password"
            };
            sign_in(&app.store, &throttle, "bob", pw.to_string(), &addr)
        });
        let mut checked = 0;
        for r in futures_join(attempts).await {
            match r {
                Ok(_) | Err(SignInError::Rejected { .. }) => checked += 1,
                Err(SignInError::LockedOut(_)) | Err(SignInError::Busy) => {}
                Err(e) => panic!("{e}"),
            }
        }
        assert!(
            (1..=USER_FREE).contains(&checked),
            "{checked} of 40 concurrent attempts were checked"
        );
        app.store.close();
    }

    /// Polls every future until all are ready (they share one task, so
    /// they really are in flight together).
    async fn futures_join<F: std::future::Future>(futs: impl Iterator<Item = F>) -> Vec<F::Output> {
        let mut futs: Vec<_> = futs.map(Box::pin).collect();
        let mut out: Vec<Option<F::Output>> = futs.iter().map(|_| None).collect();
        std::future::poll_fn(|cx| {
            let mut pending = false;
            for (f, o) in futs.iter_mut().zip(out.iter_mut()) {
                if o.is_none() {
                    match f.as_mut().poll(cx) {
                        std::task::Poll::Ready(v) => *o = Some(v),
                        std::task::Poll::Pending => pending = true,
                    }
                }
            }
            if pending {
                std::task::Poll::Pending
            } else {
                std::task::Poll::Ready(())
            }
        })
        .await;
        out.into_iter().flatten().collect()
    }
}
