//! The daemon flags on the command line: `--config` names the file, and
//! clap reads every [`Config`] flag and its environment variable (a flag
//! wins over its variable) to lay them over that file.

use std::path::PathBuf;

use clap::{ArgMatches, Args, Command, FromArgMatches};

use crate::config::{Config, ConfigError};

/// Where `--help` lists the daemon flags.
const HELP_HEADING: &str = "Daemon settings";

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
