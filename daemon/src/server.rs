//! `shortlinkd serve`: binds the sockets, runs the IPC server, the HTTP API,
//! the control socket and the background jobs, and shuts down gracefully.

use crate::unread_body::finish_body;
use axum::middleware::from_fn;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use interprocess::local_socket::{GenericFilePath, ListenerOptions, ToFsName};
use interprocess::os::unix::local_socket::ListenerOptionsExt;
use tokio::net::{TcpListener, UnixListener};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::app::SharedApp;
use crate::config::Config;
use crate::store::StoreError;
use crate::timestamp::unix_now;
use crate::users::ApiPeer;
use crate::{api, ipc, spool, stats};

/// How long shutdown waits for in-flight work.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

/// Why the server could not start or run.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// Another daemon answers on this socket.
    #[error("{path} is in use by a running daemon; stop it first or choose another path")]
    InUse { path: String },
    /// The path exists and is not a socket: refuse to delete it.
    #[error("{path} exists and is not a socket; refusing to replace it")]
    NotASocket { path: String },
    /// A socket could not be created or its owner and mode set.
    #[error("cannot set up {path}: {source}")]
    Socket {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// The socket group does not exist.
    #[error("socket_group \"{0}\" does not exist")]
    NoGroup(String),
    /// The database failed while starting.
    #[error("database: {0}")]
    Store(#[from] StoreError),
}

/// The bound sockets.
pub struct Listeners {
    pub ipc: interprocess::local_socket::tokio::Listener,
    pub api: UnixListener,
    pub control: UnixListener,
    pub tcp: Option<TcpListener>,
    /// Socket files to remove at shutdown.
    paths: Vec<PathBuf>,
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> ServerError + '_ {
    move |source| ServerError::Socket {
        path: path.display().to_string(),
        source,
    }
}

/// Removes a stale socket file; refuses when a live process answers on it.
fn clear_socket_path(path: &Path) -> Result<(), ServerError> {
    use std::os::unix::fs::FileTypeExt;
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io_err(path)(e)),
    };
    if !meta.file_type().is_socket() {
        return Err(ServerError::NotASocket {
            path: path.display().to_string(),
        });
    }
    if std::os::unix::net::UnixStream::connect(path).is_ok() {
        return Err(ServerError::InUse {
            path: path.display().to_string(),
        });
    }
    tracing::info!(path = %path.display(), "removing stale socket");
    std::fs::remove_file(path).map_err(io_err(path))
}

fn group_id(name: &str) -> Result<nix::unistd::Gid, ServerError> {
    if let Ok(n) = name.parse::<u32>() {
        return Ok(nix::unistd::Gid::from_raw(n));
    }
    match nix::unistd::Group::from_name(name) {
        Ok(Some(g)) => Ok(g.gid),
        _ => Err(ServerError::NoGroup(name.to_string())),
    }
}

/// Sets mode and (optionally) group of a socket or directory.
fn set_owner(path: &Path, mode: u32, group: Option<nix::unistd::Gid>) -> Result<(), ServerError> {
    use std::os::unix::fs::PermissionsExt;
    if let Some(gid) = group {
        nix::unistd::chown(path, None, Some(gid))
            .map_err(|e| io_err(path)(std::io::Error::from(e)))?;
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).map_err(io_err(path))
}

fn parent_dir(path: &Path) -> Result<(), ServerError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(io_err(dir))?;
    }
    Ok(())
}

fn bind_unix(
    path: &Path,
    mode: u32,
    group: Option<nix::unistd::Gid>,
) -> Result<UnixListener, ServerError> {
    parent_dir(path)?;
    clear_socket_path(path)?;
    let listener = UnixListener::bind(path).map_err(io_err(path))?;
    set_owner(path, mode, group)?;
    Ok(listener)
}

/// Binds every socket the configuration names. Must run inside a runtime.
pub async fn bind(config: &Config) -> Result<Listeners, ServerError> {
    let group = config.socket_group.as_deref().map(group_id).transpose()?;
    let ipc_path = config.ipc_path();
    parent_dir(&ipc_path)?;
    clear_socket_path(&ipc_path)?;
    let name = ipc_path
        .as_os_str()
        .to_fs_name::<GenericFilePath>()
        .map_err(io_err(&ipc_path))?;
    let ipc = ListenerOptions::new()
        .name(name)
        .mode(0o660)
        .reclaim_name(true)
        .create_tokio()
        .map_err(io_err(&ipc_path))?;
    set_owner(&ipc_path, 0o660, group)?;
    let api_path = config.api_path();
    let api = bind_unix(&api_path, 0o660, group)?;
    let control_path = config.control_path();
    let control = bind_unix(&control_path, 0o600, None)?;
    let tcp = match config.api_listen {
        Some(addr) => {
            Some(
                TcpListener::bind(addr)
                    .await
                    .map_err(|source| ServerError::Socket {
                        path: addr.to_string(),
                        source,
                    })?,
            )
        }
        None => None,
    };
    // nginx workers write spool files here. A directory the operator made
    // keeps its owner and mode; one we create is 0770 for the socket group.
    let spool = config.spool_path();
    if !spool.exists() {
        std::fs::create_dir_all(&spool).map_err(io_err(&spool))?;
        if group.is_some() {
            set_owner(&spool, 0o770, group)?;
        }
    }
    Ok(Listeners {
        ipc,
        api,
        control,
        tcp,
        paths: vec![api_path, control_path],
    })
}

impl Listeners {
    /// The TCP address actually bound (useful with port 0).
    pub fn tcp_addr(&self) -> Option<std::net::SocketAddr> {
        self.tcp.as_ref().and_then(|t| t.local_addr().ok())
    }
}

/// Everything served on the API socket (and TCP): the `/api/v1` router.
/// The admin UI (`/admin`) merges its router in here; a body answered
/// without is still read to its end (`crate::unread_body`).
pub fn http_router(app: SharedApp) -> axum::Router {
    crate::admin::with_admin(app.clone(), api::router(app)).layer(from_fn(finish_body))
}

/// Runs until `shutdown` resolves, then stops accepting, lets in-flight
/// requests and click batches finish, and closes the database.
pub async fn run(
    app: SharedApp,
    listeners: Listeners,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServerError> {
    let token = CancellationToken::new();
    let tracker = TaskTracker::new();
    app.ids.prime().await?;
    let window = app.config.signature_window;
    let sigs = app.store.recent_signatures(unix_now() - 2 * window).await?;
    app.auth.remember_signatures(sigs);

    let spool_dir = app.config.spool_path();
    match spool::import_dir(&app, &spool_dir).await {
        Ok(r) if r.files + r.bad_files > 0 => {
            tracing::info!(
                files = r.files,
                bad = r.bad_files,
                batches = r.batches,
                "imported click spool at start"
            )
        }
        Ok(_) => {}
        Err(e) => tracing::error!(error = %e, "spool import failed"),
    }
    // Before serving: links the allow/block lists refuse since they
    // changed are off before any worker asks for them.
    if let Err(e) = crate::takedown::apply_target_rules(&app).await {
        tracing::error!(error = %e, "could not apply the allow/block lists to stored links");
    }

    let Listeners {
        ipc: ipc_listener,
        api: api_listener,
        control,
        tcp,
        paths,
    } = listeners;

    let mut servers = Vec::new();
    servers.push(tokio::spawn(ipc::serve(
        Arc::clone(&app),
        ipc_listener,
        token.clone(),
        tracker.clone(),
    )));
    let api_router = http_router(Arc::clone(&app)).into_make_service_with_connect_info::<ApiPeer>();
    {
        let t = token.clone();
        let r = api_router.clone();
        servers.push(tokio::spawn(async move {
            if let Err(e) = axum::serve(api_listener, r)
                .with_graceful_shutdown(async move { t.cancelled().await })
                .await
            {
                tracing::error!(error = %e, "API server failed");
            }
        }));
    }
    if let Some(tcp) = tcp {
        let t = token.clone();
        let r = api_router.clone();
        servers.push(tokio::spawn(async move {
            if let Err(e) = axum::serve(tcp, r)
                .with_graceful_shutdown(async move { t.cancelled().await })
                .await
            {
                tracing::error!(error = %e, "API TCP server failed");
            }
        }));
    }
    {
        let t = token.clone();
        let r = api::control_router(Arc::clone(&app)).layer(from_fn(finish_body));
        servers.push(tokio::spawn(async move {
            if let Err(e) = axum::serve(control, r)
                .with_graceful_shutdown(async move { t.cancelled().await })
                .await
            {
                tracing::error!(error = %e, "control socket server failed");
            }
        }));
    }
    let maintenance = tokio::spawn(maintenance(Arc::clone(&app), token.clone()));
    let folds = tokio::spawn(stats::fold_loop(Arc::clone(&app), token.clone()));
    let checker = tokio::spawn(crate::checker::sweep::run(Arc::clone(&app), token.clone()));
    let recycling = tokio::spawn(crate::recycle::run(Arc::clone(&app), token.clone()));
    let taken_down = tokio::spawn(crate::takedown::keep_hosts_current(
        Arc::clone(&app),
        token.clone(),
    ));
    let webhooks = tokio::spawn(crate::webhooks::dispatch::run(
        Arc::clone(&app),
        token.clone(),
    ));
    let blocklist = app.config.blocklist_file.clone().map(|path| {
        tokio::spawn(crate::takedown::blocklist::watch(
            Arc::clone(&app),
            path,
            token.clone(),
        ))
    });
    // Several nodes on one PostgreSQL: changes from any node reach this
    // node's cache and workers.
    let feed = app
        .shared
        .clone()
        .map(|pg| tokio::spawn(crate::change_feed::run(Arc::clone(&app), pg, token.clone())));

    tracing::info!(
        ipc = %app.config.ipc_path().display(),
        api = %app.config.api_path().display(),
        fingerprint = %app.fingerprint,
        "shortlinkd ready"
    );
    shutdown.await;
    tracing::info!("shutting down: no new connections; finishing in-flight work");
    token.cancel();
    let drain = async {
        for s in servers {
            let _ = s.await;
        }
        tracker.close();
        tracker.wait().await;
        let _ = maintenance.await;
        let _ = folds.await;
        if let Some(feed) = feed {
            let _ = feed.await;
        }
        if let Some(blocklist) = blocklist {
            let _ = blocklist.await;
        }
        let _ = checker.await;
        let _ = recycling.await;
        let _ = taken_down.await;
        let _ = webhooks.await;
    };
    if tokio::time::timeout(DRAIN_TIMEOUT, drain).await.is_err() {
        tracing::warn!("in-flight work did not finish within {DRAIN_TIMEOUT:?}; closing anyway");
    }
    // Every acknowledged click into the tables (what is left would be
    // folded from the click log at the next start anyway).
    match stats::fold(&app).await {
        Ok(f) if f.batches > 0 => {
            tracing::info!(
                batches = f.batches,
                clicks = f.counted,
                "folded pending clicks"
            )
        }
        Ok(_) => {}
        Err(e) => {
            tracing::error!(error = %e, "cannot fold pending clicks; they stay in the click log")
        }
    }
    // The ids this process leased and never handed out, back to the store
    // (the next start leases them again instead of skipping them).
    match tokio::time::timeout(DRAIN_TIMEOUT, app.ids.give_back()).await {
        Ok(Ok(0)) => {}
        Ok(Ok(n)) => tracing::info!(ids = n, "handed unused ids back"),
        Ok(Err(e)) => tracing::warn!(error = %e, "cannot hand unused ids back; they stay unused"),
        Err(_) => tracing::warn!("handing unused ids back took too long; they stay unused"),
    }
    let store = app.store.clone();
    let _ = tokio::task::spawn_blocking(move || store.close()).await;
    for p in paths {
        let _ = std::fs::remove_file(p);
    }
    tracing::info!("database closed; bye");
    Ok(())
}

/// Spool imports every few seconds, pruning of old batch ids and signatures.
async fn maintenance(app: SharedApp, token: CancellationToken) {
    let mut spool_tick = tokio::time::interval(Duration::from_secs(app.config.spool_interval));
    let mut prune_tick = tokio::time::interval(Duration::from_secs(3600));
    spool_tick.tick().await;
    // Every few seconds while the database is down: said once per outage.
    let mut importing = crate::outage_log::OutageLog::new("import the click spool");
    loop {
        tokio::select! {
            _ = token.cancelled() => break,
            _ = spool_tick.tick() => {
                importing.record(spool::import_dir(&app, &app.config.spool_path()).await);
            }
            _ = prune_tick.tick() => {
                let keep = app.config.batch_retention_days as i64 * 86_400;
                let window = app.config.signature_window;
                let now = unix_now();
                let pruned = app.store.prune(now - keep, now - 2 * window).await;
                match pruned {
                    Ok((b, s)) if b + s > 0 => tracing::debug!(batches = b, signatures = s, "pruned"),
                    Ok(_) => {}
                    Err(e) => tracing::warn!(error = %e, "pruning failed"),
                }
            }
        }
    }
}

/// Handles SIGTERM and SIGINT from this call on; the future resolves on
/// either. Called before anything is served: a handler registered only
/// when the future is first polled (after the servers are spawned) left a
/// moment in which the API answered and a SIGTERM still killed the process
/// without its clean shutdown.
pub fn shutdown_signal() -> std::io::Result<impl Future<Output = ()>> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => tracing::info!("SIGTERM received"),
            _ = int.recv() => tracing::info!("SIGINT received"),
        }
    })
}
