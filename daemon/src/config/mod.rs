//! Daemon configuration: one TOML file, every setting overridable by the
//! environment (`SHORTLINKD_*`) and by command-line flags.
//!
//! Each setting is declared once, as a field of [`Config`]: its doc comment
//! is the flag's help, its `#[arg]` the flag and environment variable (or
//! `skip` for the few that are file-only), its name the file key, and
//! [`Config::default`] its default. Serde reads the file into a `Config`
//! (absent keys keep the default); clap reads the flags and the environment,
//! and lays only what was given over it ([`Config::load`]; the flags are
//! placed on the command line by `cli::settings`). A well-kept
//! layering crate (figment) was weighed: it would read the environment a
//! second time beside clap, need a key map for `SHORTLINKD_MAX_URL_LEN` →
//! `targets.max_len` and a list parser for the comma-separated variables,
//! and still need a clap struct for the flags; clap's own update-from-matches
//! does the layering with none of that.
//!
//! Precedence: flags > environment > file > defaults.

mod checker;
mod database;
mod recycling;
mod targets;
mod url_text;
mod webhooks;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use clap::parser::ValueSource;
use clap::{ArgMatches, FromArgMatches};
use serde::{Deserialize, Serialize};

pub use checker::CheckerConfig;
pub use database::{session_attrs, DatabaseHost, DatabaseServer, DatabaseUrl, SslMode};
pub use recycling::{RecyclingConfig, MIN_GRACE_DAYS};
pub use targets::Targets;
pub use webhooks::WebhookConfig;

/// Names no alias may take because operators route them elsewhere.
pub const BUILTIN_RESERVED: &[&str] = &["api", "admin", "metrics"];

/// Why the configuration could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read config file {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// The file is not valid TOML or has unknown or mistyped settings.
    #[error("config file {path}: {message}")]
    Parse {
        /// The file.
        path: String,
        /// The parser's message, naming the key.
        message: String,
    },
    /// The file holds a database password, and users other than its owner
    /// can read it.
    #[error(
        "config file {path} holds a password in its `database` URL but other users can read \
         it (mode {mode:o}): chmod 640 {path} (or 600), or put the password in a file named by \
         database_password_file and take it out of the URL"
    )]
    PasswordReadable {
        /// The file.
        path: String,
        /// Its permission bits.
        mode: u32,
    },
    /// A flag or environment value could not be laid over the file.
    #[error("{0}")]
    Args(#[from] clap::Error),
    /// A value is out of range.
    #[error("invalid setting `{field}`: {message}")]
    Invalid {
        /// The setting's file key.
        field: &'static str,
        /// What is wrong with it.
        message: String,
    },
}

/// Everything `shortlinkd serve` and the CLI need to know: the one
/// declaration of every setting (file key = field name). Build it with
/// [`Config::load`] or [`Config::from_file`]; its clap derive is meant for
/// `Config::augment_args_for_update` and `update_from_arg_matches` only
/// (see `cli::settings`).
#[derive(Debug, Clone, Serialize, Deserialize, clap::Args)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Directory of the database, sockets and spool.
    #[arg(long, env = "SHORTLINKD_DATA_DIR")]
    pub data_dir: PathBuf,
    /// PostgreSQL database shared by several nodes, as
    /// postgres://USER@HOST:PORT/DB (the password goes in
    /// --database-password-file); none: SQLite under data_dir.
    #[arg(long, env = "SHORTLINKD_DATABASE", value_parser = database::DatabaseUrlParser)]
    pub database: Option<DatabaseUrl>,
    /// File holding the PostgreSQL password (first line).
    #[arg(long, env = "SHORTLINKD_DATABASE_PASSWORD_FILE")]
    pub database_password_file: Option<PathBuf>,
    /// Wake the other nodes with `LISTEN`/`NOTIFY` (default true); off for
    /// PostgreSQL-compatible engines without it: changes then travel by
    /// the change log's poll alone (every second).
    #[arg(
        long,
        env = "SHORTLINKD_DATABASE_NOTIFY",
        action = clap::ArgAction::Set,
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "true"
    )]
    pub database_notify: bool,
    /// Seconds to connect to PostgreSQL (per listed server), to wait for a
    /// pooled connection or a lock, and to check that a pooled connection
    /// still answers: a hung server is met with a 503 within a few times
    /// this long, not a hung request.
    #[arg(long, env = "SHORTLINKD_DATABASE_TIMEOUT")]
    pub database_timeout: u64,
    /// Seconds PostgreSQL lets one statement run (`statement_timeout`)
    /// before cancelling it (migrations excepted).
    #[arg(long, env = "SHORTLINKD_DATABASE_STATEMENT_TIMEOUT")]
    pub database_statement_timeout: u64,
    /// Milliseconds the database may take over what an nginx worker asks
    /// (a lookup miss, a password check's link, a visit lease) before the
    /// worker is told the link is unavailable (503); keep it below nginx's
    /// `shortlink_timeout` (default 500 ms), so a slow database fails the
    /// request, not the worker's link to a healthy daemon.
    #[arg(long, env = "SHORTLINKD_EDGE_TIMEOUT_MS")]
    pub edge_timeout_ms: u64,
    /// Deployment key file shared with nginx (default <data_dir>/key).
    #[arg(long, env = "SHORTLINKD_KEY_FILE")]
    pub key_file: Option<PathBuf>,
    /// IPC socket for nginx workers (default <data_dir>/ipc.sock).
    #[arg(long, env = "SHORTLINKD_IPC_SOCKET")]
    pub ipc_socket: Option<PathBuf>,
    /// HTTP API socket (default <data_dir>/api.sock).
    #[arg(long, env = "SHORTLINKD_API_SOCKET")]
    pub api_socket: Option<PathBuf>,
    /// Also serve the HTTP API on this loopback TCP address.
    #[arg(long, env = "SHORTLINKD_API_LISTEN")]
    pub api_listen: Option<SocketAddr>,
    /// Group owning the IPC and API sockets (nginx workers' group).
    #[arg(long, env = "SHORTLINKD_SOCKET_GROUP")]
    pub socket_group: Option<String>,
    /// Short-URL base when nginx sends no X-Shortlink-Base.
    #[arg(long, env = "SHORTLINKD_BASE_URL")]
    pub base_url: String,
    /// Shortest generated code, check character included (2-12).
    #[arg(long, env = "SHORTLINKD_MIN_LENGTH")]
    pub min_length: usize,
    /// Longest generated code, check character included (min_length-12):
    /// once every code up to it is handed out, creates are refused instead
    /// of growing longer codes (for SMS and printed links).
    #[arg(long, env = "SHORTLINKD_MAX_LENGTH")]
    pub max_length: usize,
    /// Ids leased from the database at a time.
    #[arg(long, env = "SHORTLINKD_SEGMENT_SIZE")]
    pub segment_size: u64,
    /// Directory of click spool files from nginx (default <data_dir>/spool).
    #[arg(long, env = "SHORTLINKD_SPOOL_DIR")]
    pub spool_dir: Option<PathBuf>,
    /// Redirect status of links that set none (301, 302, 307, 308).
    #[arg(long, env = "SHORTLINKD_DEFAULT_REDIRECT")]
    pub default_redirect: Option<u16>,
    /// Lifetime in seconds of links created without an expiry.
    #[arg(long, env = "SHORTLINKD_DEFAULT_TTL")]
    pub default_ttl: Option<u64>,
    /// What target URLs are accepted (the `[targets]` table).
    #[command(flatten)]
    pub targets: Targets,
    /// The background checker of link targets (the `[checker]` table).
    #[command(flatten)]
    pub checker: CheckerConfig,
    /// Reuse of expired and deleted links' ids (the `[recycling]` table).
    #[command(flatten)]
    pub recycling: RecyclingConfig,
    /// How webhook deliveries are sent and retried (the `[webhooks]` table).
    #[command(flatten)]
    pub webhooks: WebhookConfig,
    /// A file of unsafe hosts (one per line, a hosts file, Adblock `||host^`
    /// rules or URLs: the formats of public phishing and malware feeds),
    /// read again whenever it changes; the links it lists are flagged.
    #[arg(long, env = "SHORTLINKD_BLOCKLIST_FILE")]
    pub blocklist_file: Option<PathBuf>,
    /// Also switch off the links the blocklist lists, and refuse new ones
    /// (default false: flag them only).
    #[arg(
        long,
        env = "SHORTLINKD_BLOCKLIST_DISABLE",
        action = clap::ArgAction::Set,
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "true"
    )]
    pub blocklist_disable: bool,
    /// More aliases to refuse besides api, admin, metrics (comma-separated).
    #[arg(long, env = "SHORTLINKD_RESERVED_ALIASES", value_delimiter = ',')]
    pub reserved_aliases: Vec<String>,
    /// Browser origins allowed to call the API (CORS), such as
    /// https://app.example.com (comma-separated); none: CORS off.
    #[arg(long, env = "SHORTLINKD_CORS_ORIGINS", value_delimiter = ',')]
    pub cors_origins: Vec<String>,
    /// Log JSON lines.
    // A value that can be absent, unlike a plain switch (whose implied
    // `false` would always override the file).
    #[arg(
        long,
        env = "SHORTLINKD_LOG_JSON",
        action = clap::ArgAction::Set,
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "true"
    )]
    pub log_json: bool,
    /// Segments kept in memory (the current one plus spares).
    #[arg(skip)]
    pub segments_in_memory: usize,
    /// Seconds between spool directory scans.
    #[arg(skip)]
    pub spool_interval: u64,
    /// Links kept in the in-memory cache.
    #[arg(skip)]
    pub cache_size: usize,
    /// Reader threads (parallel SQLite read connections).
    #[arg(skip)]
    pub readers: usize,
    /// Seconds a signed request's timestamp may differ from the daemon clock.
    #[arg(skip)]
    pub signature_window: i64,
    /// Days a click batch id is remembered for deduplication.
    #[arg(skip)]
    pub batch_retention_days: u64,
    /// Require an API key for `/metrics` (default true).
    #[arg(skip)]
    pub metrics_auth: bool,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            data_dir: PathBuf::from("/var/lib/shortlinkd"),
            database: None,
            database_password_file: None,
            database_notify: true,
            database_timeout: 5,
            database_statement_timeout: 30,
            edge_timeout_ms: 400,
            key_file: None,
            ipc_socket: None,
            api_socket: None,
            api_listen: None,
            socket_group: None,
            base_url: "http://localhost".into(),
            min_length: 6,
            max_length: shortlink_core::MAX_CODE_LEN,
            segment_size: 1000,
            spool_dir: None,
            default_redirect: None,
            default_ttl: None,
            targets: Targets::default(),
            checker: CheckerConfig::default(),
            recycling: RecyclingConfig::default(),
            webhooks: WebhookConfig::default(),
            blocklist_file: None,
            blocklist_disable: false,
            reserved_aliases: Vec::new(),
            cors_origins: Vec::new(),
            log_json: false,
            segments_in_memory: 2,
            spool_interval: 5,
            cache_size: 100_000,
            readers: 4,
            signature_window: 60,
            batch_retention_days: 7,
            metrics_auth: true,
        }
    }
}

impl Config {
    /// Reads `path` (if any), lays the settings `given` on the command line
    /// or in the environment over it and checks the result.
    pub fn load(path: Option<&Path>, given: &ArgMatches) -> Result<Self, ConfigError> {
        let mut config = match path {
            Some(path) => Self::from_file(path)?,
            None => Self::default(),
        };
        config.update_from_arg_matches(given)?;
        let from_command_line = given.value_source("database") == Some(ValueSource::CommandLine);
        if from_command_line
            && config
                .database
                .as_ref()
                .is_some_and(|d| d.password.is_some())
        {
            return Err(ConfigError::Invalid {
                field: "database",
                message: "the URL given with --database holds a password, and a command line \
                          is visible to every local user (/proc/PID/cmdline): put the password \
                          in a file named by --database-password-file"
                    .into(),
            });
        }
        config.validate()?;
        Ok(config)
    }

    /// Parses a TOML file (absent keys keep their defaults).
    pub fn from_file(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.display().to_string(),
            source,
        })?;
        // The parser's message quotes the line: a `database` URL in it
        // would show its password.
        let config: Self = toml::from_str(&text).map_err(|e| ConfigError::Parse {
            path: path.display().to_string(),
            message: url_text::redact_urls_in(&e.to_string()),
        })?;
        if config
            .database
            .as_ref()
            .is_some_and(|d| d.password.is_some())
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(path)
                .map_err(|source| ConfigError::Read {
                    path: path.display().to_string(),
                    source,
                })?
                .permissions()
                .mode()
                & 0o777;
            if open_to_others(mode) {
                return Err(ConfigError::PasswordReadable {
                    path: path.display().to_string(),
                    mode,
                });
            }
        }
        Ok(config)
    }

    /// Range checks, so a bad value stops the daemon at start with its name.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |field, message: String| Err(ConfigError::Invalid { field, message });
        if !(shortlink_core::MIN_CODE_LEN..=shortlink_core::MAX_CODE_LEN).contains(&self.min_length)
        {
            return invalid(
                "min_length",
                format!(
                    "{} is outside {}..={}",
                    self.min_length,
                    shortlink_core::MIN_CODE_LEN,
                    shortlink_core::MAX_CODE_LEN
                ),
            );
        }
        if !(self.min_length..=shortlink_core::MAX_CODE_LEN).contains(&self.max_length) {
            return invalid(
                "max_length",
                format!(
                    "{} is outside min_length..={} ({}..={})",
                    self.max_length,
                    shortlink_core::MAX_CODE_LEN,
                    self.min_length,
                    shortlink_core::MAX_CODE_LEN
                ),
            );
        }
        if self.segment_size == 0 || self.segment_size > 1_000_000 {
            return invalid(
                "segment_size",
                format!("{} is outside 1..=1000000", self.segment_size),
            );
        }
        if self.segments_in_memory == 0 || self.segments_in_memory > 16 {
            return invalid(
                "segments_in_memory",
                format!("{} is outside 1..=16", self.segments_in_memory),
            );
        }
        if let Some(status) = self.default_redirect {
            if let Err(e) = shortlink_core::RedirectStatus::try_from(status) {
                return invalid("default_redirect", e.to_string());
            }
        }
        if let Err(e) = crate::base_url::parse_base(&self.base_url) {
            return invalid("base_url", e);
        }
        if self.readers == 0 || self.readers > 64 {
            return invalid("readers", format!("{} is outside 1..=64", self.readers));
        }
        if self.cache_size == 0 {
            return invalid("cache_size", "must be at least 1".into());
        }
        if !(1..=3600).contains(&self.database_timeout) {
            return invalid(
                "database_timeout",
                format!("{} is outside 1..=3600 seconds", self.database_timeout),
            );
        }
        if !(1..=86_400).contains(&self.database_statement_timeout) {
            return invalid(
                "database_statement_timeout",
                format!(
                    "{} is outside 1..=86400 seconds",
                    self.database_statement_timeout
                ),
            );
        }
        if !(10..=60_000).contains(&self.edge_timeout_ms) {
            return invalid(
                "edge_timeout_ms",
                format!(
                    "{} is outside 10..=60000 milliseconds",
                    self.edge_timeout_ms
                ),
            );
        }
        if self.spool_interval == 0 {
            return invalid("spool_interval", "must be at least 1 second".into());
        }
        if self.signature_window <= 0 {
            return invalid("signature_window", "must be positive".into());
        }
        if let Some((field, message)) = self.checker.invalid() {
            return invalid(field, message);
        }
        if let Some((field, message)) = self.recycling.invalid() {
            return invalid(field, message);
        }
        if let Some((field, message)) = self.webhooks.invalid() {
            return invalid(field, message);
        }
        if self.targets.max_len == 0 {
            return invalid("targets.max_len", "must be positive".into());
        }
        if let Some(bad) = self.cors_origins.iter().find(|o| !is_origin(o)) {
            return invalid(
                "cors_origins",
                format!("\"{bad}\" is not an origin such as https://app.example.com (scheme, host and port only)"),
            );
        }
        Ok(())
    }

    /// Path of the key file.
    pub fn key_path(&self) -> PathBuf {
        self.key_file
            .clone()
            .unwrap_or_else(|| self.data_dir.join("key"))
    }

    /// Path of the IPC socket.
    pub fn ipc_path(&self) -> PathBuf {
        self.ipc_socket
            .clone()
            .unwrap_or_else(|| self.data_dir.join("ipc.sock"))
    }

    /// Path of the HTTP API socket.
    pub fn api_path(&self) -> PathBuf {
        self.api_socket
            .clone()
            .unwrap_or_else(|| self.data_dir.join("api.sock"))
    }

    /// Path of the owner-only control socket the CLI talks to.
    pub fn control_path(&self) -> PathBuf {
        self.data_dir.join("control.sock")
    }

    /// Path of the SQLite database.
    pub fn db_path(&self) -> PathBuf {
        self.data_dir.join("shortlink.db")
    }

    /// Directory scanned for click spool files.
    pub fn spool_path(&self) -> PathBuf {
        self.spool_dir
            .clone()
            .unwrap_or_else(|| self.data_dir.join("spool"))
    }

    /// Every alias that is refused by name.
    pub fn reserved(&self) -> Vec<String> {
        BUILTIN_RESERVED
            .iter()
            .map(|s| s.to_string())
            .chain(self.reserved_aliases.iter().cloned())
            .collect()
    }
}

/// Whether `text` is a browser origin exactly as browsers send it in
/// `Origin`: scheme, host and optional port, no path or trailing slash.
fn is_origin(text: &str) -> bool {
    url::Url::parse(text).is_ok_and(|u| {
        matches!(u.scheme(), "http" | "https") && u.origin().ascii_serialization() == text
    })
}

/// Whether a file holding a secret (a config file with a database
/// password, the password file) is open to users outside its owner and
/// group: the one rule for both. The group may read it (`root:shortlinkd
/// 0640`, the daemon reading through its group, is the usual layout).
pub fn open_to_others(mode: u32) -> bool {
    mode & 0o007 != 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{Args, Command};
    use std::os::unix::fs::PermissionsExt;

    /// What clap matches for these flags (and the test's environment).
    fn given(flags: &[&str]) -> ArgMatches {
        Config::augment_args_for_update(Command::new("t"))
            .try_get_matches_from(std::iter::once("t").chain(flags.iter().copied()))
            .unwrap()
    }

    #[test]
    fn file_then_overrides() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(
            &path,
            "data_dir = \"/srv/sl\"\nmin_length = 7\nbase_url = \"https://s.example.com\"\n\
             [targets]\nblock_hosts = [\"evil.example\"]\n",
        )
        .unwrap();
        let config = Config::load(Some(&path), &given(&["--min-length", "8"])).unwrap();
        assert_eq!(config.data_dir, PathBuf::from("/srv/sl"));
        assert_eq!(config.min_length, 8);
        assert_eq!(config.base_url, "https://s.example.com");
        assert_eq!(config.targets.block_hosts, vec!["evil.example".to_string()]);
        assert_eq!(config.ipc_path(), PathBuf::from("/srv/sl/ipc.sock"));
    }

    #[test]
    fn example_config_parses() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../conf/shortlinkd.toml");
        let config = Config::load(Some(&path), &given(&[])).unwrap();
        assert_eq!(config.reserved_aliases, vec!["static", "login"]);
        assert_eq!(config.targets.block_hosts, vec!["evil.example"]);
        // The commented-out PostgreSQL example is a URL the daemon takes.
        let text = std::fs::read_to_string(&path).unwrap();
        let example = text
            .lines()
            .find_map(|l| l.strip_prefix("# database = \""))
            .and_then(|l| l.strip_suffix('"'))
            .expect("an example database URL");
        let url = DatabaseUrl::parse(example).unwrap();
        assert_eq!(url.ssl_mode(), SslMode::VerifyFull);
    }

    #[test]
    fn cors_origins_from_file_and_flags_must_be_origins() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(&path, "cors_origins = [\"https://app.example\"]\n").unwrap();
        let config = Config::load(Some(&path), &given(&[])).unwrap();
        assert_eq!(config.cors_origins, vec!["https://app.example"]);
        let flags = ["--cors-origins=http://localhost:3000,https://b.example"];
        let config = Config::load(Some(&path), &given(&flags)).unwrap();
        assert_eq!(
            config.cors_origins,
            vec!["http://localhost:3000", "https://b.example"]
        );
        assert!(
            Config::default().cors_origins.is_empty(),
            "CORS is off by default"
        );
        for bad in [
            "https://app.example/",
            "app.example",
            "https://a.example/x",
            "*",
        ] {
            let err = Config::load(None, &given(&["--cors-origins", bad]))
                .unwrap_err()
                .to_string();
            assert!(err.contains("cors_origins") && err.contains(bad), "{err}");
        }
    }

    #[test]
    fn unknown_and_bad_settings_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(&path, "min_lenght = 7\n").unwrap();
        let err = Config::load(Some(&path), &given(&[]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("min_lenght"), "{err}");
        std::fs::write(&path, "min_length = 40\n").unwrap();
        let err = Config::load(Some(&path), &given(&[]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("min_length"), "{err}");
        std::fs::write(&path, "default_redirect = 304\n").unwrap();
        let err = Config::load(Some(&path), &given(&[]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("default_redirect"), "{err}");
    }

    #[test]
    fn database_from_file_environment_or_flag_without_a_password_on_the_command_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        assert!(Config::load(None, &given(&[])).unwrap().database.is_none());
        std::fs::write(
            &path,
            "database = \"postgres://sl:filepw@db1:5433/links\"\n\
             database_password_file = \"/etc/sl/pw\"\n",
        )
        .unwrap();
        let err = Config::load(Some(&path), &given(&[]))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(&path.display().to_string())
                && err.contains("chmod 640")
                && err.contains("database_password_file")
                && !err.contains("filepw"),
            "{err}"
        );
        // Its group may read it (root:shortlinkd 0640), nobody else.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o604)).unwrap();
        assert!(Config::load(Some(&path), &given(&[])).is_err());
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        let config = Config::load(Some(&path), &given(&[])).unwrap();
        let db = config.database.unwrap();
        assert_eq!(
            (db.user.as_str(), db.servers[0].port, db.dbname.as_str()),
            ("sl", 5433, "links")
        );
        assert_eq!(db.password.as_deref(), Some("filepw"), "a file may hold it");
        assert_eq!(
            config.database_password_file,
            Some(PathBuf::from("/etc/sl/pw"))
        );
        let flags = ["--database", "postgres://sl@db2/other"];
        let config = Config::load(Some(&path), &given(&flags)).unwrap();
        assert_eq!(config.database.unwrap().dbname, "other");
        let flags = ["--database=postgres://sl:cmdpw@db2/other"];
        let err = Config::load(None, &given(&flags)).unwrap_err().to_string();
        assert!(
            err.contains("database") && err.contains("--database-password-file"),
            "{err}"
        );
        assert!(!err.contains("cmdpw"), "{err}");
        let err = Config::augment_args_for_update(Command::new("t"))
            .try_get_matches_from(["t", "--database", "postgres://sl@db2"])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("--database") && err.contains("one database name"),
            "{err}"
        );
        let err = Config::augment_args_for_update(Command::new("t"))
            .try_get_matches_from(["t", "--database", "postgres://sl:cmdpw@db2"])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("one database name") && !err.contains("cmdpw"),
            "{err}"
        );
        std::fs::write(&path, "database = \"mysql://sl@db1/links\"\n").unwrap();
        let err = Config::load(Some(&path), &given(&[]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("database") && err.contains("mysql"), "{err}");
        // A TOML error quotes the line; the password in it is hidden.
        for line in [
            "database = \"postgres://sl:s3cret@db1/links?pool=3\"\n",
            "database = \"postgres://sl@db1/links?password=s3cret&pool=3\"\n",
            "database = \"postgres://sl:s3cret@db1/links\" x\n",
            "database = \"mysql://sl:s3cret@db1/links\"\n",
        ] {
            std::fs::write(&path, line).unwrap();
            let err = Config::load(Some(&path), &given(&[]))
                .unwrap_err()
                .to_string();
            assert!(err.contains("***") && !err.contains("s3cret"), "{err}");
        }
    }

    #[test]
    fn flags_reach_nested_and_list_settings() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(
            &path,
            "log_json = true\nreserved_aliases = [\"x\"]\n[targets]\nmax_len = 100\n",
        )
        .unwrap();
        let config = Config::load(Some(&path), &given(&[])).unwrap();
        assert!(
            config.log_json,
            "an absent --log-json keeps the file's value"
        );
        assert_eq!(config.targets.max_len, 100);
        let config = Config::load(
            Some(&path),
            &given(&[
                "--max-url-len",
                "300",
                "--allow-hosts",
                "a.example,b.example",
                "--reserved-aliases=y,z",
                "--log-json=false",
            ]),
        )
        .unwrap();
        assert_eq!(config.targets.max_len, 300);
        assert_eq!(config.targets.allow_hosts, vec!["a.example", "b.example"]);
        assert_eq!(config.targets.schemes, vec!["http", "https"]);
        assert_eq!(config.reserved_aliases, vec!["y", "z"]);
        assert!(!config.log_json);
        let config = Config::load(None, &given(&["--log-json"])).unwrap();
        assert!(config.log_json);
        let err = Config::load(None, &given(&["--segment-size", "0"]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("segment_size"), "{err}");
    }

    #[test]
    fn edge_timeout_defaults_below_nginx_and_is_range_checked() {
        let config = Config::load(None, &given(&[])).unwrap();
        assert_eq!(config.edge_timeout_ms, 400, "below shortlink_timeout 500ms");
        let config = Config::load(None, &given(&["--edge-timeout-ms", "250"])).unwrap();
        assert_eq!(config.edge_timeout_ms, 250);
        for bad in ["0", "9", "60001"] {
            let err = Config::load(None, &given(&["--edge-timeout-ms", bad]))
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("edge_timeout_ms") && err.contains(bad),
                "{err}"
            );
        }
    }
}
