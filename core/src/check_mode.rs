//! A link's own choice about the background link checker (`check`): the
//! one rule of whether a link is probed and after how many failed probes
//! in a row its visitors go to the fallback, given the site's setting
//! (`checker.fallback_after`).
//!
//! * unset: the site decides (probed when the checker runs; the fallback
//!   after `fallback_after` failures, never when that is 0);
//! * `off`: never probed (the per-link opt-out), never sent to the fallback;
//! * `report`: probed and reported, never sent to the fallback;
//! * `fallback`: probed, and sent to the fallback after the site's
//!   `fallback_after` failures, or [`DEFAULT_FALLBACK_AFTER`] when the
//!   site leaves it at 0.

use serde::{Deserialize, Serialize};

/// Failures in a row before a `fallback` link's visitors go to the
/// fallback when the site sets no number of its own.
pub const DEFAULT_FALLBACK_AFTER: u32 = 3;

/// What a link asks of the checker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckMode {
    Off,
    Report,
    Fallback,
}

/// A `check` value that is none of the three.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("check must be off, report or fallback, not {0:?}")]
pub struct BadCheckMode(pub String);

impl CheckMode {
    /// The stored and written form.
    pub fn as_str(self) -> &'static str {
        match self {
            CheckMode::Off => "off",
            CheckMode::Report => "report",
            CheckMode::Fallback => "fallback",
        }
    }

    /// Reads the stored and written form (exact, lower case).
    pub fn parse(s: &str) -> Result<Self, BadCheckMode> {
        match s {
            "off" => Ok(CheckMode::Off),
            "report" => Ok(CheckMode::Report),
            "fallback" => Ok(CheckMode::Fallback),
            other => Err(BadCheckMode(other.chars().take(64).collect())),
        }
    }
}

/// True when a link with `mode` is probed at all.
pub fn probed(mode: Option<CheckMode>) -> bool {
    mode != Some(CheckMode::Off)
}

/// True when a link with `mode` may be answered with the fallback at all
/// (`off` and `report` never are: setting either ends a broken spell at
/// once; the stores' link updates mirror this in SQL).
pub fn may_fall_back(mode: Option<CheckMode>) -> bool {
    !matches!(mode, Some(CheckMode::Off | CheckMode::Report))
}

/// Failed probes in a row after which a link with `mode` is answered
/// with the fallback, given the site's `fallback_after`; 0: never.
pub fn fallback_after(mode: Option<CheckMode>, site: u32) -> u32 {
    match mode {
        None => site,
        Some(CheckMode::Off | CheckMode::Report) => 0,
        Some(CheckMode::Fallback) if site == 0 => DEFAULT_FALLBACK_AFTER,
        Some(CheckMode::Fallback) => site,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_link_wins_over_the_site() {
        assert_eq!(fallback_after(None, 0), 0);
        assert_eq!(fallback_after(None, 5), 5);
        assert_eq!(fallback_after(Some(CheckMode::Report), 5), 0);
        assert_eq!(fallback_after(Some(CheckMode::Off), 5), 0);
        assert_eq!(fallback_after(Some(CheckMode::Fallback), 5), 5);
        assert_eq!(
            fallback_after(Some(CheckMode::Fallback), 0),
            DEFAULT_FALLBACK_AFTER
        );
        assert!(probed(None));
        assert!(probed(Some(CheckMode::Report)));
        assert!(!probed(Some(CheckMode::Off)));
        assert!(may_fall_back(None));
        assert!(may_fall_back(Some(CheckMode::Fallback)));
        assert!(!may_fall_back(Some(CheckMode::Off)));
        assert!(!may_fall_back(Some(CheckMode::Report)));
    }

    #[test]
    fn the_written_form_reads_back_and_nothing_else_does() {
        for m in [CheckMode::Off, CheckMode::Report, CheckMode::Fallback] {
            assert_eq!(CheckMode::parse(m.as_str()), Ok(m));
            let json = serde_json::to_string(&m).unwrap();
            assert_eq!(json, format!("\"{}\"", m.as_str()));
        }
        for bad in ["", "OFF", "on", "fallback "] {
            assert!(CheckMode::parse(bad).is_err(), "{bad:?}");
        }
        assert!(serde_json::from_str::<CheckMode>("\"never\"").is_err());
    }
}
