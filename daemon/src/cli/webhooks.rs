//! `webhook`: add, list and delete webhooks, read a webhook's delivery
//! log and send a delivery again.

use std::io::Write;

use anyhow::Result;
use clap::Subcommand;
use serde_json::json;

use super::client::Client;
use super::output::Output;
use super::table::{when, Table};
use crate::api::webhooks::NewWebhookBody;

/// `webhook` subcommands.
#[derive(Debug, Subcommand)]
pub enum WebhookCommand {
    /// Add a webhook; prints its id and its signing secret (shown once).
    Add {
        /// Where deliveries are POSTed (http or https).
        url: String,
        /// Events, comma-separated: link.created, link.updated,
        /// link.deleted, link.disabled, link.expired, link.exhausted,
        /// link.clicks, or link.* for all.
        #[arg(long, value_delimiter = ',', required = true)]
        events: Vec<String>,
        /// The team whose links it reports (default: the default team).
        #[arg(long)]
        team: Option<String>,
    },
    /// List webhooks.
    List,
    /// Delete a webhook and its delivery log.
    Delete {
        /// The webhook's id.
        id: i64,
    },
    /// A webhook's delivery log, newest first.
    Deliveries {
        /// The webhook's id.
        id: i64,
        /// At most this many (1-1000).
        #[arg(long, default_value_t = 50)]
        limit: u32,
    },
    /// Send a delivery again (as a new delivery, due now).
    Redeliver {
        /// The webhook's id.
        id: i64,
        /// The delivery's id.
        delivery: i64,
    },
}

/// Runs a `webhook` command.
pub async fn webhook(client: &Client, command: WebhookCommand, out: &mut Output) -> Result<()> {
    match command {
        WebhookCommand::Add { url, events, team } => {
            let hook = client
                .create_webhook(&NewWebhookBody { url, events, team })
                .await?;
            if out.json {
                out.print_json(&hook)?;
            } else {
                writeln!(out, "{}\t{}", hook.webhook.id, hook.secret)?;
                eprintln!("the secret signs every delivery; it cannot be shown again");
            }
        }
        WebhookCommand::List => {
            let hooks = client.webhooks().await?;
            if out.json {
                return out.print_json(&hooks);
            }
            let mut t = Table::new(&["ID", "TEAM", "URL", "EVENTS", "CREATED"]);
            for h in hooks.webhooks {
                t.row(vec![
                    h.id.to_string(),
                    h.team_id.to_string(),
                    h.url,
                    h.events.join(","),
                    when(Some(h.created_at)),
                ]);
            }
            out.table(&t)?;
        }
        WebhookCommand::Delete { id } => {
            client.delete_webhook(id).await?;
            if out.json {
                out.print_json(&json!({ "deleted": id }))?;
            } else {
                eprintln!("deleted webhook {id}");
            }
        }
        WebhookCommand::Deliveries { id, limit } => {
            let log = client.webhook_deliveries(id, limit).await?;
            if out.json {
                return out.print_json(&log);
            }
            let mut t = Table::new(&[
                "ID", "EVENT", "CODE", "STATUS", "ATTEMPTS", "LAST", "ERROR", "CREATED",
            ]);
            for d in log.deliveries {
                t.row(vec![
                    d.id.to_string(),
                    d.event,
                    d.code.unwrap_or_else(|| "-".into()),
                    d.status,
                    d.attempts.to_string(),
                    d.last_status.map_or("-".into(), |s| s.to_string()),
                    d.last_error.unwrap_or_else(|| "-".into()),
                    when(Some(d.created_at)),
                ]);
            }
            out.table(&t)?;
        }
        WebhookCommand::Redeliver { id, delivery } => {
            let again = client.redeliver(id, delivery).await?;
            if out.json {
                out.print_json(&again)?;
            } else {
                writeln!(out, "{}", again.id)?;
            }
        }
    }
    Ok(())
}
