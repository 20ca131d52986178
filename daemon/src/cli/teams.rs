//! `team`: create, list and delete teams.

use std::io::Write;

use anyhow::Result;
use clap::Subcommand;
use serde_json::json;

use super::client::Client;
use super::output::Output;
use super::table::{when, Table};
use crate::api::teams::NewTeam;

/// `team` subcommands.
#[derive(Debug, Subcommand)]
pub enum TeamCommand {
    /// Create a team; prints its id.
    Create {
        /// The team's name: 1 to 64 of A-Z a-z 0-9 . _ -
        name: String,
    },
    /// List teams.
    List,
    /// Delete a team (refused while a link, user, key, app or webhook is in it).
    Delete {
        /// The team's name.
        name: String,
    },
}

/// Runs a `team` command.
pub async fn team(client: &Client, command: TeamCommand, out: &mut Output) -> Result<()> {
    match command {
        TeamCommand::Create { name } => {
            let team = client.create_team(&NewTeam { name }).await?;
            if out.json {
                out.print_json(&team)?;
            } else {
                writeln!(out, "{}", team.id)?;
            }
        }
        TeamCommand::List => {
            let teams = client.teams().await?;
            if out.json {
                return out.print_json(&teams);
            }
            let mut t = Table::new(&["ID", "NAME", "CREATED"]);
            for team in teams.teams {
                t.row(vec![
                    team.id.to_string(),
                    team.name,
                    when(Some(team.created_at)),
                ]);
            }
            out.table(&t)?;
        }
        TeamCommand::Delete { name } => {
            client.delete_team(&name).await?;
            if out.json {
                out.print_json(&json!({ "deleted": name }))?;
            } else {
                eprintln!("deleted team {name}");
            }
        }
    }
    Ok(())
}
