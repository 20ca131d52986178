//! The `database` setting: a `postgres://USER@HOST:PORT/DB` URL that puts
//! several nodes' daemons on one PostgreSQL (without it: SQLite under
//! `data_dir`). Like libpq's, it may list several servers
//! (`postgres://u@h1:5432,h2:5432/db?target_session_attrs=read-write`):
//! each is tried in turn, so a failover is followed without a config
//! change. Parsed once, where it is read (flag, environment or file), so a
//! bad URL stops the daemon with what is wrong in it; its `Debug`, its
//! `Display` and its errors never show a password.

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::url_text;

/// Where the PostgreSQL server listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DatabaseHost {
    /// A host name or address, reached over TCP.
    Tcp(String),
    /// A directory holding the server's Unix socket (`postgres://u@%2Frun%2Fpg/db`).
    Socket(PathBuf),
}

/// One server of the URL's list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatabaseServer {
    /// Where it listens.
    pub host: DatabaseHost,
    /// Its port (5432 when the URL names none).
    pub port: u16,
}

/// A parsed `database` URL.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct DatabaseUrl {
    /// The URL as given (kept for `Serialize`; may hold a password).
    text: String,
    /// The role the daemon connects as.
    pub user: String,
    /// The servers, tried in this order (one unless the URL lists more).
    pub servers: Vec<DatabaseServer>,
    /// The database name.
    pub dbname: String,
    /// A password written into the URL, as `user:password@` or
    /// `?password=` (refused on the command line and in a file other users
    /// can read).
    pub password: Option<String>,
}

/// The URL's `sslmode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    /// Plain text.
    Disable,
    /// TLS when offered, certificate not checked.
    Prefer,
    /// TLS always, certificate not checked.
    Require,
    /// TLS always, chain checked against the roots.
    VerifyCa,
    /// TLS always, chain and host name checked.
    VerifyFull,
}

impl SslMode {
    /// Every value, as written in a URL.
    pub const NAMES: &'static str = "disable, prefer, require, verify-ca, verify-full";

    /// Parses a URL's value.
    pub fn parse(value: &str) -> Option<Self> {
        Some(match value {
            "disable" => Self::Disable,
            "prefer" => Self::Prefer,
            "require" => Self::Require,
            "verify-ca" => Self::VerifyCa,
            "verify-full" => Self::VerifyFull,
            _ => return None,
        })
    }

    /// Whether the server's certificate is checked (and `sslrootcert`
    /// needed).
    pub fn verifies(self) -> bool {
        matches!(self, Self::VerifyCa | Self::VerifyFull)
    }

    /// Whether a connection without TLS is refused.
    pub fn requires_tls(self) -> bool {
        !matches!(self, Self::Disable | Self::Prefer)
    }

    /// What the driver is told.
    pub fn wire(self) -> tokio_postgres::config::SslMode {
        use tokio_postgres::config::SslMode as WireMode;
        match self {
            Self::Disable => WireMode::Disable,
            Self::Prefer => WireMode::Prefer,
            _ => WireMode::Require,
        }
    }
}

/// Query parameters understood; any other is refused by name.
const KNOWN_PARAMS: &[&str] = &[
    "sslmode",
    "sslrootcert",
    "application_name",
    "connect_timeout",
    "target_session_attrs",
    "password",
];

/// The values of `target_session_attrs`.
pub const SESSION_ATTRS: &str = "any, read-write, read-only";

/// What the driver is told for a `target_session_attrs` value.
pub fn session_attrs(value: &str) -> Option<tokio_postgres::config::TargetSessionAttrs> {
    use tokio_postgres::config::TargetSessionAttrs as Attrs;
    Some(match value {
        "any" => Attrs::Any,
        "read-write" => Attrs::ReadWrite,
        "read-only" => Attrs::ReadOnly,
        _ => return None,
    })
}

impl DatabaseUrl {
    /// Parses and checks a URL, naming what is wrong with it.
    pub fn parse(text: &str) -> Result<Self, String> {
        let shown = redact(text);
        // The `url` crate takes one host: parse the URL with the first of
        // a list, and each host of the list on its own.
        let (single, listed) = match url_text::split_hosts(text) {
            Some((first, hosts)) => (first, Some(hosts)),
            None => (text.to_string(), None),
        };
        let url = url::Url::parse(&single).map_err(|e| {
            format!("\"{shown}\" is not a URL ({e}); expected postgres://USER@HOST:PORT/DB")
        })?;
        if !matches!(url.scheme(), "postgres" | "postgresql") {
            return Err(format!(
                "\"{shown}\": scheme `{}` is not postgres:// (or postgresql://)",
                url.scheme()
            ));
        }
        let decode = |s: &str| {
            percent_decode(s).ok_or_else(|| format!("\"{shown}\": bad percent-encoding in {s:?}"))
        };
        let user = decode(url.username())?;
        if user.is_empty() {
            return Err(format!(
                "\"{shown}\": no user (postgres://USER@HOST:PORT/DB)"
            ));
        }
        let servers = match listed {
            None => vec![server_of(&url, &shown)?],
            Some(hosts) => hosts
                .iter()
                .map(|h| {
                    let one = url::Url::parse(&format!("postgres://u@{h}/d")).map_err(|e| {
                        format!("\"{shown}\": host `{h}` of the list is not HOST:PORT ({e})")
                    })?;
                    server_of(&one, &shown)
                })
                .collect::<Result<Vec<_>, String>>()?,
        };
        let dbname = decode(url.path().trim_start_matches('/'))?;
        if dbname.is_empty() || dbname.contains('/') {
            return Err(format!(
                "\"{shown}\": the path must be one database name (postgres://USER@HOST:PORT/DB)"
            ));
        }
        for (key, value) in url.query_pairs() {
            if !KNOWN_PARAMS.contains(&key.as_ref()) {
                return Err(format!(
                    "\"{shown}\": unknown parameter `{key}` (known: {})",
                    KNOWN_PARAMS.join(", ")
                ));
            }
            if key == "sslmode" && SslMode::parse(&value).is_none() {
                return Err(format!(
                    "\"{shown}\": sslmode={value} is not one of {}",
                    SslMode::NAMES
                ));
            }
            if key == "target_session_attrs" && session_attrs(&value).is_none() {
                return Err(format!(
                    "\"{shown}\": target_session_attrs={value} is not one of {SESSION_ATTRS}"
                ));
            }
            if key == "connect_timeout" && value.parse::<u64>().is_err() {
                return Err(format!(
                    "\"{shown}\": connect_timeout={value} is not whole seconds"
                ));
            }
        }
        let param = |k: &str| url.query_pairs().find(|(key, _)| key == k).map(|(_, v)| v);
        let mode = param("sslmode")
            .and_then(|m| SslMode::parse(&m))
            .unwrap_or(SslMode::Prefer);
        if mode.requires_tls()
            && servers
                .iter()
                .any(|s| matches!(s.host, DatabaseHost::Socket(_)))
        {
            return Err(format!(
                "\"{shown}\": sslmode={} needs TCP: PostgreSQL has no TLS on a Unix socket",
                param("sslmode").unwrap_or_default()
            ));
        }
        if mode.verifies() && param("sslrootcert").is_none_or(|c| c.is_empty()) {
            return Err(format!(
                "\"{shown}\": sslmode={} checks the server's certificate and needs \
                 sslrootcert=FILE (PEM CA certificates) or sslrootcert=system",
                param("sslmode").unwrap_or_default()
            ));
        }
        let password = match (url.password(), param("password")) {
            (Some(_), Some(_)) => {
                return Err(format!(
                    "\"{shown}\": a password both before the host and as ?password="
                ))
            }
            (Some(p), None) => Some(decode(p)?),
            (None, Some(p)) => Some(p.into_owned()),
            (None, None) => None,
        };
        Ok(Self {
            text: text.to_string(),
            user,
            servers,
            dbname,
            password,
        })
    }

    /// How the connection is encrypted (`sslmode`, `prefer` when unset).
    pub fn ssl_mode(&self) -> SslMode {
        self.param("sslmode")
            .and_then(|m| SslMode::parse(&m))
            .unwrap_or(SslMode::Prefer)
    }

    /// A query parameter of the URL.
    pub fn param(&self, key: &str) -> Option<String> {
        let single =
            url_text::split_hosts(&self.text).map_or_else(|| self.text.clone(), |(s, _)| s);
        url::Url::parse(&single).ok().and_then(|u| {
            u.query_pairs()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.into_owned())
        })
    }
}

/// `text` with any password replaced by `***`.
fn redact(text: &str) -> String {
    url_text::redact(text)
}

/// The host and port of a URL holding one host.
fn server_of(url: &url::Url, shown: &str) -> Result<DatabaseServer, String> {
    let host = match url.host_str() {
        None | Some("") => return Err(format!("\"{shown}\": no host")),
        Some(h) => {
            let h = percent_decode(h)
                .ok_or_else(|| format!("\"{shown}\": bad percent-encoding in {h:?}"))?;
            if h.starts_with('/') {
                DatabaseHost::Socket(PathBuf::from(h))
            } else {
                DatabaseHost::Tcp(h.trim_start_matches('[').trim_end_matches(']').into())
            }
        }
    };
    Ok(DatabaseServer {
        host,
        port: url.port().unwrap_or(5432),
    })
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Clap's parser for `--database` and `SHORTLINKD_DATABASE`: clap's own
/// error for a bad value would repeat the value, password included.
#[derive(Debug, Clone, Copy)]
pub struct DatabaseUrlParser;

impl clap::builder::TypedValueParser for DatabaseUrlParser {
    type Value = DatabaseUrl;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<DatabaseUrl, clap::Error> {
        let name = arg.map_or("--database".to_string(), |a| a.to_string());
        let fail = |message: String| {
            clap::Error::raw(
                clap::error::ErrorKind::ValueValidation,
                format!("invalid value for {name}: {message}\n"),
            )
            .with_cmd(cmd)
        };
        let text = value
            .to_str()
            .ok_or_else(|| fail("not valid UTF-8".into()))?;
        DatabaseUrl::parse(text).map_err(fail)
    }
}

impl TryFrom<String> for DatabaseUrl {
    type Error = String;
    fn try_from(text: String) -> Result<Self, String> {
        Self::parse(&text)
    }
}

impl From<DatabaseUrl> for String {
    fn from(url: DatabaseUrl) -> String {
        url.text
    }
}

impl fmt::Display for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&redact(&self.text))
    }
}

impl fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DatabaseUrl({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_as_libpq_names_them() {
        for name in SslMode::NAMES.split(", ") {
            assert!(SslMode::parse(name).is_some(), "{name}");
        }
        assert_eq!(SslMode::parse("allow"), None);
        assert!(SslMode::VerifyCa.verifies() && !SslMode::Require.verifies());
        assert!(SslMode::Require.requires_tls() && !SslMode::Prefer.requires_tls());
    }

    #[test]
    fn a_url_gives_its_parts() {
        let u = DatabaseUrl::parse("postgres://sl@db.example:6432/links?sslmode=disable").unwrap();
        assert_eq!(u.user, "sl");
        assert_eq!(
            u.servers,
            [DatabaseServer {
                host: DatabaseHost::Tcp("db.example".into()),
                port: 6432
            }]
        );
        assert_eq!(u.dbname, "links");
        assert_eq!(u.password, None);
        assert_eq!(u.param("sslmode").as_deref(), Some("disable"));
        let u = DatabaseUrl::parse("postgresql://sl@%2Frun%2Fpostgresql/links").unwrap();
        assert_eq!(
            u.servers[0].host,
            DatabaseHost::Socket("/run/postgresql".into())
        );
        assert_eq!(u.servers[0].port, 5432);
    }

    #[test]
    fn a_host_list_is_every_server_in_order() {
        let u = DatabaseUrl::parse(
            "postgres://sl@db1:5433,[::1]:5434,db3/links?target_session_attrs=read-write",
        )
        .unwrap();
        let servers: Vec<_> = u.servers.iter().map(|s| (s.host.clone(), s.port)).collect();
        assert_eq!(
            servers,
            [
                (DatabaseHost::Tcp("db1".into()), 5433),
                (DatabaseHost::Tcp("::1".into()), 5434),
                (DatabaseHost::Tcp("db3".into()), 5432),
            ]
        );
        assert_eq!((u.user.as_str(), u.dbname.as_str()), ("sl", "links"));
        assert_eq!(
            u.param("target_session_attrs").as_deref(),
            Some("read-write")
        );
        assert_eq!(
            session_attrs("read-write"),
            Some(tokio_postgres::config::TargetSessionAttrs::ReadWrite)
        );
        for (bad, says) in [
            ("postgres://sl@db1,db2:x/d", "host `db2:x` of the list"),
            ("postgres://sl@db1,/d", "host `` of the list"),
            (
                "postgres://sl@db1,db2/d?target_session_attrs=primary",
                "not one of any, read-write",
            ),
        ] {
            let err = DatabaseUrl::parse(bad).unwrap_err();
            assert!(err.contains(says), "{bad}: {err}");
        }
    }

    #[test]
    fn a_password_parameter_is_the_password_and_is_hidden() {
        let u = DatabaseUrl::parse("postgres://sl@h1,h2/d?password=s3cret").unwrap();
        assert_eq!(u.password.as_deref(), Some("s3cret"));
        assert!(!u.to_string().contains("s3cret"), "{u}");
        let err = DatabaseUrl::parse("postgres://sl:a@h/d?password=s3cret").unwrap_err();
        assert!(err.contains("both") && !err.contains("s3cret"), "{err}");
        let err = DatabaseUrl::parse("postgres://sl@h/d?password=s3cret&pool=1").unwrap_err();
        assert!(err.contains("`pool`") && !err.contains("s3cret"), "{err}");
    }

    #[test]
    fn bad_urls_are_named_by_what_is_wrong() {
        for (bad, says) in [
            ("db.example/links", "not a URL"),
            ("mysql://u@h/d", "scheme `mysql`"),
            ("postgres://h:5432/d", "no user"),
            ("postgres://u@h:5432", "one database name"),
            ("postgres://u@h:5432/a/b", "one database name"),
            ("postgres://u@h:99999/d", "not a URL"),
            (
                "postgres://u@h/d?sslmode=allow",
                "not one of disable, prefer",
            ),
            ("postgres://u@h/d?sslmode=verify-full", "needs sslrootcert"),
            (
                "postgres://u@%2Frun%2Fpg/d?sslmode=require",
                "no TLS on a Unix socket",
            ),
            ("postgres://u@h/d?pool=3", "unknown parameter `pool`"),
        ] {
            let err = DatabaseUrl::parse(bad).unwrap_err();
            assert!(err.contains(says), "{bad}: {err}");
        }
    }

    #[test]
    fn a_password_is_never_shown() {
        let u = DatabaseUrl::parse("postgres://sl:s3cret@h/d").unwrap();
        assert_eq!(u.password.as_deref(), Some("s3cret"));
        for shown in [u.to_string(), format!("{u:?}")] {
            assert!(
                !shown.contains("s3cret") && shown.contains("***"),
                "{shown}"
            );
        }
        let err = DatabaseUrl::parse("postgres://sl:s3cret@h/d?x=1").unwrap_err();
        assert!(!err.contains("s3cret"), "{err}");
        let err = DatabaseUrl::parse("postgres://sl:s3cret@h:port/d").unwrap_err();
        assert!(!err.contains("s3cret"), "{err}");
    }
}
