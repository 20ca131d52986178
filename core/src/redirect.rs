//! The redirect statuses a link or a location may answer with: the one home
//! of the set 301, 302, 307, 308, shared by the daemon's validation, the
//! module's directive parser and its answer path.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A redirect status: permanent or temporary, method-preserving or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "u16", into = "u16")]
pub enum RedirectStatus {
    /// 301 Moved Permanently.
    MovedPermanently,
    /// 302 Found: nginx's and the module's default.
    Found,
    /// 307 Temporary Redirect: keeps the method and body.
    TemporaryRedirect,
    /// 308 Permanent Redirect: keeps the method and body.
    PermanentRedirect,
}

/// The status number is not a redirect status a link may carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("redirect must be 301, 302, 307 or 308; got {0}")]
pub struct NotARedirect(pub u16);

impl RedirectStatus {
    /// Every status, in numeric order.
    pub const ALL: [RedirectStatus; 4] = [
        RedirectStatus::MovedPermanently,
        RedirectStatus::Found,
        RedirectStatus::TemporaryRedirect,
        RedirectStatus::PermanentRedirect,
    ];

    /// The status line's number.
    pub const fn code(self) -> u16 {
        match self {
            RedirectStatus::MovedPermanently => 301,
            RedirectStatus::Found => 302,
            RedirectStatus::TemporaryRedirect => 307,
            RedirectStatus::PermanentRedirect => 308,
        }
    }

    /// The reason phrase, for forms and docs.
    pub const fn reason(self) -> &'static str {
        match self {
            RedirectStatus::MovedPermanently => "Moved Permanently",
            RedirectStatus::Found => "Found",
            RedirectStatus::TemporaryRedirect => "Temporary Redirect",
            RedirectStatus::PermanentRedirect => "Permanent Redirect",
        }
    }

    /// The status for a number, if it is one of the four.
    pub const fn from_code(code: u16) -> Option<RedirectStatus> {
        match code {
            301 => Some(RedirectStatus::MovedPermanently),
            302 => Some(RedirectStatus::Found),
            307 => Some(RedirectStatus::TemporaryRedirect),
            308 => Some(RedirectStatus::PermanentRedirect),
            _ => None,
        }
    }

    /// Parses the digits of a directive argument or a form field.
    pub fn parse(text: &[u8]) -> Option<RedirectStatus> {
        match text {
            b"301" => Some(RedirectStatus::MovedPermanently),
            b"302" => Some(RedirectStatus::Found),
            b"307" => Some(RedirectStatus::TemporaryRedirect),
            b"308" => Some(RedirectStatus::PermanentRedirect),
            _ => None,
        }
    }
}

impl TryFrom<u16> for RedirectStatus {
    type Error = NotARedirect;

    fn try_from(code: u16) -> Result<Self, NotARedirect> {
        RedirectStatus::from_code(code).ok_or(NotARedirect(code))
    }
}

impl From<RedirectStatus> for u16 {
    fn from(status: RedirectStatus) -> u16 {
        status.code()
    }
}

impl fmt::Display for RedirectStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_four_round_trip_and_nothing_else_parses() {
        for status in RedirectStatus::ALL {
            let code = status.code();
            assert_eq!(RedirectStatus::from_code(code), Some(status));
            assert_eq!(
                RedirectStatus::parse(code.to_string().as_bytes()),
                Some(status)
            );
            assert_eq!(u16::from(status), code);
        }
        for code in [0, 200, 300, 303, 304, 305, 306, 309, 404, 3010] {
            assert_eq!(RedirectStatus::from_code(code), None, "{code}");
            assert_eq!(RedirectStatus::try_from(code), Err(NotARedirect(code)));
        }
        for text in [&b""[..], b"30", b"3022", b" 302", b"302 ", b"+302", b"0302"] {
            assert_eq!(RedirectStatus::parse(text), None, "{text:?}");
        }
    }

    #[test]
    fn serde_uses_the_number() {
        let json = serde_json_like(RedirectStatus::TemporaryRedirect);
        assert_eq!(json, 307);
        let back: Result<RedirectStatus, _> =
            postcard::from_bytes(&postcard::to_allocvec(&303u16).expect("encode a u16"));
        assert!(back.is_err(), "303 must not decode as a redirect status");
    }

    fn serde_json_like(status: RedirectStatus) -> u16 {
        let bytes = postcard::to_allocvec(&status).expect("encode");
        postcard::from_bytes::<u16>(&bytes).expect("decodes as its number")
    }

    #[test]
    fn error_names_the_set_and_the_value() {
        assert_eq!(
            NotARedirect(303).to_string(),
            "redirect must be 301, 302, 307 or 308; got 303"
        );
    }
}
