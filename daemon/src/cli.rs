//! The command line: `serve`, `keygen` and the admin commands.
//!
//! Admin commands talk HTTP to the running daemon over its owner-only
//! control socket, so its cache and the nginx workers stay right; when no
//! daemon answers they run the same API in-process on the database.

use std::io::{BufRead, IsTerminal, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use clap::{Args, Parser, Subcommand};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use tower::ServiceExt;

use crate::app::{App, SharedApp};
use crate::config::{Config, Overrides};
use crate::server;

/// shortlinkd: the daemon behind the shortlink nginx module.
#[derive(Debug, Parser)]
#[command(name = "shortlinkd", version, about)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// Settings every command understands (flag > environment > file > default).
#[derive(Debug, Clone, Args)]
pub struct GlobalArgs {
    /// TOML configuration file.
    #[arg(long, global = true, env = "SHORTLINKD_CONFIG")]
    pub config: Option<PathBuf>,
    /// Directory of the database, sockets and spool.
    #[arg(long, global = true, env = "SHORTLINKD_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
    /// Deployment key file shared with nginx (default <data_dir>/key).
    #[arg(long, global = true, env = "SHORTLINKD_KEY_FILE")]
    pub key_file: Option<PathBuf>,
    /// IPC socket for nginx workers (default <data_dir>/ipc.sock).
    #[arg(long, global = true, env = "SHORTLINKD_IPC_SOCKET")]
    pub ipc_socket: Option<PathBuf>,
    /// HTTP API socket (default <data_dir>/api.sock).
    #[arg(long, global = true, env = "SHORTLINKD_API_SOCKET")]
    pub api_socket: Option<PathBuf>,
    /// Also serve the HTTP API on this loopback TCP address.
    #[arg(long, global = true, env = "SHORTLINKD_API_LISTEN")]
    pub api_listen: Option<SocketAddr>,
    /// Short-URL base when nginx sends no X-Shortlink-Base.
    #[arg(long, global = true, env = "SHORTLINKD_BASE_URL")]
    pub base_url: Option<String>,
    /// Shortest generated code, check character included (2-12).
    #[arg(long, global = true, env = "SHORTLINKD_MIN_LENGTH")]
    pub min_length: Option<usize>,
    /// Ids leased from the database at a time.
    #[arg(long, global = true, env = "SHORTLINKD_SEGMENT_SIZE")]
    pub segment_size: Option<u64>,
    /// Group owning the IPC and API sockets (nginx workers' group).
    #[arg(long, global = true, env = "SHORTLINKD_SOCKET_GROUP")]
    pub socket_group: Option<String>,
    /// Directory of click spool files from nginx (default <data_dir>/spool).
    #[arg(long, global = true, env = "SHORTLINKD_SPOOL_DIR")]
    pub spool_dir: Option<PathBuf>,
    /// Redirect status of links that set none (301, 302, 307, 308).
    #[arg(long, global = true, env = "SHORTLINKD_DEFAULT_REDIRECT")]
    pub default_redirect: Option<u16>,
    /// Lifetime in seconds of links created without an expiry.
    #[arg(long, global = true, env = "SHORTLINKD_DEFAULT_TTL")]
    pub default_ttl: Option<u64>,
    /// Longest target URL in bytes.
    #[arg(long, global = true, env = "SHORTLINKD_MAX_URL_LEN")]
    pub max_url_len: Option<usize>,
    /// Only accept targets on these domains (comma-separated).
    #[arg(
        long,
        global = true,
        env = "SHORTLINKD_ALLOW_HOSTS",
        value_delimiter = ','
    )]
    pub allow_hosts: Option<Vec<String>>,
    /// Refuse targets on these domains (comma-separated).
    #[arg(
        long,
        global = true,
        env = "SHORTLINKD_BLOCK_HOSTS",
        value_delimiter = ','
    )]
    pub block_hosts: Option<Vec<String>>,
    /// More aliases to refuse besides api, admin, metrics (comma-separated).
    #[arg(
        long,
        global = true,
        env = "SHORTLINKD_RESERVED_ALIASES",
        value_delimiter = ','
    )]
    pub reserved_aliases: Option<Vec<String>>,
    /// Log JSON lines.
    #[arg(long, global = true, env = "SHORTLINKD_LOG_JSON")]
    pub log_json: bool,
}

impl GlobalArgs {
    fn overrides(&self) -> Overrides {
        Overrides {
            data_dir: self.data_dir.clone(),
            key_file: self.key_file.clone(),
            ipc_socket: self.ipc_socket.clone(),
            api_socket: self.api_socket.clone(),
            api_listen: self.api_listen,
            base_url: self.base_url.clone(),
            min_length: self.min_length,
            segment_size: self.segment_size,
            socket_group: self.socket_group.clone(),
            spool_dir: self.spool_dir.clone(),
            default_redirect: self.default_redirect,
            default_ttl: self.default_ttl,
            max_url_len: self.max_url_len,
            allow_hosts: self.allow_hosts.clone(),
            block_hosts: self.block_hosts.clone(),
            reserved_aliases: self.reserved_aliases.clone(),
            log_json: self.log_json,
        }
    }

    /// The effective configuration.
    pub fn config(&self) -> Result<Config> {
        Ok(Config::load(self.config.as_deref(), &self.overrides())?)
    }
}

/// What to do.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Write a new deployment key file (mode 0600; never overwrites).
    Keygen {
        /// Where to write the key.
        path: PathBuf,
    },
    /// Run the daemon in the foreground.
    Serve,
    /// API keys.
    #[command(subcommand)]
    Key(KeyCommand),
    /// Short links.
    #[command(subcommand)]
    Link(LinkCommand),
    /// Apps that sign requests.
    #[command(subcommand)]
    App(AppCommand),
    /// Admin UI users.
    #[command(subcommand)]
    User(UserCommand),
    /// Click stats of a link (JSON).
    Stats {
        code: String,
        /// Range start: Unix seconds or RFC 3339.
        #[arg(long)]
        from: Option<String>,
        /// Range end: Unix seconds or RFC 3339.
        #[arg(long)]
        to: Option<String>,
        /// hour or day.
        #[arg(long, default_value = "hour")]
        granularity: String,
    },
    /// Create links from a CSV file (columns: url, alias, expires_at, tags).
    Import { file: PathBuf },
    /// Write every link to a CSV file.
    Export { file: PathBuf },
}

/// `key` subcommands.
#[derive(Debug, Subcommand)]
pub enum KeyCommand {
    /// Create a key; prints only the secret.
    Create {
        #[arg(long)]
        name: String,
        /// Comma-separated: links:write, links:read, stats:read, admin.
        #[arg(long, value_delimiter = ',', required = true)]
        scopes: Vec<String>,
    },
    /// List keys.
    List,
    /// Revoke a key by id.
    Revoke { id: i64 },
}

/// `link` subcommands.
#[derive(Debug, Subcommand)]
pub enum LinkCommand {
    /// Create a link; prints its short URL.
    Create {
        url: String,
        #[arg(long)]
        alias: Option<String>,
        /// Lifetime in seconds.
        #[arg(long)]
        ttl: Option<u64>,
        /// Expiry: Unix seconds or RFC 3339.
        #[arg(long)]
        expires_at: Option<String>,
        /// Tags (repeat or comma-separate).
        #[arg(long = "tag", value_delimiter = ',')]
        tags: Vec<String>,
        /// Reuse an existing live link with the same URL and options.
        #[arg(long)]
        dedupe: bool,
    },
    /// Show a link (JSON).
    Get { code: String },
    /// List links, newest first.
    List {
        #[arg(long, default_value_t = 50)]
        limit: u32,
        /// Substring of URL or alias.
        #[arg(long)]
        q: Option<String>,
        #[arg(long)]
        tag: Option<String>,
    },
    /// Delete a link.
    Delete { code: String },
}

/// `app` subcommands.
#[derive(Debug, Subcommand)]
pub enum AppCommand {
    /// Create an app; prints `app_id` and `secret` lines.
    Create {
        #[arg(long)]
        name: String,
        #[arg(long, value_delimiter = ',', required = true)]
        scopes: Vec<String>,
    },
    /// List apps.
    List,
    /// Revoke an app by app id or numeric id.
    Revoke { id: String },
}

/// `user` subcommands.
#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// Add a user; the password is read from stdin.
    Add {
        name: String,
        /// Read the password from stdin (the default; kept for scripts).
        #[arg(long)]
        password_stdin: bool,
    },
    /// Change a user's password (read from stdin).
    Passwd {
        name: String,
        #[arg(long)]
        password_stdin: bool,
    },
}

/// Entry point of the binary.
pub fn run() -> std::process::ExitCode {
    let cli = Cli::parse();
    match run_cli(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("shortlinkd: error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn init_logging(json: bool) {
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

fn run_cli(cli: Cli) -> Result<std::process::ExitCode> {
    if let Command::Keygen { path } = &cli.command {
        let key = shortlink_core::DeploymentKey::generate()?;
        key.write_new(path)
            .with_context(|| format!("cannot write the key file {}", path.display()))?;
        eprintln!(
            "wrote a new key to {} (fingerprint {})",
            path.display(),
            key.fingerprint()
        );
        return Ok(std::process::ExitCode::SUCCESS);
    }
    let config = cli.global.config()?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    if let Command::Serve = cli.command {
        init_logging(config.log_json);
        rt.block_on(serve(config))?;
        return Ok(std::process::ExitCode::SUCCESS);
    }
    if std::env::var_os("RUST_LOG").is_some() {
        init_logging(config.log_json);
    }
    rt.block_on(admin(config, cli.command))
}

async fn serve(config: Config) -> Result<()> {
    let key_path = config.key_path();
    let app = App::open(config.clone(), None)
        .with_context(|| format!("key file {}", key_path.display()))?;
    let listeners = server::bind(&config).await?;
    if let Some(addr) = listeners.tcp_addr() {
        tracing::info!(%addr, "HTTP API also on TCP");
    }
    server::run(app, listeners, server::shutdown_signal()).await?;
    Ok(())
}

/// Where admin commands send their requests.
enum Client {
    /// The running daemon's control socket.
    Daemon(PathBuf),
    /// No daemon: the API in this process, on the database directly.
    Direct(axum::Router, SharedApp),
}

impl Client {
    async fn connect(config: &Config) -> Result<Self> {
        let path = config.control_path();
        if tokio::net::UnixStream::connect(&path).await.is_ok() {
            return Ok(Client::Daemon(path));
        }
        let app = App::open(config.clone(), Some(16))
            .context("opening the database directly (no daemon is running)")?;
        let router = crate::api::control_router(app.clone());
        Ok(Client::Direct(router, app))
    }

    async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<(StatusCode, Value)> {
        let builder = Request::builder()
            .method(method)
            .uri(path)
            .header("host", "localhost");
        let req = match body {
            Some(b) => builder
                .header("content-type", "application/json")
                .body(Body::from(serde_json::to_vec(&b)?))?,
            None => builder.body(Body::empty())?,
        };
        let (status, bytes) = match self {
            Client::Direct(router, _) => {
                let resp = router.clone().oneshot(req).await?;
                let status = resp.status();
                (status, resp.into_body().collect().await?.to_bytes())
            }
            Client::Daemon(path) => {
                let stream = tokio::net::UnixStream::connect(path)
                    .await
                    .with_context(|| format!("connecting to {}", path.display()))?;
                let (mut sender, conn) =
                    hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                        .await?;
                tokio::spawn(conn);
                let resp = sender.send_request(req).await?;
                let status = resp.status();
                (status, resp.into_body().collect().await?.to_bytes())
            }
        };
        let value = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()))
        };
        Ok((status, value))
    }

    /// Sends one chunk of import rows as its own task (so the caller can
    /// read the next chunk meanwhile); resolves to the daemon's outcome.
    fn import_call(&self, rows: Vec<crate::links::ImportRow>) -> Result<ImportCall> {
        #[derive(serde::Serialize)]
        struct ImportBody {
            rows: Vec<crate::links::ImportRow>,
        }
        let body = serde_json::to_vec(&ImportBody { rows })?;
        let req = Request::builder()
            .method(Method::POST)
            .uri("/api/v1/import")
            .header("host", "localhost")
            .header("content-type", "application/json")
            .body(Body::from(body))?;
        let target = match self {
            Client::Direct(router, _) => Err(router.clone()),
            Client::Daemon(path) => Ok(path.clone()),
        };
        Ok(tokio::spawn(async move {
            let resp = match target {
                Err(router) => router.oneshot(req).await?,
                Ok(path) => {
                    let stream = tokio::net::UnixStream::connect(&path)
                        .await
                        .with_context(|| format!("connecting to {}", path.display()))?;
                    let (mut sender, conn) =
                        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                            .await?;
                    tokio::spawn(conn);
                    let resp = sender.send_request(req).await?;
                    let (parts, body) = resp.into_parts();
                    axum::http::Response::from_parts(parts, Body::new(body))
                }
            };
            let status = resp.status();
            let bytes = resp.into_body().collect().await?.to_bytes();
            if !status.is_success() {
                let value: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
                let msg = value["error"]["message"]
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| String::from_utf8_lossy(&bytes).into_owned());
                let code = value["error"]["code"].as_str().unwrap_or("error");
                bail!("{msg} ({code}, HTTP {})", status.as_u16());
            }
            serde_json::from_slice(&bytes).context("reading the import reply")
        }))
    }

    /// Like `call`, but a non-2xx status is an error with the API's message.
    async fn ok(&self, method: Method, path: &str, body: Option<Value>) -> Result<Value> {
        let (status, value) = self.call(method, path, body).await?;
        if !status.is_success() {
            let msg = value["error"]["message"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| value.to_string());
            let code = value["error"]["code"].as_str().unwrap_or("error");
            bail!("{msg} ({code}, HTTP {})", status.as_u16());
        }
        Ok(value)
    }

    async fn close(self) {
        if let Client::Direct(router, app) = self {
            drop(router);
            let store = app.store.clone();
            let _ = tokio::task::spawn_blocking(move || store.close()).await;
        }
    }
}

fn enc(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

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

async fn admin(config: Config, command: Command) -> Result<std::process::ExitCode> {
    let client = Client::connect(&config).await?;
    let result = admin_with(&client, command).await;
    client.close().await;
    result
}

async fn admin_with(client: &Client, command: Command) -> Result<std::process::ExitCode> {
    let out = &mut std::io::stdout().lock();
    match command {
        Command::Keygen { .. } | Command::Serve => unreachable!("handled before"),
        Command::Key(KeyCommand::Create { name, scopes }) => {
            let v = client
                .ok(
                    Method::POST,
                    "/api/v1/keys",
                    Some(json!({"name": name, "scopes": scopes})),
                )
                .await?;
            writeln!(
                out,
                "{}",
                v["secret"]
                    .as_str()
                    .ok_or_else(|| anyhow!("no secret in reply"))?
            )?;
        }
        Command::Key(KeyCommand::List) => {
            let v = client.ok(Method::GET, "/api/v1/keys", None).await?;
            writeln!(out, "ID\tNAME\tPREFIX\tSCOPES\tSTATUS")?;
            for k in v["keys"].as_array().into_iter().flatten() {
                writeln!(
                    out,
                    "{}\t{}\tslk_{}\t{}\t{}",
                    k["id"],
                    k["name"].as_str().unwrap_or(""),
                    k["prefix"].as_str().unwrap_or(""),
                    scopes_of(k),
                    status_of(k)
                )?;
            }
        }
        Command::Key(KeyCommand::Revoke { id }) => {
            client
                .ok(Method::DELETE, &format!("/api/v1/keys/{id}"), None)
                .await?;
            eprintln!("revoked key {id}");
        }
        Command::App(AppCommand::Create { name, scopes }) => {
            let v = client
                .ok(
                    Method::POST,
                    "/api/v1/apps",
                    Some(json!({"name": name, "scopes": scopes})),
                )
                .await?;
            writeln!(out, "app_id={}", v["app_id"].as_str().unwrap_or(""))?;
            writeln!(out, "secret={}", v["secret"].as_str().unwrap_or(""))?;
        }
        Command::App(AppCommand::List) => {
            let v = client.ok(Method::GET, "/api/v1/apps", None).await?;
            writeln!(out, "ID\tAPP_ID\tNAME\tSCOPES\tSTATUS")?;
            for a in v["apps"].as_array().into_iter().flatten() {
                writeln!(
                    out,
                    "{}\t{}\t{}\t{}\t{}",
                    a["id"],
                    a["app_id"].as_str().unwrap_or(""),
                    a["name"].as_str().unwrap_or(""),
                    scopes_of(a),
                    status_of(a)
                )?;
            }
        }
        Command::App(AppCommand::Revoke { id }) => {
            client
                .ok(Method::DELETE, &format!("/api/v1/apps/{}", enc(&id)), None)
                .await?;
            eprintln!("revoked app {id}");
        }
        Command::User(UserCommand::Add { name, .. }) => {
            let password = read_password(&name)?;
            client
                .ok(
                    Method::POST,
                    "/api/v1/users",
                    Some(json!({"name": name, "password": password})),
                )
                .await?;
            eprintln!("added user {name}");
        }
        Command::User(UserCommand::Passwd { name, .. }) => {
            let password = read_password(&name)?;
            client
                .ok(
                    Method::PUT,
                    &format!("/api/v1/users/{}/password", enc(&name)),
                    Some(json!({"password": password})),
                )
                .await?;
            eprintln!("changed the password of {name}");
        }
        Command::Link(LinkCommand::Create {
            url,
            alias,
            ttl,
            expires_at,
            tags,
            dedupe,
        }) => {
            let mut body = json!({"url": url});
            if let Some(a) = alias {
                body["alias"] = json!(a);
            }
            if let Some(t) = ttl {
                body["ttl"] = json!(t);
            }
            if let Some(e) = expires_at {
                body["expires_at"] = json!(e);
            }
            if !tags.is_empty() {
                body["tags"] = json!(tags);
            }
            if dedupe {
                body["dedupe"] = json!(true);
            }
            let v = client.ok(Method::POST, "/api/v1/links", Some(body)).await?;
            writeln!(out, "{}", v["short_url"].as_str().unwrap_or(""))?;
        }
        Command::Link(LinkCommand::Get { code }) => {
            let v = client
                .ok(Method::GET, &format!("/api/v1/links/{}", enc(&code)), None)
                .await?;
            writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
        }
        Command::Link(LinkCommand::List { limit, q, tag }) => {
            let mut path = format!("/api/v1/links?limit={limit}");
            if let Some(q) = q {
                path.push_str(&format!("&q={}", enc(&q)));
            }
            if let Some(t) = tag {
                path.push_str(&format!("&tag={}", enc(&t)));
            }
            let v = client.ok(Method::GET, &path, None).await?;
            writeln!(out, "CODE\tCLICKS\tSTATE\tURL")?;
            for l in v["links"].as_array().into_iter().flatten() {
                writeln!(
                    out,
                    "{}\t{}\t{}\t{}",
                    l["code"].as_str().unwrap_or(""),
                    l["clicks"],
                    l["state"].as_str().unwrap_or(""),
                    l["url"].as_str().unwrap_or("")
                )?;
            }
        }
        Command::Link(LinkCommand::Delete { code }) => {
            client
                .ok(
                    Method::DELETE,
                    &format!("/api/v1/links/{}", enc(&code)),
                    None,
                )
                .await?;
            eprintln!("deleted {code}");
        }
        Command::Stats {
            code,
            from,
            to,
            granularity,
        } => {
            let mut path = format!(
                "/api/v1/links/{}/stats?granularity={}",
                enc(&code),
                enc(&granularity)
            );
            if let Some(f) = from {
                path.push_str(&format!("&from={}", enc(&f)));
            }
            if let Some(t) = to {
                path.push_str(&format!("&to={}", enc(&t)));
            }
            let v = client.ok(Method::GET, &path, None).await?;
            writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
        }
        Command::Import { file } => return import(client, &file).await,
        Command::Export { file } => export(client, &file).await?,
    }
    Ok(std::process::ExitCode::SUCCESS)
}

/// Rows sent per import call: one transaction each in the daemon.
const IMPORT_CHUNK: usize = 20_000;
/// Import calls in flight: the next chunk is read and sent while the daemon
/// stores the previous one.
const IMPORT_IN_FLIGHT: usize = 2;

type ImportCall = tokio::task::JoinHandle<Result<crate::links::ImportOutcome>>;

async fn import(client: &Client, file: &Path) -> Result<std::process::ExitCode> {
    use crate::links::ImportRow;

    let f = std::fs::File::open(file).with_context(|| format!("cannot open {}", file.display()))?;
    let size = f.metadata().map(|m| m.len()).unwrap_or(0);
    let mut reader = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .flexible(true)
        .buffer_capacity(1 << 20)
        .from_reader(f);
    let headers = reader.headers()?.clone();
    let col = |names: &[&str]| {
        headers
            .iter()
            .position(|h| names.iter().any(|n| h.eq_ignore_ascii_case(n)))
    };
    let url_col = col(&["url"])
        .ok_or_else(|| anyhow!("{}: the header has no `url` column", file.display()))?;
    let alias_col = col(&["alias"]);
    let expiry_col = col(&["expires_at", "expiry", "expires"]);
    let tags_col = col(&["tags", "tag"]);

    let bar = indicatif::ProgressBar::new(size);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:40} {bytes}/{total_bytes} {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let (mut imported, mut bad) = (0usize, 0usize);
    let mut chunk: Vec<ImportRow> = Vec::with_capacity(IMPORT_CHUNK);
    let mut in_flight: std::collections::VecDeque<ImportCall> = Default::default();
    let mut record = csv::StringRecord::new();
    loop {
        let more = match reader.read_record(&mut record) {
            Ok(more) => more,
            Err(e) => {
                let line = e.position().map(|p| p.line()).unwrap_or(0);
                bar.suspend(|| eprintln!("line {line}: {e}"));
                bad += 1;
                if matches!(e.kind(), csv::ErrorKind::Io(_)) {
                    break;
                }
                continue;
            }
        };
        if more {
            let line = record.position().map(|p| p.line()).unwrap_or(0);
            let field = |c: Option<usize>| c.and_then(|c| record.get(c)).filter(|s| !s.is_empty());
            let Some(url) = field(Some(url_col)) else {
                bar.suspend(|| eprintln!("line {line}: url is empty"));
                bad += 1;
                continue;
            };
            let tags = field(tags_col).map(|t| {
                t.split([',', ';', '|'])
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect()
            });
            chunk.push(ImportRow(
                line,
                url.to_string(),
                field(alias_col).map(str::to_string),
                field(expiry_col).map(str::to_string),
                tags,
            ));
            if chunk.len() & 1023 == 0 {
                bar.set_position(record.position().map(|p| p.byte()).unwrap_or(0));
            }
        }
        if chunk.len() >= IMPORT_CHUNK || (!more && !chunk.is_empty()) {
            let rows = std::mem::replace(&mut chunk, Vec::with_capacity(IMPORT_CHUNK));
            if in_flight.len() >= IMPORT_IN_FLIGHT {
                let oldest = in_flight.pop_front().expect("one in flight");
                finish_import(oldest, &bar, &mut imported, &mut bad).await?;
            }
            in_flight.push_back(client.import_call(rows)?);
        }
        if !more {
            break;
        }
    }
    while let Some(call) = in_flight.pop_front() {
        finish_import(call, &bar, &mut imported, &mut bad).await?;
    }
    bar.finish_and_clear();
    eprintln!("imported {imported} links (0 already present), {bad} bad rows");
    Ok(if bad == 0 {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::from(2)
    })
}

/// Waits for one import call and reports its refused rows by line.
async fn finish_import(
    call: ImportCall,
    bar: &indicatif::ProgressBar,
    imported: &mut usize,
    bad: &mut usize,
) -> Result<()> {
    let outcome = call.await.context("import call")??;
    *imported += outcome.imported;
    *bad += outcome.errors.len();
    for e in &outcome.errors {
        let field = e
            .field
            .as_deref()
            .map(|f| format!("{f}: "))
            .unwrap_or_default();
        bar.suspend(|| eprintln!("line {}: {field}{}", e.line, e.message));
    }
    bar.set_message(format!("{imported} imported, {bad} bad"));
    Ok(())
}

async fn export(client: &Client, file: &Path) -> Result<()> {
    let mut w = csv::Writer::from_path(file)
        .with_context(|| format!("cannot create {}", file.display()))?;
    w.write_record([
        "code",
        "url",
        "alias",
        "expires_at",
        "tags",
        "clicks",
        "created_at",
    ])?;
    let mut cursor: Option<String> = None;
    let mut n = 0usize;
    loop {
        let mut path = "/api/v1/links?limit=1000".to_string();
        if let Some(c) = &cursor {
            path.push_str(&format!("&cursor={}", enc(c)));
        }
        let v = client.ok(Method::GET, &path, None).await?;
        for l in v["links"].as_array().into_iter().flatten() {
            let rfc = |t: &Value| {
                t.as_i64()
                    .and_then(|t| time::OffsetDateTime::from_unix_timestamp(t).ok())
                    .and_then(|t| {
                        t.format(&time::format_description::well_known::Rfc3339)
                            .ok()
                    })
                    .unwrap_or_default()
            };
            let tags: Vec<&str> = l["tags"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            w.write_record([
                l["generated_code"].as_str().unwrap_or(""),
                l["url"].as_str().unwrap_or(""),
                l["alias"].as_str().unwrap_or(""),
                &rfc(&l["expires_at"]),
                &tags.join(","),
                &l["clicks"].to_string(),
                &rfc(&l["created_at"]),
            ])?;
            n += 1;
        }
        cursor = v["next_cursor"].as_str().map(str::to_string);
        if cursor.is_none() {
            break;
        }
    }
    w.flush()?;
    eprintln!("exported {n} links to {}", file.display());
    Ok(())
}

/// A key's or app's scopes, comma-separated, for the list commands.
fn scopes_of(credential: &Value) -> String {
    let scopes: Vec<&str> = credential["scopes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    scopes.join(",")
}

/// `active` or `revoked`, for the list commands.
fn status_of(credential: &Value) -> &'static str {
    if credential["revoked_at"].is_null() {
        "active"
    } else {
        "revoked"
    }
}
