//! `takedown`: switch off every link to a host or by one creator, list the
//! records, undo one.

use anyhow::Result;

use super::args::TakedownCommand;
use super::client::Client;
use super::output::Output;
use super::table::{when, Table};
use crate::api::takedowns::{NewTakedownBody, TakedownView};

/// One record on stderr, after a takedown or an undo.
fn said(t: &TakedownView) -> String {
    match t.restored {
        Some(n) => format!(
            "undid takedown {} ({} {}): {n} links switched back on",
            t.id, t.kind, t.selector
        ),
        None => format!(
            "takedown {} ({} {}): {} links matched, {} switched off",
            t.id, t.kind, t.selector, t.matched, t.disabled
        ),
    }
}

pub async fn takedown(client: &Client, command: TakedownCommand, out: &mut Output) -> Result<()> {
    let body = |host, creator, reason| NewTakedownBody {
        host,
        creator,
        reason,
    };
    let done = match command {
        TakedownCommand::Host { host, reason } => {
            client.take_down(&body(Some(host), None, reason)).await?
        }
        TakedownCommand::Creator { creator, reason } => {
            client.take_down(&body(None, Some(creator), reason)).await?
        }
        TakedownCommand::Undo { id } => client.undo_takedown(id).await?,
        TakedownCommand::List { limit } => {
            let list = client.takedowns(limit).await?;
            if out.json {
                return out.print_json(&list);
            }
            let mut t = Table::new(&[
                "ID", "KIND", "SELECTOR", "BY", "WHEN", "OFF", "UNDONE", "REASON",
            ]);
            for d in list.takedowns {
                t.row(vec![
                    d.id.to_string(),
                    d.kind,
                    d.selector,
                    d.created_by,
                    when(Some(d.created_at)),
                    d.disabled.to_string(),
                    when(d.undone_at),
                    d.reason,
                ]);
            }
            return out.table(&t);
        }
    };
    if out.json {
        out.print_json(&done)
    } else {
        eprintln!("{}", said(&done));
        Ok(())
    }
}
