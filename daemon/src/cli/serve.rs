//! `serve` and `keygen`: running the daemon, and the key it shares with
//! nginx.

use std::io::IsTerminal;
use std::path::Path;

use anyhow::{Context, Result};

use crate::app::{App, AppError};
use crate::config::Config;
use crate::server;
use crate::store::postgres::PgError;

/// Log lines on stderr, filtered by `RUST_LOG` (default `info`).
pub fn init_logging(json: bool) {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    if json {
        builder.json().init();
    } else {
        builder.with_ansi(std::io::stderr().is_terminal()).init();
    }
}

/// Writes a new deployment key to `path` (never over an existing file).
pub fn keygen(path: &Path) -> Result<()> {
    let key = shortlink_core::DeploymentKey::generate()?;
    key.write_new(path)
        .with_context(|| format!("cannot write the key file {}", path.display()))?;
    eprintln!(
        "wrote a new key to {} (fingerprint {})",
        path.display(),
        key.fingerprint()
    );
    Ok(())
}

/// Runs the daemon until SIGTERM or SIGINT.
pub async fn serve(config: Config) -> Result<()> {
    let signal = server::shutdown_signal().context("cannot handle SIGTERM and SIGINT")?;
    // Cancelled by SIGTERM: ends the wait for an unreachable database at
    // start, then the server.
    let stop = tokio_util::sync::CancellationToken::new();
    let on_signal = stop.clone();
    tokio::spawn(async move {
        signal.await;
        on_signal.cancel();
    });
    let app = match App::open_waiting(config.clone(), &stop).await {
        Ok(app) => app,
        Err(AppError::Postgres {
            source: PgError::StoppedWaiting(_),
            ..
        }) => {
            tracing::info!("stopped before PostgreSQL answered; bye");
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    let shutdown = stop.cancelled_owned();
    let listeners = server::bind(&config).await?;
    if let Some(addr) = listeners.tcp_addr() {
        tracing::info!(%addr, "HTTP API also on TCP");
    }
    server::run(app, listeners, shutdown).await?;
    Ok(())
}
