//! Daemon configuration: one TOML file, every setting overridable by the
//! environment (`SHORTLINKD_*`) and by command-line flags.
//!
//! Precedence is flags > environment > file > defaults. Clap reads both the
//! flag and its environment variable (see `cli.rs`), so this module only has
//! to lay [`Overrides`] over the file.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use shortlink_core::TargetRules;

/// Names no alias may take because operators route them elsewhere.
pub const BUILTIN_RESERVED: &[&str] = &["api", "admin", "metrics"];

/// Why the configuration could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// The file is not valid TOML or has unknown or mistyped settings.
    #[error("config file {path}: {message}")]
    Parse { path: String, message: String },
    /// A value is out of range.
    #[error("invalid setting `{field}`: {message}")]
    Invalid {
        field: &'static str,
        message: String,
    },
}

/// Everything `shortlinkd serve` and the CLI need to know.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Holds the database, the default sockets and the spool directory.
    pub data_dir: PathBuf,
    /// Deployment key shared with the nginx module; default `<data_dir>/key`.
    pub key_file: Option<PathBuf>,
    /// Socket the nginx workers connect to; default `<data_dir>/ipc.sock`.
    pub ipc_socket: Option<PathBuf>,
    /// HTTP API socket nginx proxies to; default `<data_dir>/api.sock`.
    pub api_socket: Option<PathBuf>,
    /// Optional loopback TCP address for the HTTP API as well.
    pub api_listen: Option<SocketAddr>,
    /// Group that owns the IPC and API sockets (the nginx workers' group).
    pub socket_group: Option<String>,
    /// Short-URL base when the request has no valid `X-Shortlink-Base`.
    pub base_url: String,
    /// Shortest generated code, check character included (2 to 12).
    pub min_length: usize,
    /// Ids leased from the database at a time.
    pub segment_size: u64,
    /// Segments kept in memory (the current one plus spares).
    pub segments_in_memory: usize,
    /// Redirect status for links that set none; `None` leaves it to nginx.
    pub default_redirect: Option<u16>,
    /// Lifetime in seconds of links created without an expiry; `None`: forever.
    pub default_ttl: Option<u64>,
    /// What target URLs are accepted.
    pub targets: TargetRules,
    /// Aliases refused in addition to `api`, `admin` and `metrics`.
    pub reserved_aliases: Vec<String>,
    /// Where nginx workers drop click batches they could not deliver.
    pub spool_dir: Option<PathBuf>,
    /// Seconds between spool directory scans.
    pub spool_interval: u64,
    /// Links kept in the in-memory cache.
    pub cache_size: usize,
    /// Reader threads (parallel SQLite read connections).
    pub readers: usize,
    /// Seconds a signed request's timestamp may differ from the daemon clock.
    pub signature_window: i64,
    /// Days a click batch id is remembered for deduplication.
    pub batch_retention_days: u64,
    /// Require an API key for `/metrics` (default true).
    pub metrics_auth: bool,
    /// JSON log lines instead of the human format.
    pub log_json: bool,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            data_dir: PathBuf::from("/var/lib/shortlinkd"),
            key_file: None,
            ipc_socket: None,
            api_socket: None,
            api_listen: None,
            socket_group: None,
            base_url: "http://localhost".into(),
            min_length: 6,
            segment_size: 1000,
            segments_in_memory: 2,
            default_redirect: None,
            default_ttl: None,
            targets: TargetRules::default(),
            reserved_aliases: Vec::new(),
            spool_dir: None,
            spool_interval: 5,
            cache_size: 100_000,
            readers: 4,
            signature_window: 60,
            batch_retention_days: 7,
            metrics_auth: true,
            log_json: false,
        }
    }
}

/// Values given on the command line or in the environment; `None` keeps the
/// file's value.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub data_dir: Option<PathBuf>,
    pub key_file: Option<PathBuf>,
    pub ipc_socket: Option<PathBuf>,
    pub api_socket: Option<PathBuf>,
    pub api_listen: Option<SocketAddr>,
    pub base_url: Option<String>,
    pub min_length: Option<usize>,
    pub segment_size: Option<u64>,
    pub socket_group: Option<String>,
    pub spool_dir: Option<PathBuf>,
    pub default_redirect: Option<u16>,
    pub default_ttl: Option<u64>,
    pub max_url_len: Option<usize>,
    pub allow_hosts: Option<Vec<String>>,
    pub block_hosts: Option<Vec<String>>,
    pub reserved_aliases: Option<Vec<String>>,
    pub log_json: bool,
}

impl Config {
    /// Reads `path` (if any), lays `overrides` over it and checks the result.
    pub fn load(path: Option<&Path>, overrides: &Overrides) -> Result<Self, ConfigError> {
        let mut config = match path {
            Some(path) => Self::from_file(path)?,
            None => Self::default(),
        };
        config.apply(overrides);
        config.validate()?;
        Ok(config)
    }

    /// Parses a TOML file.
    pub fn from_file(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.display().to_string(),
            source,
        })?;
        toml::from_str(&text).map_err(|e| ConfigError::Parse {
            path: path.display().to_string(),
            message: e.to_string(),
        })
    }

    fn apply(&mut self, o: &Overrides) {
        fn set<T: Clone>(slot: &mut T, v: &Option<T>) {
            if let Some(v) = v {
                *slot = v.clone();
            }
        }
        fn set_opt<T: Clone>(slot: &mut Option<T>, v: &Option<T>) {
            if v.is_some() {
                *slot = v.clone();
            }
        }
        set(&mut self.data_dir, &o.data_dir);
        set_opt(&mut self.key_file, &o.key_file);
        set_opt(&mut self.ipc_socket, &o.ipc_socket);
        set_opt(&mut self.api_socket, &o.api_socket);
        set_opt(&mut self.api_listen, &o.api_listen);
        set(&mut self.base_url, &o.base_url);
        set(&mut self.min_length, &o.min_length);
        set(&mut self.segment_size, &o.segment_size);
        set_opt(&mut self.socket_group, &o.socket_group);
        set_opt(&mut self.spool_dir, &o.spool_dir);
        set_opt(&mut self.default_redirect, &o.default_redirect);
        set_opt(&mut self.default_ttl, &o.default_ttl);
        set(&mut self.targets.max_len, &o.max_url_len);
        set(&mut self.targets.allow_hosts, &o.allow_hosts);
        set(&mut self.targets.block_hosts, &o.block_hosts);
        set(&mut self.reserved_aliases, &o.reserved_aliases);
        self.log_json |= o.log_json;
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
            if !crate::links::REDIRECT_STATUSES.contains(&status) {
                return invalid(
                    "default_redirect",
                    format!("{status} is not one of 301, 302, 307, 308"),
                );
            }
        }
        if let Err(e) = crate::api::base_url::parse_base(&self.base_url) {
            return invalid("base_url", e);
        }
        if self.readers == 0 || self.readers > 64 {
            return invalid("readers", format!("{} is outside 1..=64", self.readers));
        }
        if self.cache_size == 0 {
            return invalid("cache_size", "must be at least 1".into());
        }
        if self.spool_interval == 0 {
            return invalid("spool_interval", "must be at least 1 second".into());
        }
        if self.signature_window <= 0 {
            return invalid("signature_window", "must be positive".into());
        }
        if self.targets.max_len == 0 {
            return invalid("targets.max_len", "must be positive".into());
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

#[cfg(test)]
mod tests {
    use super::*;

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
        let config = Config::load(
            Some(&path),
            &Overrides {
                min_length: Some(8),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(config.data_dir, PathBuf::from("/srv/sl"));
        assert_eq!(config.min_length, 8);
        assert_eq!(config.base_url, "https://s.example.com");
        assert_eq!(config.targets.block_hosts, vec!["evil.example".to_string()]);
        assert_eq!(config.ipc_path(), PathBuf::from("/srv/sl/ipc.sock"));
    }

    #[test]
    fn example_config_parses() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../conf/shortlinkd.toml");
        let config = Config::load(Some(&path), &Overrides::default()).unwrap();
        assert_eq!(config.reserved_aliases, vec!["static", "login"]);
        assert_eq!(config.targets.block_hosts, vec!["evil.example"]);
    }

    #[test]
    fn unknown_and_bad_settings_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(&path, "min_lenght = 7\n").unwrap();
        let err = Config::load(Some(&path), &Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("min_lenght"), "{err}");
        std::fs::write(&path, "min_length = 40\n").unwrap();
        let err = Config::load(Some(&path), &Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("min_length"), "{err}");
        std::fs::write(&path, "default_redirect = 304\n").unwrap();
        let err = Config::load(Some(&path), &Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("default_redirect"), "{err}");
    }
}
