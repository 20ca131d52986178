//! The `[targets]` table: core's [`TargetRules`] with flags for three of
//! its keys.

use std::ops::{Deref, DerefMut};

use clap::{ArgMatches, Args, Command, FromArgMatches};
use serde::{Deserialize, Serialize};
use shortlink_core::TargetRules;

/// What target URLs are accepted: [`TargetRules`] (which lives in core,
/// without clap) read from the file as it is, plus its flags.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Targets(pub TargetRules);

impl Deref for Targets {
    type Target = TargetRules;

    fn deref(&self) -> &TargetRules {
        &self.0
    }
}

impl DerefMut for Targets {
    fn deref_mut(&mut self) -> &mut TargetRules {
        &mut self.0
    }
}

/// The flags of [`Targets`]; the orphan rule keeps them off core's type,
/// so each names the key it sets.
#[derive(Debug, Args)]
struct TargetFlags {
    /// Longest target URL in bytes.
    #[arg(long, env = "SHORTLINKD_MAX_URL_LEN")]
    max_url_len: Option<usize>,
    /// Only accept targets on these domains (comma-separated).
    #[arg(long, env = "SHORTLINKD_ALLOW_HOSTS", value_delimiter = ',')]
    allow_hosts: Option<Vec<String>>,
    /// Refuse targets on these domains (comma-separated).
    #[arg(long, env = "SHORTLINKD_BLOCK_HOSTS", value_delimiter = ',')]
    block_hosts: Option<Vec<String>>,
}

impl Args for Targets {
    fn augment_args(cmd: Command) -> Command {
        TargetFlags::augment_args(cmd)
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        TargetFlags::augment_args_for_update(cmd)
    }
}

impl FromArgMatches for Targets {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let mut targets = Self::default();
        targets.update_from_arg_matches(matches)?;
        Ok(targets)
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        let flags = TargetFlags::from_arg_matches(matches)?;
        if let Some(n) = flags.max_url_len {
            self.0.max_len = n;
        }
        if let Some(hosts) = flags.allow_hosts {
            self.0.allow_hosts = hosts;
        }
        if let Some(hosts) = flags.block_hosts {
            self.0.block_hosts = hosts;
        }
        Ok(())
    }
}
