//! What one import call carries and answers: the compact rows the CLI
//! sends and the outcome (counts, refused rows, rows imported with a
//! change) the daemon sends back.

use serde::{Deserialize, Serialize};

use crate::links::input::TargetsInput;

/// One CSV row of `shortlinkd import`, as the CLI sends it:
/// `[line, url, alias, expires_at, tags, extra]` (`extra` may be left out).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ImportRow(
    pub u64,
    pub String,
    pub Option<String>,
    pub Option<String>,
    pub Option<Vec<String>>,
    #[serde(default)] pub ImportExtra,
);

/// The columns of an `export` file beyond the basic four, each judged like
/// the same field of a create, and what a foreign file says about a link.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportExtra {
    /// Redirect status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirect: Option<u16>,
    /// Visit limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_visits: Option<u64>,
    /// Device targets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub targets: Option<TargetsInput>,
    /// Stored switched off.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub disabled: bool,
    /// Why the file's own flags switched it off (another shortener's
    /// ban, password or archive), for the import's note.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled_because: Option<String>,
    /// The link's own `forward_query`; absent: the location decides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forward_query: Option<bool>,
    /// Targets per visitor country (code to URL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub country_targets: Option<std::collections::BTreeMap<String, String>>,
    /// A/B variants (weight and URL), in order.
    pub variants: Option<Vec<crate::links::VariantInput>>,
    /// The link's own choice about the link checker; absent: the site's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<shortlink_core::check_mode::CheckMode>,
    /// When the link was first made (Unix seconds or RFC 3339; not in the
    /// future); absent: now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    /// The generated code an `export` of this deployment wrote: the link
    /// keeps it (its id) when that id is free here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// The link's title; absent: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Click total to restore, bots included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clicks: Option<u64>,
    /// The bot share of `clicks`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bot_clicks: Option<u64>,
    /// `renew_on_access`: seconds each visit pushes the expiry out to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renew_ttl: Option<u64>,
    /// The name of the link's team (kept by an import that sees every
    /// team; another importer's links go into its own team).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub team: Option<String>,
    /// Who made the link (kept by an import that sees every team).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub creator: Option<String>,
    /// The alias is another shortener's code: when our alias rules refuse
    /// it, or another link has it, the link is imported without it (and a
    /// note says why) instead of the row being refused.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub alias_optional: bool,
}

/// A refused import row, or a note on a row imported with a change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportError {
    /// The row's line in the file.
    pub line: u64,
    /// The field at fault, when one is.
    pub field: Option<String>,
    /// What is wrong with the row.
    pub message: String,
}

/// What one import call did.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ImportOutcome {
    /// Rows stored as new links.
    pub imported: usize,
    /// Rows skipped because the link was already stored before this call
    /// (a re-import): same generated code and URL, same alias and URL, or
    /// a live link made from the same URL and options.
    #[serde(default)]
    pub present: usize,
    /// Rows refused, each with its line.
    pub errors: Vec<ImportError>,
    /// Rows imported with a change, each with its line: the foreign code
    /// dropped (not a valid alias here, or taken), or a new generated code
    /// (the exported one taken here, or made under another key).
    #[serde(default)]
    pub notes: Vec<ImportError>,
}
