//! Countries of clicks and country targets (`shortlink_country $variable`).
//!
//! The edge reads the visitor's country from any nginx variable the
//! operator fills (the `geo` module, GeoIP2, a CDN header such as
//! `CF-IPCountry`): an ISO 3166-1 alpha-2 code. The one rule for both
//! sides:
//!
//! * a code is two ASCII letters naming an officially assigned ISO 3166-1
//!   alpha-2 country, or `XK` (Kosovo, user-assigned but what GeoIP
//!   databases report); lower case is accepted and normalised to upper
//!   case (`de` is `DE`);
//! * at the edge, anything else (no variable, an empty value, `XX` or `T1`
//!   from Cloudflare, `EU`, garbage) is the unknown country, [`UNKNOWN`],
//!   stored and reported as `--`;
//! * at the API, anything else is refused ([`CountryError`]), so a link
//!   never carries a target no visitor can reach.
//!
//! The edge's parse runs per counted redirect: no allocation, a table
//! lookup. Which target a visitor gets is `choice.rs`'s rule.

use serde::{Deserialize, Serialize};

/// The officially assigned ISO 3166-1 alpha-2 codes (249), plus `XK`.
const CODES: &str = "AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ \
BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ BR BS BT BV BW BY BZ \
CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ \
DE DJ DK DM DO DZ EC EE EG EH ER ES ET FI FJ FK FM FO FR \
GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS GT GU GW GY \
HK HM HN HR HT HU ID IE IL IM IN IO IQ IR IS IT JE JM JO JP \
KE KG KH KI KM KN KP KR KW KY KZ LA LB LC LI LK LR LS LT LU LV LY \
MA MC MD ME MF MG MH MK ML MM MN MO MP MQ MR MS MT MU MV MW MX MY MZ \
NA NC NE NF NG NI NL NO NP NR NU NZ OM PA PE PF PG PH PK PL PM PN PR PS PT PW PY \
QA RE RO RS RU RW SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR SS ST SV SX SY SZ \
TC TD TF TG TH TJ TK TL TM TN TO TR TT TV TW TZ UA UG UM US UY UZ \
VA VC VE VG VI VN VU WF WS XK YE YT ZA ZM ZW";

/// One bit per second letter, one word per first letter.
const ASSIGNED: [u32; 26] = assigned();

const fn assigned() -> [u32; 26] {
    let mut out = [0u32; 26];
    let b = CODES.as_bytes();
    let mut i = 0;
    while i + 1 < b.len() {
        out[(b[i] - b'A') as usize] |= 1 << (b[i + 1] - b'A');
        i += 3;
    }
    out
}

/// A link's targets per visitor country, at most one per country, in
/// code order.
pub type CountryTargets = Vec<(Country, String)>;

/// Most country targets a link may carry.
pub const MAX_COUNTRY_TARGETS: usize = 16;

/// A visitor's country: an assigned ISO 3166-1 alpha-2 code in upper case,
/// or [`UNKNOWN`] (`--`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Country([u8; 2]);

/// The country of a visit with no (or no valid) country code.
pub const UNKNOWN: Country = Country(*b"--");

impl Default for Country {
    fn default() -> Self {
        UNKNOWN
    }
}

/// Why a country code was refused at the API.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CountryError {
    #[error("country code {0:?} is not two letters (ISO 3166-1 alpha-2, such as DE or US)")]
    NotTwoLetters(String),
    #[error("country code {0:?} is not an assigned ISO 3166-1 alpha-2 code")]
    Unassigned(String),
}

impl Country {
    /// The country of an edge value (an nginx variable's bytes): the code
    /// upper-cased when it is assigned, else [`UNKNOWN`]. Never allocates.
    #[inline]
    pub fn from_edge(value: &[u8]) -> Country {
        match value {
            [a, b] => {
                let (a, b) = (a.to_ascii_uppercase(), b.to_ascii_uppercase());
                if a.is_ascii_uppercase()
                    && b.is_ascii_uppercase()
                    && ASSIGNED[usize::from(a - b'A')] & (1 << (b - b'A')) != 0
                {
                    Country([a, b])
                } else {
                    UNKNOWN
                }
            }
            _ => UNKNOWN,
        }
    }

    /// A code given at the API (a country target's key): trimmed, lower
    /// case normalised to upper case, refused unless assigned.
    pub fn parse(text: &str) -> Result<Country, CountryError> {
        let t = text.trim();
        if t.len() != 2 || !t.bytes().all(|b| b.is_ascii_alphabetic()) {
            return Err(CountryError::NotTwoLetters(text.chars().take(16).collect()));
        }
        match Country::from_edge(t.as_bytes()) {
            UNKNOWN => Err(CountryError::Unassigned(t.to_ascii_uppercase())),
            c => Ok(c),
        }
    }

    /// A code as stored: [`UNKNOWN`] for anything not a valid code (a row
    /// written by hand; never refuses, so a read never fails on it).
    pub fn from_stored(text: &str) -> Country {
        Country::from_edge(text.as_bytes())
    }

    /// The two bytes (`--` for unknown).
    pub fn bytes(self) -> [u8; 2] {
        self.0
    }

    /// The code as text (`--` for unknown).
    pub fn as_str(&self) -> &str {
        // Both constructors only make ASCII.
        std::str::from_utf8(&self.0).unwrap_or("--")
    }

    /// True for [`UNKNOWN`].
    pub fn is_unknown(self) -> bool {
        self == UNKNOWN
    }
}

impl std::fmt::Display for Country {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_holds_every_assigned_code_and_xk() {
        let n: u32 = ASSIGNED.iter().map(|w| w.count_ones()).sum();
        assert_eq!(n, 250);
        for code in ["DE", "US", "GB", "JP", "ZW", "AD", "XK", "SS", "BQ"] {
            assert_eq!(Country::from_edge(code.as_bytes()).as_str(), code);
        }
    }

    #[test]
    fn edge_values_normalise_or_are_unknown() {
        assert_eq!(Country::from_edge(b"de").as_str(), "DE");
        assert_eq!(Country::from_edge(b"dE").as_str(), "DE");
        for bad in [
            &b""[..],
            b"D",
            b"DEU",
            b"XX",
            b"T1",
            b"EU",
            b"UK",
            b"--",
            b"\xff\xfe",
            b"D ",
            b"[Z",
            b"{a",
        ] {
            assert_eq!(Country::from_edge(bad), UNKNOWN, "{bad:?}");
        }
    }

    #[test]
    fn the_api_parse_names_what_is_wrong() {
        assert_eq!(Country::parse(" fr ").unwrap().as_str(), "FR");
        assert!(matches!(
            Country::parse("DEU"),
            Err(CountryError::NotTwoLetters(_))
        ));
        assert!(matches!(
            Country::parse("--"),
            Err(CountryError::NotTwoLetters(_))
        ));
        let err = Country::parse("zz").unwrap_err();
        assert_eq!(err, CountryError::Unassigned("ZZ".into()));
        assert!(err.to_string().contains("\"ZZ\""));
    }

    #[test]
    fn stored_text_never_fails() {
        assert_eq!(Country::from_stored("NL").as_str(), "NL");
        assert_eq!(Country::from_stored("--"), UNKNOWN);
        assert_eq!(Country::from_stored("anything"), UNKNOWN);
        assert_eq!(Country::default(), UNKNOWN);
    }

    #[test]
    fn postcard_carries_two_bytes() {
        let bytes = postcard::to_allocvec(&Country::parse("SE").unwrap()).unwrap();
        assert_eq!(bytes, b"SE");
    }
}
