//! The `[targets]` table: core's [`TargetRules`] with flags for three of
//! its keys, compiled once into the [`TargetPolicy`] every target is judged
//! by. A host list entry that is not a host stops the configuration from
//! loading, with the entry and its key named, instead of failing every
//! request later.

use clap::error::ErrorKind;
use clap::{ArgMatches, Args, Command, FromArgMatches};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use shortlink_core::{HostSet, NormalHost, TargetPolicy, TargetRules};

/// What target URLs are accepted: [`TargetRules`] (which lives in core,
/// without clap) as the file and flags give them, and their compiled form.
/// The default rules compile to the default policy (core's `Default` of
/// `TargetPolicy`).
#[derive(Debug, Clone, Default)]
pub struct Targets {
    rules: TargetRules,
    policy: TargetPolicy,
}

impl Targets {
    /// Compiles `rules`; the error names the list and the entry at fault.
    pub fn new(rules: TargetRules) -> Result<Self, String> {
        for (key, list) in [
            ("allow_hosts", &rules.allow_hosts),
            ("block_hosts", &rules.block_hosts),
        ] {
            HostSet::parse(list).map_err(|e| format!("targets.{key}: {e}"))?;
        }
        let policy = rules.compile().map_err(|e| format!("targets: {e}"))?;
        Ok(Self { rules, policy })
    }

    /// The rules as given.
    pub fn rules(&self) -> &TargetRules {
        &self.rules
    }

    /// The rules with the host lists in normal form: what targets are
    /// judged by.
    pub fn policy(&self) -> &TargetPolicy {
        &self.policy
    }
}

impl std::ops::Deref for Targets {
    type Target = TargetRules;

    fn deref(&self) -> &TargetRules {
        &self.rules
    }
}

impl Serialize for Targets {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.rules.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Targets {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Targets::new(TargetRules::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

/// A host list entry given as a flag or in the environment, checked as it
/// is read so clap names the flag.
fn host_entry(text: &str) -> Result<String, String> {
    NormalHost::parse(text)
        .map(|_| text.to_string())
        .map_err(|e| e.to_string())
}

/// The flags of [`Targets`]; the orphan rule keeps them off core's type,
/// so each names the key it sets.
#[derive(Debug, Args)]
struct TargetFlags {
    /// Longest target URL in bytes.
    #[arg(long, env = "SHORTLINKD_MAX_URL_LEN")]
    max_url_len: Option<usize>,
    /// Only accept targets on these domains (comma-separated).
    #[arg(long, env = "SHORTLINKD_ALLOW_HOSTS", value_delimiter = ',', value_parser = host_entry)]
    allow_hosts: Option<Vec<String>>,
    /// Refuse targets on these domains (comma-separated).
    #[arg(long, env = "SHORTLINKD_BLOCK_HOSTS", value_delimiter = ',', value_parser = host_entry)]
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
        let mut rules = self.rules.clone();
        if let Some(n) = flags.max_url_len {
            rules.max_len = n;
        }
        if let Some(hosts) = flags.allow_hosts {
            rules.allow_hosts = hosts;
        }
        if let Some(hosts) = flags.block_hosts {
            rules.block_hosts = hosts;
        }
        *self = Targets::new(rules).map_err(|e| clap::Error::raw(ErrorKind::ValueValidation, e))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_are_compiled_and_bad_entries_named() {
        let t = Targets::new(TargetRules {
            block_hosts: vec!["Evil.COM.".into()],
            ..TargetRules::default()
        })
        .unwrap();
        assert!(t.policy().refuses_host("https://a.evil.com./"));
        assert_eq!(t.block_hosts, vec!["Evil.COM."], "the rules stay as given");
        let e = Targets::new(TargetRules {
            allow_hosts: vec!["ok.example".into(), "evil.com/path".into()],
            ..TargetRules::default()
        })
        .unwrap_err();
        assert!(
            e.starts_with("targets.allow_hosts: ") && e.contains("\"evil.com/path\""),
            "{e}"
        );
        let file: Result<Targets, _> = toml::from_str("block_hosts = [\"user@evil.com\"]");
        let e = file.unwrap_err().to_string();
        assert!(
            e.contains("targets.block_hosts") && e.contains("user@evil.com"),
            "{e}"
        );
    }

    #[test]
    fn the_default_policy_is_the_default_rules() {
        let t = Targets::default();
        assert!(t.policy().validate("https://example.com/").is_ok());
        assert!(t.policy().validate("ftp://example.com/").is_err());
        let long = format!("https://e.com/{}", "a".repeat(t.max_len));
        assert!(t.policy().validate(&long).is_err());
    }
}
