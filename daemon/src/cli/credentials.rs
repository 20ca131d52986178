//! `key`, `app` and `user`: API keys, signing apps and admin UI users.

use std::io::{BufRead, IsTerminal, Write};

use anyhow::{bail, Result};

use super::args::{AppCommand, KeyCommand, UserCommand};
use super::client::Client;
use crate::api::keys::NewCredential;
use crate::api::users::{NewPassword, NewUser};

/// Runs a `key` command; `create` prints only the secret.
pub async fn key(client: &Client, command: KeyCommand, out: &mut impl Write) -> Result<()> {
    match command {
        KeyCommand::Create { name, scopes } => {
            let created = client
                .create_key(&NewCredential {
                    name,
                    scopes,
                    expires_at: None,
                })
                .await?;
            writeln!(out, "{}", created.secret)?;
        }
        KeyCommand::List => {
            writeln!(out, "ID\tNAME\tPREFIX\tSCOPES\tSTATUS")?;
            for k in client.keys().await?.keys {
                writeln!(
                    out,
                    "{}\t{}\tslk_{}\t{}\t{}",
                    k.id,
                    k.name,
                    k.prefix,
                    k.scopes.join(","),
                    status(k.revoked_at)
                )?;
            }
        }
        KeyCommand::Revoke { id } => {
            client.revoke_key(id).await?;
            eprintln!("revoked key {id}");
        }
    }
    Ok(())
}

/// Runs an `app` command; `create` prints `app_id=` and `secret=` lines.
pub async fn app(client: &Client, command: AppCommand, out: &mut impl Write) -> Result<()> {
    match command {
        AppCommand::Create { name, scopes } => {
            let created = client
                .create_app(&NewCredential {
                    name,
                    scopes,
                    expires_at: None,
                })
                .await?;
            writeln!(out, "app_id={}", created.app.app_id)?;
            writeln!(out, "secret={}", created.secret)?;
        }
        AppCommand::List => {
            writeln!(out, "ID\tAPP_ID\tNAME\tSCOPES\tSTATUS")?;
            for a in client.apps().await?.apps {
                writeln!(
                    out,
                    "{}\t{}\t{}\t{}\t{}",
                    a.id,
                    a.app_id,
                    a.name,
                    a.scopes.join(","),
                    status(a.revoked_at)
                )?;
            }
        }
        AppCommand::Revoke { id } => {
            client.revoke_app(&id).await?;
            eprintln!("revoked app {id}");
        }
    }
    Ok(())
}

/// Runs a `user` command; the password comes from stdin.
pub async fn user(client: &Client, command: UserCommand) -> Result<()> {
    match command {
        UserCommand::Add { name, .. } => {
            let password = read_password(&name)?;
            client
                .add_user(&NewUser {
                    name: name.clone(),
                    password,
                })
                .await?;
            eprintln!("added user {name}");
        }
        UserCommand::Passwd { name, .. } => {
            let password = read_password(&name)?;
            client
                .set_password(&name, &NewPassword { password })
                .await?;
            eprintln!("changed the password of {name}");
        }
    }
    Ok(())
}

/// `active` or `revoked`, for the list commands.
fn status(revoked_at: Option<i64>) -> &'static str {
    match revoked_at {
        None => "active",
        Some(_) => "revoked",
    }
}

/// One line from stdin (prompted for on a terminal).
fn read_password(name: &str) -> Result<String> {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        eprint!("password for {name}: ");
        std::io::stderr().flush().ok();
    }
    let mut line = String::new();
    stdin.lock().read_line(&mut line)?;
    let pw = line.trim_end_matches(['\r', '\n']).to_string();
    if pw.is_empty() {
        bail!("no password on stdin");
    }
    Ok(pw)
}
