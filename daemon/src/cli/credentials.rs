//! `key`, `app` and `user`: API keys, signing apps and users.

use crate::timestamp::Timestamp;
use std::io::Write;

use anyhow::{bail, Result};
use serde_json::json;

use super::args::{AppCommand, KeyCommand, UserCommand};
use super::client::Client;
use super::output::Output;
use super::password::read_password;
use super::table::{when, Table};
use crate::access::Role;
use crate::api::keys::{KeyView, NewCredential};
use crate::api::teams::Membership;
use crate::api::users::{NewPassword, NewUser};

/// Runs a `key` command; `create` prints only the secret.
pub async fn key(client: &Client, command: KeyCommand, out: &mut Output) -> Result<()> {
    match command {
        KeyCommand::Create {
            name,
            scopes,
            expires,
            user,
        } => {
            let expires_at = expires.map(crate::links::TimeInput::Text);
            let created = client
                .create_key(&NewCredential {
                    name,
                    scopes,
                    expires_at,
                    user,
                })
                .await?;
            if out.json {
                out.print_json(&created)?;
            } else {
                writeln!(out, "{}", created.secret)?;
            }
        }
        KeyCommand::List => {
            let keys = client.keys().await?;
            if out.json {
                return out.print_json(&keys);
            }
            let mut t = Table::new(&[
                "ID", "NAME", "PREFIX", "SCOPES", "ROLE", "TEAM", "STATUS", "CREATED",
            ]);
            for k in keys.keys {
                t.row(vec![
                    k.id.to_string(),
                    k.name,
                    format!("slk_{}", k.prefix),
                    k.scopes.join(","),
                    k.role.to_string(),
                    k.team_id.to_string(),
                    status(k.revoked_at).into(),
                    when(Some(k.created_at)),
                ]);
            }
            out.table(&t)?;
        }
        KeyCommand::Revoke { key } => {
            let id = key_id(client, &key).await?;
            client.revoke_key(id).await?;
            if out.json {
                out.print_json(&json!({ "revoked": id }))?;
            } else {
                eprintln!("revoked key {id}");
            }
        }
    }
    Ok(())
}

/// The id of the key named by `key`: a numeric id, or a prefix as `key
/// list` shows it (with or without `slk_`), which must match one key.
async fn key_id(client: &Client, key: &str) -> Result<i64> {
    if let Ok(id) = key.parse::<i64>() {
        return Ok(id);
    }
    let prefix = key.strip_prefix("slk_").unwrap_or(key);
    if prefix.is_empty() {
        bail!("no key given: pass an id or a prefix (see `key list`)");
    }
    let keys = client.keys().await?.keys;
    let found: Vec<&KeyView> = keys
        .iter()
        .filter(|k| k.prefix.starts_with(prefix) || prefix.starts_with(&k.prefix))
        .collect();
    match found.as_slice() {
        [k] => Ok(k.id),
        [] => bail!("no key has the prefix {key:?} (see `key list`)"),
        many => {
            let ids: Vec<String> = many.iter().map(|k| k.id.to_string()).collect();
            bail!(
                "the prefix {key:?} matches keys {}; give more of it or an id",
                ids.join(", ")
            )
        }
    }
}

/// Runs an `app` command; `create` prints `app_id=` and `secret=` lines.
pub async fn app(client: &Client, command: AppCommand, out: &mut Output) -> Result<()> {
    match command {
        AppCommand::Create { name, scopes } => {
            let created = client
                .create_app(&NewCredential {
                    name,
                    scopes,
                    expires_at: None,
                    user: None,
                })
                .await?;
            if out.json {
                out.print_json(&created)?;
            } else {
                writeln!(out, "app_id={}", created.app.app_id)?;
                writeln!(out, "secret={}", created.secret)?;
            }
        }
        AppCommand::List => {
            let apps = client.apps().await?;
            if out.json {
                return out.print_json(&apps);
            }
            let mut t = Table::new(&["ID", "APP_ID", "NAME", "SCOPES", "STATUS", "CREATED"]);
            for a in apps.apps {
                t.row(vec![
                    a.id.to_string(),
                    a.app_id,
                    a.name,
                    a.scopes.join(","),
                    status(a.revoked_at).into(),
                    when(Some(a.created_at)),
                ]);
            }
            out.table(&t)?;
        }
        AppCommand::Revoke { id } => {
            client.revoke_app(&id).await?;
            if out.json {
                out.print_json(&json!({ "revoked": id }))?;
            } else {
                eprintln!("revoked app {id}");
            }
        }
    }
    Ok(())
}

/// Runs a `user` command; the password is prompted for or read from stdin.
pub async fn user(client: &Client, command: UserCommand, out: &mut Output) -> Result<()> {
    match command {
        UserCommand::Add {
            name, team, role, ..
        } => {
            let role = role.as_deref().map(Role::parse).transpose()?;
            let password = read_password(&name)?;
            let user = client
                .add_user(&NewUser {
                    name: name.clone(),
                    password,
                    team,
                    role,
                })
                .await?;
            if out.json {
                out.print_json(&user)?;
            } else {
                eprintln!("added user {name}");
            }
        }
        UserCommand::List => {
            let users = client.users().await?;
            if out.json {
                return out.print_json(&users);
            }
            let mut t = Table::new(&["ID", "NAME", "TEAM", "ROLE", "CREATED"]);
            for u in users.users {
                t.row(vec![
                    u.id.to_string(),
                    u.name,
                    u.team,
                    u.role.to_string(),
                    when(Some(u.created_at)),
                ]);
            }
            out.table(&t)?;
        }
        UserCommand::Set { name, team, role } => {
            let role = Role::parse(&role)?;
            let user = client
                .set_membership(&name, &Membership { team, role })
                .await?;
            if out.json {
                out.print_json(&user)?;
            } else {
                eprintln!("{name} is now {} of team {}", user.role, user.team);
            }
        }
        UserCommand::Delete { name } => {
            client.delete_user(&name).await?;
            if out.json {
                out.print_json(&json!({ "deleted": name }))?;
            } else {
                eprintln!("deleted user {name}");
            }
        }
        UserCommand::Passwd { name, .. } => {
            let password = read_password(&name)?;
            client
                .set_password(&name, &NewPassword { password })
                .await?;
            if out.json {
                out.print_json(&json!({ "changed": name }))?;
            } else {
                eprintln!("changed the password of {name}");
            }
        }
    }
    Ok(())
}

/// `active` or `revoked`, for the list commands.
fn status(revoked_at: Option<Timestamp>) -> &'static str {
    match revoked_at {
        None => "active",
        Some(_) => "revoked",
    }
}
