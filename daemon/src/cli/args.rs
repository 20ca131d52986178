//! The command line's shape: subcommands and their arguments, and where
//! the daemon flags ([`SettingsArgs`]) may stand.

use shortlink_core::check_mode::CheckMode;
use std::path::PathBuf;

use clap::{Arg, Args, CommandFactory, Parser, Subcommand, ValueEnum};

use super::settings::{self, SettingsArgs};
use crate::links::VariantInput;

/// shortlinkd: the daemon behind the shortlink nginx module.
#[derive(Debug, Parser)]
#[command(name = "shortlinkd", version, about)]
pub struct Cli {
    /// The daemon flags, wherever they stood (see [`command`]).
    #[command(flatten)]
    pub settings: SettingsArgs,
    /// Print one JSON document instead of text (for scripts).
    #[arg(long, global = true)]
    pub json: bool,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands that never read the settings: no daemon flags after them.
const WITHOUT_SETTINGS: &[&str] = &["keygen"];

/// The command tree: the daemon flags before the subcommand (on [`Cli`]),
/// and after every subcommand that uses them, global within it so that
/// `key create --data-dir D` works too. Those later copies share the ids
/// of the first, and clap hands the values of global flags up the tree by
/// id, so [`Cli::settings`] ends up with every one of them (a flag beats
/// the environment; of two flags the later wins).
///
/// Each command's `--help` lists only the daemon flags it uses
/// ([`settings::shown_on`]); the others are still accepted, hidden, so a
/// command line written for `serve` works anywhere.
pub fn command() -> clap::Command {
    let settings: Vec<Arg> = SettingsArgs::augment_args(clap::Command::new("settings"))
        .get_arguments()
        .map(|a| a.clone().global(true))
        .collect();
    let ids: Vec<clap::Id> = settings.iter().map(|a| a.get_id().clone()).collect();
    let top = Cli::command()
        .mut_args(|a| shown_here(a, "", &ids))
        .after_help(OTHER_SETTINGS);
    top.mut_subcommands(|sc| {
        let name = sc.get_name().to_string();
        if WITHOUT_SETTINGS.contains(&name.as_str()) {
            return sc;
        }
        let sc = sc.args(settings.iter().map(|a| shown_here(a.clone(), &name, &ids)));
        if name == "serve" {
            sc
        } else {
            with_note(sc)
        }
    })
}

/// `cmd` and its subcommands, with [`OTHER_SETTINGS`] under their help.
fn with_note(cmd: clap::Command) -> clap::Command {
    cmd.after_help(OTHER_SETTINGS).mut_subcommands(with_note)
}

/// Under a help that leaves daemon flags out.
const OTHER_SETTINGS: &str =
    "The daemon's other settings are accepted here too: `shortlinkd serve --help` lists them.";

/// `arg` hidden unless it is no daemon flag or one that `command` uses.
fn shown_here(arg: Arg, command: &str, settings: &[clap::Id]) -> Arg {
    let is_setting = settings.contains(arg.get_id());
    let long = arg.get_long().unwrap_or_default().to_string();
    if is_setting && !settings::shown_on(command, &long) {
        arg.hide(true)
    } else {
        arg
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
    /// Copy the database to FILE with SQLite's online backup (safe while
    /// the daemon runs); the copy is checked and made 0600.
    Backup {
        /// Where to write the copy (a new file unless `--force`).
        file: PathBuf,
        /// Replace FILE if it exists (atomically, once the copy is checked).
        #[arg(long)]
        force: bool,
    },
    /// Replace the database with the backup FILE (the daemon must be
    /// stopped); the file is checked first.
    Restore {
        /// A file `backup` wrote.
        file: PathBuf,
    },
    /// A command on the data.
    #[command(flatten)]
    Admin(AdminCommand),
}

/// The commands that act on the data, through a [`super::Client`].
#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// API keys.
    #[command(subcommand)]
    Key(KeyCommand),
    /// Short links.
    #[command(subcommand)]
    Link(Box<LinkCommand>),
    /// Apps that sign requests.
    #[command(subcommand)]
    App(AppCommand),
    /// Users: their team and role.
    #[command(subcommand)]
    User(UserCommand),
    /// Switch off every link to a host or by one creator, list the
    /// records, undo one.
    #[command(subcommand)]
    Takedown(TakedownCommand),
    /// Teams: who links, users and keys belong to.
    #[command(subcommand)]
    Team(super::teams::TeamCommand),
    /// The id ranges leased and their recycling (`[recycling]`).
    Ids {
        /// The newest ranges to list (0 to 1000).
        #[arg(long, default_value_t = 20)]
        limit: u32,
    },
    /// Webhooks: signed POSTs of link events, their delivery log.
    #[command(subcommand)]
    Webhook(super::webhooks::WebhookCommand),
    /// Click stats of a link: a summary; `--series` adds the buckets.
    Stats {
        /// The link's code or alias; without it, every link's stats (or
        /// with `--tag` a campaign's).
        #[arg(required_unless_present = "tag", conflicts_with = "tag")]
        code: Option<String>,
        /// The stats of every link with this tag (a campaign): totals, the
        /// series and the most clicked.
        #[arg(long)]
        tag: Option<String>,
        /// IANA time zone whose midnights start the days (default UTC),
        /// such as Europe/Paris.
        #[arg(long)]
        tz: Option<String>,
        /// Range start: Unix seconds or RFC 3339.
        #[arg(long)]
        from: Option<String>,
        /// Range end: Unix seconds or RFC 3339.
        #[arg(long)]
        to: Option<String>,
        /// hour or day.
        #[arg(long, default_value = "hour")]
        granularity: String,
        /// Also print one row per bucket.
        #[arg(long)]
        series: bool,
    },
    /// Create links from a CSV file: our `export`, or the export of
    /// Bitly, Shlink, YOURLS or Kutt (known by the header); rows already
    /// stored are skipped.
    Import {
        /// The CSV file, or `-` for stdin.
        file: PathBuf,
        /// The file's format, when the header does not tell.
        #[arg(long, value_enum)]
        format: Option<crate::links::import::formats::Format>,
    },
    /// Write every link to a CSV file.
    Export {
        /// The CSV file to create, or `-` for stdout.
        file: PathBuf,
    },
}

/// `key` subcommands.
#[derive(Debug, Subcommand)]
pub enum KeyCommand {
    /// Create a key; prints only the secret.
    Create {
        /// What the key is for.
        #[arg(long)]
        name: String,
        /// Comma-separated: links:write, links:read, stats:read, admin.
        #[arg(long, value_delimiter = ',', required = true)]
        scopes: Vec<String>,
        /// When the key stops working: RFC 3339 or Unix seconds (default:
        /// never).
        #[arg(long)]
        expires: Option<String>,
        /// The user the key acts for: it follows their team and role
        /// (default: a key of its own in the default team).
        #[arg(long)]
        user: Option<String>,
    },
    /// List keys.
    List,
    /// Revoke a key by id or by prefix.
    Revoke {
        /// The key's numeric id, or its prefix as `key list` shows it (`slk_`
        /// may be left out unless the prefix is all digits).
        key: String,
    },
}

/// `link` subcommands.
#[derive(Debug, Subcommand)]
pub enum LinkCommand {
    /// Create a link; prints its short URL.
    Create {
        /// Absolute http(s) URL to redirect to.
        url: String,
        /// Custom alias, reachable besides the generated code.
        #[arg(long)]
        alias: Option<String>,
        /// Lifetime in seconds.
        #[arg(long)]
        ttl: Option<u64>,
        /// Expiry: Unix seconds or RFC 3339.
        #[arg(long)]
        expires_at: Option<String>,
        /// Tags (repeat or comma-separate).
        #[arg(short = 't', long = "tag", value_delimiter = ',')]
        tags: Vec<String>,
        /// Reuse an existing live link with the same URL and options.
        #[arg(long)]
        dedupe: bool,
        /// Append the visit's query string to the target (`on`) or never
        /// (`off`), whatever `shortlink_forward_query` says; default: the
        /// location decides.
        #[arg(long, value_enum)]
        forward_query: Option<ForwardQuery>,
        /// Target for visitors from a country, as `CC=URL` (an ISO 3166-1
        /// alpha-2 code; repeat, at most 16); chosen before device targets.
        #[arg(long = "country-target", value_name = "CC=URL", value_parser = country_target)]
        country_targets: Vec<(String, String)>,
        /// Protect the link with the password on the first line of FILE;
        /// `-` prompts for it (twice, without echo) on a terminal, else
        /// reads stdin's first line. Never give it on the command line.
        #[arg(long, value_name = "FILE")]
        password_file: Option<std::path::PathBuf>,
        /// An A/B target as `WEIGHT=URL` (weight 1 to 65535; repeat, at
        /// most 8); variants replace the main URL, picked by weight.
        #[arg(long = "variant", value_name = "WEIGHT=URL", value_parser = variant)]
        variants: Vec<VariantInput>,
        /// The link checker for this link: `off` (never probed), `report`
        /// (never sent to the fallback) or `fallback`; default: the site's
        /// `[checker]` settings.
        #[arg(long, value_enum)]
        check: Option<LinkCheck>,
        /// A human name for the link (shown by `link list`, searched by
        /// `-q`).
        #[arg(long)]
        title: Option<String>,
    },
    /// Show a link (JSON).
    Get {
        /// The link's code or alias.
        code: String,
    },
    /// List links, newest first.
    List {
        /// Most links shown (per page with `--all`).
        #[arg(short = 'n', long, default_value_t = 50)]
        limit: u32,
        /// Substring of the URL, alias or title.
        #[arg(short = 'q', long = "query", visible_alias = "q")]
        q: Option<String>,
        /// Only links with this tag.
        #[arg(short = 't', long)]
        tag: Option<String>,
        /// Every matching link, page after page.
        #[arg(long)]
        all: bool,
    },
    /// Change a link; only the options given change.
    Update(UpdateArgs),
    /// Switch a link off (the edge answers 410 Gone, or the fallback, until
    /// it is enabled).
    Disable {
        /// The link's code or alias.
        code: String,
    },
    /// Switch a link back on.
    Enable {
        /// The link's code or alias.
        code: String,
    },
    /// Delete a link.
    Delete {
        /// The link's code or alias.
        code: String,
    },
}

/// `link update`: each option given replaces that field.
#[derive(Debug, Args)]
pub struct UpdateArgs {
    /// The link's code or alias.
    pub code: String,
    /// New target URL.
    #[arg(long)]
    pub url: Option<String>,
    /// Target for iPhones and iPads (empty: remove it).
    #[arg(long)]
    pub ios: Option<String>,
    /// Target for Android devices (empty: remove it).
    #[arg(long)]
    pub android: Option<String>,
    /// Target for desktop browsers (empty: remove it).
    #[arg(long)]
    pub desktop: Option<String>,
    /// Target for other phones and tablets (empty: remove it).
    #[arg(long)]
    pub mobile: Option<String>,
    /// Redirect status: 301, 302, 307 or 308.
    #[arg(long)]
    pub redirect: Option<u16>,
    /// Expiry: Unix seconds or RFC 3339.
    #[arg(long, conflicts_with = "no_expiry")]
    pub expires: Option<String>,
    /// Make the link permanent.
    #[arg(long)]
    pub no_expiry: bool,
    /// Human visits after which the link is gone.
    #[arg(long, conflicts_with = "no_max_visits")]
    pub max_visits: Option<u64>,
    /// Remove the visit limit.
    #[arg(long)]
    pub no_max_visits: bool,
    /// Tags, replacing the link's tags (repeat or comma-separate).
    #[arg(short = 't', long = "tag", value_delimiter = ',')]
    pub tags: Vec<String>,
    /// Append the visit's query string (`on`), never (`off`), or leave it
    /// to `shortlink_forward_query` (`location`).
    #[arg(long, value_enum)]
    pub forward_query: Option<ForwardQuery>,
    /// Targets per visitor country as `CC=URL`, replacing the link's
    /// (repeat, at most 16).
    #[arg(
        long = "country-target",
        value_name = "CC=URL",
        value_parser = country_target,
        conflicts_with = "no_country_targets"
    )]
    pub country_targets: Vec<(String, String)>,
    /// Remove every country target.
    #[arg(long)]
    pub no_country_targets: bool,
    /// A new password from the first line of FILE (`-`: prompt, or stdin).
    #[arg(long, value_name = "FILE", conflicts_with = "no_password")]
    pub password_file: Option<std::path::PathBuf>,
    /// Remove the link's password.
    #[arg(long)]
    pub no_password: bool,
    /// A/B targets as `WEIGHT=URL`, replacing the link's (repeat, at
    /// most 8).
    #[arg(
        long = "variant",
        value_name = "WEIGHT=URL",
        value_parser = variant,
        conflicts_with = "no_variants"
    )]
    pub variants: Vec<VariantInput>,
    /// Remove every A/B variant.
    #[arg(long)]
    pub no_variants: bool,
    /// The link checker for this link: `off`, `report`, `fallback`, or
    /// `site` to leave it to the `[checker]` settings again.
    #[arg(long, value_enum)]
    pub check: Option<LinkCheck>,
    /// A new title.
    #[arg(long, conflicts_with = "no_title")]
    pub title: Option<String>,
    /// Remove the title.
    #[arg(long)]
    pub no_title: bool,
}

/// `--check`: the link's own choice about the link checker, or the site's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LinkCheck {
    /// Never probe this link.
    Off,
    /// Probe and report, never send visitors to the fallback.
    Report,
    /// Probe; send visitors to the fallback while the target is dead.
    Fallback,
    /// As the `[checker]` settings say.
    Site,
}

impl LinkCheck {
    /// The link field's value: `None` leaves it to the site.
    pub fn value(self) -> Option<CheckMode> {
        match self {
            LinkCheck::Off => Some(CheckMode::Off),
            LinkCheck::Report => Some(CheckMode::Report),
            LinkCheck::Fallback => Some(CheckMode::Fallback),
            LinkCheck::Site => None,
        }
    }
}

/// One `--variant WEIGHT=URL`.
fn variant(v: &str) -> Result<VariantInput, String> {
    crate::links::csv_format::parse_variant(v)
}

/// One `--country-target CC=URL`.
fn country_target(v: &str) -> Result<(String, String), String> {
    crate::links::csv_format::parse_country_target(v)
}

/// `--forward-query`: the link's own choice, or the location's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ForwardQuery {
    /// Always append the visit's query string.
    On,
    /// Never append it.
    Off,
    /// As the location's `shortlink_forward_query` says.
    Location,
}

impl ForwardQuery {
    /// The link field's value: `None` leaves it to the location.
    pub fn value(self) -> Option<bool> {
        match self {
            ForwardQuery::On => Some(true),
            ForwardQuery::Off => Some(false),
            ForwardQuery::Location => None,
        }
    }
}

/// `app` subcommands.
#[derive(Debug, Subcommand)]
pub enum AppCommand {
    /// Create an app; prints `app_id` and `secret` lines.
    Create {
        /// What the app is.
        #[arg(long)]
        name: String,
        /// Comma-separated: links:write, links:read, stats:read, admin.
        #[arg(long, value_delimiter = ',', required = true)]
        scopes: Vec<String>,
    },
    /// List apps.
    List,
    /// Revoke an app by app id or numeric id.
    Revoke {
        /// The app id or the numeric id (see `app list`).
        id: String,
    },
}

/// `user` subcommands.
#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// Add a user; the password is asked twice on a terminal, else read
    /// from stdin.
    Add {
        /// The user's sign-in name.
        name: String,
        /// Read the password from stdin (the default; kept for scripts).
        #[arg(long)]
        password_stdin: bool,
        /// The user's team (default: `default`).
        #[arg(long)]
        team: Option<String>,
        /// admin, member or viewer (default: admin).
        #[arg(long)]
        role: Option<String>,
    },
    /// Move a user to a team with a role.
    Set {
        /// The user's sign-in name.
        name: String,
        /// The team's name.
        #[arg(long)]
        team: String,
        /// admin, member or viewer.
        #[arg(long)]
        role: String,
    },
    /// Change a user's password (asked for, or read from stdin).
    Passwd {
        /// The user's sign-in name.
        name: String,
        /// Read the password from stdin (the default; kept for scripts).
        #[arg(long)]
        password_stdin: bool,
    },
    /// List users.
    List,
    /// Delete a user; their admin sessions end.
    Delete {
        /// The user's sign-in name.
        name: String,
    },
}

/// `shortlinkd takedown …`.
#[derive(Debug, Subcommand)]
pub enum TakedownCommand {
    /// Switch off every link to HOST and its subdomains, on every node.
    Host {
        /// A host name or address.
        host: String,
        /// Why (kept in the record).
        #[arg(long)]
        reason: String,
    },
    /// Switch off every link made by CREATOR (`key:<id>`, `app:<app id>`,
    /// `user:<name>` or `cli`), on every node.
    Creator {
        /// Who made the links.
        creator: String,
        /// Why (kept in the record).
        #[arg(long)]
        reason: String,
    },
    /// List takedowns, newest first.
    List {
        /// At most this many.
        #[arg(long, default_value_t = 100)]
        limit: u32,
    },
    /// Switch back on the links a takedown switched off (those no other
    /// takedown in force covers).
    Undo {
        /// The takedown's id.
        id: i64,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::FromArgMatches;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        let matches = command().try_get_matches_from(args)?;
        Cli::from_arg_matches(&matches)
    }

    fn data_dir(args: &[&str]) -> PathBuf {
        parse(args).unwrap().settings.load().unwrap().data_dir
    }

    #[test]
    fn daemon_flags_before_and_after_the_subcommand() {
        command().debug_assert();
        let key = ["key", "create", "--name", "n", "--scopes", "admin"];
        let before: Vec<&str> = ["shortlinkd", "--data-dir", "/a"]
            .into_iter()
            .chain(key)
            .collect();
        assert_eq!(data_dir(&before), PathBuf::from("/a"));
        let after: Vec<&str> = ["shortlinkd"]
            .into_iter()
            .chain(key)
            .chain(["--data-dir", "/b"])
            .collect();
        assert_eq!(data_dir(&after), PathBuf::from("/b"));
        assert_eq!(
            data_dir(&["shortlinkd", "key", "--data-dir", "/c", "list"]),
            PathBuf::from("/c")
        );
        // Of two flags the later wins.
        assert_eq!(
            data_dir(&[
                "shortlinkd",
                "--data-dir",
                "/a",
                "serve",
                "--data-dir",
                "/b"
            ]),
            PathBuf::from("/b")
        );
        let cli = parse(&[
            "shortlinkd",
            "--min-length",
            "7",
            "serve",
            "--allow-hosts",
            "a.example,b.example",
            "--log-json",
        ])
        .unwrap();
        assert!(matches!(cli.command, Command::Serve));
        let config = cli.settings.load().unwrap();
        assert_eq!(config.min_length, 7);
        assert_eq!(config.targets.allow_hosts, vec!["a.example", "b.example"]);
        assert!(config.log_json);
    }

    #[test]
    fn keygen_takes_no_daemon_flags() {
        assert!(parse(&["shortlinkd", "keygen", "/k"]).is_ok());
        let err = parse(&["shortlinkd", "keygen", "--data-dir", "/a", "/k"]).unwrap_err();
        assert_eq!(err.kind(), clap::error::ErrorKind::UnknownArgument);
        let mut cmd = command();
        let help = cmd
            .find_subcommand_mut("keygen")
            .unwrap()
            .render_long_help()
            .to_string();
        assert!(!help.contains("--data-dir"), "{help}");
        let serve = cmd
            .find_subcommand_mut("serve")
            .unwrap()
            .render_long_help()
            .to_string();
        for flag in ["--config", "--data-dir", "--max-url-len", "--log-json"] {
            assert!(serve.contains(flag), "{flag}: {serve}");
        }
    }
}
