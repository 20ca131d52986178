//! Password checks of protected links, asked by the edge when a visitor
//! posts the form: the link's state (read within the edge's deadline),
//! then the bounded, throttled check of `links::gate`.

use shortlink_core::ipc::{LookupResult, PasswordResult, Reply};

use super::EdgeDeadline;
use crate::app::App;
use crate::links::edge_result;
use crate::links::gate::Verdict;
use crate::store::LinkError;
use crate::timestamp::unix_now;

/// Checks `password` for the link behind `code`; the reply to request `id`.
pub(super) async fn check(
    app: &App,
    deadline: &EdgeDeadline,
    id: u32,
    code: String,
    password: String,
    client: String,
) -> Reply {
    let result = match check_link(app, deadline, &code, password, &client).await {
        Ok(r) => r,
        Err(e) => {
            app.metrics.errors.inc();
            match &e {
                // An unreachable or slow database is said once per outage
                // (by the store, or the deadline).
                LinkError::Store(e) => e.log(&format!("cannot check the password of \"{code}\"")),
                e => tracing::error!(code = %code, error = %e, "cannot check a link password"),
            }
            return Reply::Error {
                id,
                message: format!("while checking the password of code \"{code}\": {e}"),
            };
        }
    };
    Reply::Password { id, result }
}

async fn check_link(
    app: &App,
    deadline: &EdgeDeadline,
    code: &str,
    password: String,
    client: &str,
) -> Result<PasswordResult, LinkError> {
    if password.len() > shortlink_core::ipc::MAX_PASSWORD {
        return Ok(PasswordResult::Wrong);
    }
    let link = match deadline.read(app.links().get(code)).await {
        Ok(link) => link,
        Err(LinkError::NotFound(_)) => return Ok(PasswordResult::NotFound),
        Err(e) => return Err(e),
    };
    let edge = match edge_result(&link, unix_now()) {
        LookupResult::Found(l) => l,
        LookupResult::Gone => return Ok(PasswordResult::Gone),
        LookupResult::NotFound => return Ok(PasswordResult::NotFound),
    };
    let Some(hash) = link.password_hash.clone() else {
        // The password was removed since the form was shown.
        return Ok(PasswordResult::Granted(Box::new(edge)));
    };
    let verdict = app
        .link_passwords
        .check(link.id, hash, password, client)
        .await?;
    Ok(match verdict {
        Verdict::Right => PasswordResult::Granted(Box::new(edge)),
        Verdict::Wrong => PasswordResult::Wrong,
        Verdict::Throttled(retry_after) => PasswordResult::Throttled { retry_after },
        Verdict::Busy => PasswordResult::Busy,
    })
}
