//! The command line: `serve`, `keygen` and the admin commands.
//!
//! Admin commands go through one typed [`Client`]: HTTP to the running
//! daemon's owner-only control socket, so its cache and the nginx workers
//! stay right, or, when no daemon answers, the same API in-process on the
//! database. One file per job: [`args`] (the command tree and where the
//! daemon flags go), [`client`], and the commands.

pub mod args;
mod backup;
pub mod client;
mod credentials;
mod export;
mod ids;
mod import;
mod links;
mod output;
mod password;
mod serve;
pub mod settings;
mod stats;
mod table;
mod takedown;
pub mod teams;
pub mod webhooks;

use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::FromArgMatches;

pub use args::{command, AdminCommand, Cli, Command};
pub use client::Client;
pub use settings::SettingsArgs;

use crate::api::stats::{SiteStatsParams, StatsParams};
use crate::config::Config;

/// Entry point of the binary.
pub fn run() -> ExitCode {
    let cli = match Cli::from_arg_matches(&command().get_matches()) {
        Ok(cli) => cli,
        Err(e) => e.format(&mut command()).exit(),
    };
    match run_cli(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("shortlinkd: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run_cli(cli: Cli) -> Result<ExitCode> {
    let command = match cli.command {
        Command::Keygen { path } => {
            serve::keygen(&path)?;
            return Ok(ExitCode::SUCCESS);
        }
        Command::Serve => None,
        Command::Backup { file, force } => {
            let copied = backup::backup(&cli.settings.load()?, &file, force)?;
            if cli.json {
                output::Output::stdout(true).print_json(&copied)?;
            }
            return Ok(ExitCode::SUCCESS);
        }
        Command::Restore { file } => {
            let copied = backup::restore(&cli.settings.load()?, &file)?;
            if cli.json {
                output::Output::stdout(true).print_json(&copied)?;
            }
            return Ok(ExitCode::SUCCESS);
        }
        Command::Admin(command) => Some(command),
    };
    let json = cli.json;
    let config = cli.settings.load()?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let Some(command) = command else {
        serve::init_logging(config.log_json);
        rt.block_on(serve::serve(config))?;
        return Ok(ExitCode::SUCCESS);
    };
    if std::env::var_os("RUST_LOG").is_some() {
        serve::init_logging(config.log_json);
    }
    rt.block_on(admin(config, command, json))
}

/// Runs one admin command through a client made for it.
async fn admin(config: Config, command: AdminCommand, json: bool) -> Result<ExitCode> {
    let client = Client::connect(&config).await?;
    let result = dispatch(&client, command, &mut output::Output::stdout(json)).await;
    client.close().await;
    result
}

async fn dispatch(
    client: &Client,
    command: AdminCommand,
    out: &mut output::Output,
) -> Result<ExitCode> {
    match command {
        AdminCommand::Key(c) => credentials::key(client, c, out).await?,
        AdminCommand::App(c) => credentials::app(client, c, out).await?,
        AdminCommand::User(c) => credentials::user(client, c, out).await?,
        AdminCommand::Takedown(c) => takedown::takedown(client, c, out).await?,
        AdminCommand::Team(c) => teams::team(client, c, out).await?,
        AdminCommand::Ids { limit } => ids::ids(client, limit, out).await?,
        AdminCommand::Webhook(c) => webhooks::webhook(client, c, out).await?,
        AdminCommand::Link(c) => links::link(client, *c, out).await?,
        AdminCommand::Stats {
            code,
            tag,
            tz,
            from,
            to,
            granularity,
            series,
        } => match code {
            Some(code) => {
                let params = StatsParams {
                    from,
                    to,
                    granularity: Some(granularity),
                    tz,
                };
                stats::stats(client, &code, params, series, out).await?
            }
            None => {
                let params = SiteStatsParams {
                    from,
                    to,
                    granularity: Some(granularity),
                    top: None,
                    tz,
                    tag,
                };
                stats::site_stats(client, params, series, out).await?
            }
        },
        AdminCommand::Import { file, format } => {
            return import::import(client, &file, format, out).await
        }
        AdminCommand::Export { file } => export::export(client, &file, out).await?,
    }
    Ok(ExitCode::SUCCESS)
}
