//! The daemon flags on the command line: `--config` names the file, and
//! clap reads every [`Config`] flag and its environment variable (a flag
//! wins over its variable) to lay them over that file.

use std::path::PathBuf;

use clap::{ArgMatches, Args, Command, FromArgMatches};

use crate::config::{Config, ConfigError};

/// Where `--help` lists the daemon flags.
const HELP_HEADING: &str = "Daemon settings";

/// The flags of every command that opens the data: the file, the store and
/// the deployment key.
const STORE: &[&str] = &[
    "config",
    "data-dir",
    "database",
    "database-password-file",
    "key-file",
];

/// What the admin commands also use: with no daemon running they run the
/// API in-process, which builds codes and short URLs and checks targets.
const LINK_RULES: &[&str] = &[
    "base-url",
    "min-length",
    "max-length",
    "segment-size",
    "default-redirect",
    "default-ttl",
    "max-url-len",
    "allow-hosts",
    "block-hosts",
    "blocklist-file",
    "blocklist-disable",
    "reserved-aliases",
];

/// Whether `--help` of `command` (a top-level subcommand's name; `""` for
/// `shortlinkd` itself) lists the daemon flag `--long`: `serve` lists
/// every one, the others what they read (the rest only serve).
pub fn shown_on(command: &str, long: &str) -> bool {
    match command {
        "serve" => true,
        // `restore` refuses while the API socket answers.
        "restore" => STORE.contains(&long) || long == "api-socket",
        "" | "backup" => STORE.contains(&long),
        _ => STORE.contains(&long) || LINK_RULES.contains(&long),
    }
}

/// `--config`: the one flag that is not a setting itself.
#[derive(Debug, Args)]
struct ConfigFile {
    /// TOML configuration file.
    #[arg(long, env = "SHORTLINKD_CONFIG")]
    config: Option<PathBuf>,
}

/// The daemon flags (`--config` and every setting of [`Config`]) as clap
/// matched them; flatten it into a command, then [`SettingsArgs::load`].
#[derive(Debug, Clone, Default)]
pub struct SettingsArgs {
    /// The file named by `--config`.
    file: Option<PathBuf>,
    /// What was given by flag or environment; nothing else is in it, so
    /// laying it over the file changes only those settings.
    given: ArgMatches,
}

impl SettingsArgs {
    /// The effective configuration: defaults, then the file, then the
    /// environment and the flags; checked.
    pub fn load(&self) -> Result<Config, ConfigError> {
        Config::load(self.file.as_deref(), &self.given)
    }
}

impl Args for SettingsArgs {
    fn augment_args(cmd: Command) -> Command {
        // "for update": no setting is required and none has a clap
        // default, so an absent flag leaves the file's value alone.
        let settings =
            Config::augment_args_for_update(ConfigFile::augment_args(Command::new("settings")));
        // Under their own heading, apart from a subcommand's own options.
        cmd.args(
            settings
                .get_arguments()
                .map(|a| a.clone().help_heading(HELP_HEADING)),
        )
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

impl FromArgMatches for SettingsArgs {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        Ok(Self {
            file: ConfigFile::from_arg_matches(matches)?.config,
            given: matches.clone(),
        })
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_flag_is_a_daemon_flag() {
        let cmd = SettingsArgs::augment_args(Command::new("t"));
        let longs: Vec<&str> = cmd.get_arguments().filter_map(|a| a.get_long()).collect();
        for flag in STORE.iter().chain(LINK_RULES) {
            assert!(longs.contains(flag), "--{flag} is no daemon flag");
        }
        // The rest only serve: the lists leave most out.
        let shown = longs.iter().filter(|l| shown_on("link", l)).count();
        assert!(shown < longs.len() / 2, "{shown} of {}", longs.len());
    }
}
