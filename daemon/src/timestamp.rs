//! Points in time: now ([`unix_now`]) and on the wire. The store keeps Unix
//! seconds; replies carry RFC 3339 in UTC (`2026-11-23T15:30:00Z`), and
//! inputs (bodies, query parameters, CSV rows, old export files) may give
//! either.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;
use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, OneOfBuilder, SchemaFormat, Type};
use utoipa::openapi::{RefOr, Schema};

/// Parses Unix seconds or RFC 3339 (API bodies, query parameters, CSV rows).
pub fn parse_time(s: &str) -> Result<i64, String> {
    if let Ok(t) = s.trim().parse::<i64>() {
        return Ok(t);
    }
    OffsetDateTime::parse(s.trim(), &Rfc3339)
        .map(|t| t.unix_timestamp())
        .map_err(|_| format!("\"{s}\" is neither Unix seconds nor an RFC 3339 time"))
}

/// The first second RFC 3339 can write (0000-01-01T00:00:00Z).
pub const EARLIEST: i64 = -62_167_219_200;
/// The last second RFC 3339 can write (9999-12-31T23:59:59Z).
pub const LATEST: i64 = 253_402_300_799;

/// `t` (Unix seconds) in RFC 3339, UTC, whole seconds; `None` outside the
/// years 0000 to 9999, which RFC 3339 cannot write.
pub fn format_time(t: i64) -> Option<String> {
    OffsetDateTime::from_unix_timestamp(t)
        .ok()
        .and_then(|t| t.format(&Rfc3339).ok())
}

/// A point in time in a reply: Unix seconds inside, RFC 3339 on the wire.
/// It reads back from either form, so a client of an older daemon (or an
/// old export file) still parses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(pub i64);

impl Timestamp {
    /// Unix seconds.
    pub fn unix(self) -> i64 {
        self.0
    }
}

impl From<i64> for Timestamp {
    fn from(t: i64) -> Self {
        Timestamp(t)
    }
}

impl std::fmt::Display for Timestamp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match format_time(self.0) {
            Some(s) => f.write_str(&s),
            None => write!(f, "{}", self.0),
        }
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match format_time(self.0) {
            Some(text) => s.serialize_str(&text),
            None => Err(serde::ser::Error::custom(format!(
                "time {} (Unix seconds) is outside the years 0000 to 9999 that RFC 3339 can write",
                self.0
            ))),
        }
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Either {
            Unix(i64),
            Text(String),
        }
        match Either::deserialize(d)? {
            Either::Unix(t) => Ok(Timestamp(t)),
            Either::Text(s) => parse_time(&s)
                .map(Timestamp)
                .map_err(serde::de::Error::custom),
        }
    }
}

impl utoipa::PartialSchema for Timestamp {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::DateTime)))
            .description(Some("RFC 3339, UTC"))
            .examples([serde_json::json!("2026-11-23T15:30:00Z")])
            .into()
    }
}

impl utoipa::ToSchema for Timestamp {}

/// An input time in the OpenAPI document: RFC 3339, or Unix seconds.
pub fn input_schema() -> Schema {
    OneOfBuilder::new()
        .item(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .format(Some(SchemaFormat::KnownFormat(KnownFormat::DateTime)))
                .description(Some("RFC 3339")),
        )
        .item(
            ObjectBuilder::new()
                .schema_type(Type::Integer)
                .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
                .description(Some("Unix seconds")),
        )
        .into()
}

/// A query parameter's time as the OpenAPI document states it
/// ([`input_schema`]); the handler reads the text with [`parse_time`].
pub struct TimeText;

impl utoipa::PartialSchema for TimeText {
    fn schema() -> RefOr<Schema> {
        input_schema().into()
    }
}

impl utoipa::ToSchema for TimeText {}

/// [`input_schema`] or `null` (in a body: absent, or cleared on an edit).
pub fn input_or_null_schema() -> Schema {
    OneOfBuilder::new()
        .item(input_schema())
        .item(ObjectBuilder::new().schema_type(Type::Null))
        .into()
}

/// Seconds since the Unix epoch.
pub fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_carry_rfc3339_and_read_back_either_form() {
        let t = Timestamp(1_795_447_800);
        let json = serde_json::to_string(&t).unwrap();
        assert_eq!(json, "\"2026-11-23T15:30:00Z\"");
        assert_eq!(serde_json::from_str::<Timestamp>(&json).unwrap(), t);
        assert_eq!(serde_json::from_str::<Timestamp>("1795447800").unwrap(), t);
        assert_eq!(
            serde_json::from_str::<Timestamp>("\"2026-11-23T16:30:00+01:00\"").unwrap(),
            t
        );
        let err = serde_json::from_str::<Timestamp>("\"soon\"").unwrap_err();
        assert!(err.to_string().contains("\"soon\" is neither"), "{err}");
        assert_eq!(
            serde_json::to_string(&Some(Timestamp(0))).unwrap(),
            "\"1970-01-01T00:00:00Z\""
        );
    }

    #[test]
    fn a_time_rfc3339_cannot_write_is_an_error_not_a_panic() {
        for t in [i64::MAX, i64::MIN, 253_402_300_800, -62_167_219_201] {
            let err = serde_json::to_string(&Timestamp(t)).unwrap_err();
            assert!(err.to_string().contains(&t.to_string()), "{err}");
            assert_eq!(Timestamp(t).to_string(), t.to_string());
        }
        assert!(format_time(253_402_300_799).is_some());
    }
}
