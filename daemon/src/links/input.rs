//! What clients send to create and edit links: the bodies of
//! `POST /api/v1/links` and `PATCH /api/v1/links/{code}` and their parts.
//! Shapes only; [`super::rules`] judges the values.

use std::collections::BTreeMap;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};

use shortlink_core::check_mode::CheckMode;
use shortlink_core::RedirectStatus;
use utoipa::openapi::schema::{
    ArrayBuilder, ObjectBuilder, OneOfBuilder, Schema, SchemaType, Type,
};
use utoipa::ToSchema;

/// Largest visit limit (the store keeps it as a signed 64-bit count).
pub const MAX_VISITS: u64 = i64::MAX as u64;

/// How a refused visit limit's message starts (the API finds it in the
/// parser's message too).
pub(crate) const MAX_VISITS_RANGE: &str = "max_visits must be a whole number from 1 to";

/// What a refused visit limit is told: the range, and what was sent.
pub(crate) fn max_visits_range(got: impl std::fmt::Display) -> String {
    format!("{MAX_VISITS_RANGE} {MAX_VISITS}; got {got}")
}

/// Most links in one batch call.
pub const MAX_BATCH: usize = 10_000;

/// Most tags per link.
pub const MAX_TAGS: usize = 32;
/// Longest tag.
pub const MAX_TAG_LEN: usize = 64;
/// Longest lifetime accepted (100 years), in seconds.
pub(crate) const MAX_TTL: u64 = 100 * 366 * 86_400;

/// A tag as the OpenAPI document states it (`rules::check_tags` judges):
/// no control characters or `, ; |`, no surrounding space (trimmed).
const TAG_PATTERN: &str =
    r"^[^\s\x00-\x1f\x7f-\x9f,;|]([^\x00-\x1f\x7f-\x9f,;|]*[^\s\x00-\x1f\x7f-\x9f,;|])?$";

/// `tags` in the OpenAPI document: at most [`MAX_TAGS`] of 1 to
/// [`MAX_TAG_LEN`] characters.
fn tags_schema(null: bool) -> Schema {
    let item = ObjectBuilder::new()
        .schema_type(Type::String)
        .min_length(Some(1))
        .max_length(Some(MAX_TAG_LEN))
        .pattern(Some(TAG_PATTERN));
    let t = if null {
        SchemaType::from_iter([Type::Array, Type::Null])
    } else {
        SchemaType::Type(Type::Array)
    };
    ArrayBuilder::new()
        .schema_type(t)
        .items(item)
        .max_items(Some(MAX_TAGS))
        .description(Some(
            "Free-form labels: at most 32, each 1 to 64 characters without control characters or `, ; |`",
        ))
        .into()
}

/// `tags` of a create (`null`: none).
fn tags_create_schema() -> Schema {
    tags_schema(true)
}

/// `tags` of an edit (replaces them; `null` is refused).
fn tags_edit_schema() -> Schema {
    tags_schema(false)
}

/// A redirect status in the OpenAPI document: 301, 302, 307 or 308, or
/// `null` for the edge's default.
/// `renew_on_access`: `true` (renew by the lifetime), `false` (on an edit:
/// stop), or seconds (1 to 100 years).
fn renew_schema(null: bool) -> Schema {
    let mut one = OneOfBuilder::new()
        .item(ObjectBuilder::new().schema_type(Type::Boolean))
        .item(
            ObjectBuilder::new()
                .schema_type(Type::Integer)
                .minimum(Some(1))
                .maximum(Some(MAX_TTL)),
        );
    if null {
        one = one.item(ObjectBuilder::new().schema_type(Type::Null));
    }
    one.into()
}

fn renew_create_schema() -> Schema {
    renew_schema(true)
}

fn renew_edit_schema() -> Schema {
    renew_schema(false)
}

fn redirect_schema() -> Schema {
    let mut values: Vec<serde_json::Value> = RedirectStatus::ALL
        .iter()
        .map(|s| s.code().into())
        .collect();
    values.push(serde_json::Value::Null);
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Integer, Type::Null]))
        .enum_values(Some(values))
        .description(Some(
            "Redirect status: 301, 302, 307 or 308; null: the edge's default",
        ))
        .into()
}

/// `check`: one of the link checker's modes, or `null` for the site's.
pub(crate) fn check_schema() -> Schema {
    let mut values: Vec<serde_json::Value> =
        [CheckMode::Off, CheckMode::Report, CheckMode::Fallback]
            .iter()
            .map(|m| m.as_str().into())
            .collect();
    values.push(serde_json::Value::Null);
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::String, Type::Null]))
        .enum_values(Some(values))
        .description(Some(
            "The link checker for this link: off (never probed), report (never sent to the fallback) or fallback; null: the site's [checker] settings",
        ))
        .into()
}

/// A point in time: Unix seconds or an RFC 3339 string.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum TimeInput {
    /// Seconds since the Unix epoch.
    Unix(i64),
    /// RFC 3339, e.g. `2030-01-01T00:00:00Z`.
    Text(String),
}

impl TimeInput {
    /// Unix seconds.
    pub fn to_unix(&self) -> Result<i64, String> {
        match self {
            TimeInput::Unix(t) => Ok(*t),
            TimeInput::Text(s) => parse_time(s),
        }
    }
}

pub use crate::timestamp::parse_time;

/// Renew-on-access: `true` renews by the link's lifetime, a number by that
/// many seconds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum RenewInput {
    /// `true`: renew by the lifetime given with `ttl` or `expires_at`.
    Flag(bool),
    /// Renew by this many seconds.
    Seconds(u64),
}

/// Device-specific targets; each must pass the same rules as `url`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TargetsInput {
    /// Target for desktop browsers.
    pub desktop: Option<String>,
    /// Target for phones and tablets other than iOS and Android.
    pub mobile: Option<String>,
    /// Target for iPhones and iPads.
    pub ios: Option<String>,
    /// Target for Android devices.
    pub android: Option<String>,
}

/// Body of `POST /api/v1/links` (and each item of a batch).
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateLink {
    /// Absolute http(s) URL to redirect to.
    #[schema(example = "https://example.com/landing?utm_source=x", min_length = 1)]
    pub url: String,
    /// Custom alias (1-64 of `0-9A-Za-z-_`), reachable besides the generated code.
    #[schema(pattern = r"^[0-9A-Za-z_-]{1,64}$")]
    pub alias: Option<String>,
    /// Expiry as Unix seconds or RFC 3339; exclusive with `ttl`.
    #[schema(schema_with = crate::timestamp::input_or_null_schema)]
    pub expires_at: Option<TimeInput>,
    /// Lifetime in seconds from now (at most 100 years); exclusive with
    /// `expires_at`.
    #[schema(minimum = 1, maximum = 3_162_240_000_u64)]
    pub ttl: Option<u64>,
    /// Extend the expiry on every use (`true`, or a number of seconds).
    #[schema(schema_with = renew_create_schema)]
    pub renew_on_access: Option<RenewInput>,
    /// Human visits after which the link is gone (1 to 2^63 - 1).
    #[serde(default, deserialize_with = "visit_limit")]
    #[schema(minimum = 1, maximum = 9_223_372_036_854_775_807_u64)]
    pub max_visits: Option<u64>,
    /// Redirect status: 301, 302, 307 or 308.
    #[schema(schema_with = redirect_schema)]
    pub redirect: Option<u16>,
    /// Device-specific targets.
    pub targets: Option<TargetsInput>,
    /// Free-form labels for filtering.
    #[schema(schema_with = tags_create_schema)]
    pub tags: Option<Vec<String>>,
    /// Return the existing live link created with the same URL and options.
    pub dedupe: Option<bool>,
    /// Create switched off.
    pub disabled: Option<bool>,
    /// Append the visit's query string to the target (`true`) or never
    /// (`false`), whatever the location's `shortlink_forward_query` says;
    /// absent or `null`: the location decides.
    #[schema(value_type = Option<bool>, nullable)]
    pub forward_query: Option<bool>,
    /// Targets per visitor country: ISO 3166-1 alpha-2 code (lower case is
    /// taken as upper case) to URL, at most 16, each judged like `url`.
    /// Chosen at the edge, from nginx's `shortlink_country` variable,
    /// before the device targets.
    #[schema(schema_with = country_targets_schema)]
    pub country_targets: Option<BTreeMap<String, String>>,
    /// A password visitors must give before the redirect (1 to 1024
    /// bytes, no control characters). Stored as an argon2id hash and never
    /// returned; reads show `protected`. A protected link is never
    /// deduplicated.
    #[schema(value_type = Option<String>, write_only, min_length = 1, max_length = 1024,
        pattern = r"^[^\u0000-\u001F\u007F-\u009F]+$")]
    pub password: Option<super::password::LinkPassword>,
    /// A/B targets: up to 8 alternative URLs with whole-number weights
    /// (1 to 65535), one picked per visit by weight at the edge. They
    /// replace `url`; country and device targets win.
    #[schema(max_items = 8)]
    pub variants: Option<Vec<VariantInput>>,
    /// The background link checker for this link: `off` (never probed),
    /// `report` (probed, never sent to the fallback) or `fallback`
    /// (probed; visitors go to the fallback after `checker.fallback_after`
    /// failures in a row, 3 when that is 0); absent or `null`: the site's
    /// `[checker]` settings decide.
    #[schema(schema_with = check_schema)]
    pub check: Option<CheckMode>,
    /// A human name for the link (at most 512 characters, no control
    /// characters; blank: none), shown in lists and searched by `q`.
    #[schema(max_length = 512, pattern = r"^[^\u0000-\u001F\u007F-\u009F]*$")]
    pub title: Option<String>,
}

/// One A/B target: a URL judged like `url`, and its weight.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct VariantInput {
    /// The variant's target URL.
    pub url: String,
    /// Its share of visits: `weight / sum of weights`; 1 to 65535.
    #[schema(minimum = 1, maximum = 65_535)]
    pub weight: u64,
}

/// `country_targets`: an object of two-letter codes to URLs; `nullable`
/// for an edit, where `null` removes them all.
fn country_targets_object(nullable: bool) -> Schema {
    let types = if nullable {
        SchemaType::from_iter([Type::Object, Type::Null])
    } else {
        SchemaType::new(Type::Object)
    };
    ObjectBuilder::new()
        .schema_type(types)
        .property_names(Some(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .pattern(Some("^[A-Za-z]{2}$")),
        ))
        .additional_properties(Some(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .min_length(Some(1)),
        ))
        .max_properties(Some(shortlink_core::country::MAX_COUNTRY_TARGETS))
        .description(Some(
            "Targets per visitor country: ISO 3166-1 alpha-2 code (assigned; lower case is \
             taken as upper case) to URL, at most 16, chosen at the edge before the device \
             targets",
        ))
        .into()
}

fn country_targets_schema() -> Schema {
    country_targets_object(false)
}

fn country_targets_or_null_schema() -> Schema {
    country_targets_object(true)
}

/// Tells an absent field (`None`) from an explicit `null` (`Some(None)`).
fn double_option<'de, T, D>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    T: Deserialize<'de>,
    D: Deserializer<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

/// A visit limit read as any JSON number, so one that is no `u64`
/// (negative, fractional, past 2^64) is refused with the allowed range
/// rather than serde's "expected u64"; [`super::rules`] judges the rest.
fn visit_limit<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    match Option::<serde_json::Number>::deserialize(d)? {
        None => Ok(None),
        Some(n) => n
            .as_u64()
            .map(Some)
            .ok_or_else(|| D::Error::custom(max_visits_range(n))),
    }
}

/// [`visit_limit`] where `null` clears the limit.
fn visit_limit_or_null<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Option<u64>>, D::Error> {
    visit_limit(d).map(Some)
}

/// What a `null` on a field that cannot be cleared is told.
const NOT_CLEARABLE: &str = "cannot be cleared with null";

/// The code of a body the parser refused because of a check these shapes
/// make themselves (the rest are shape errors: `invalid_body`).
pub fn shape_error_code(message: &str) -> Option<&'static str> {
    if message.contains(NOT_CLEARABLE) {
        Some("not_clearable")
    } else if message.contains(MAX_VISITS_RANGE) {
        Some("invalid_max_visits")
    } else {
        None
    }
}

/// A field that may be left out but not cleared: an explicit `null` is
/// refused (it was once read as "absent", and the edit answered 200 having
/// done nothing).
fn not_null<'de, T, D>(d: D) -> Result<Option<T>, D::Error>
where
    T: Deserialize<'de>,
    D: Deserializer<'de>,
{
    match Option::<T>::deserialize(d)? {
        Some(v) => Ok(Some(v)),
        None => Err(D::Error::custom(format!(
            "this field {NOT_CLEARABLE}; leave it out to keep it"
        ))),
    }
}

/// Body of `PATCH /api/v1/links/{code}`: absent fields stay, `null` clears
/// the fields that can be cleared and is refused on the others.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateLink {
    /// New target URL.
    #[serde(default, deserialize_with = "not_null")]
    #[schema(nullable = false, min_length = 1)]
    pub url: Option<String>,
    /// New alias; `null` removes it.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>, nullable, pattern = r"^[0-9A-Za-z_-]{1,64}$")]
    pub alias: Option<Option<String>>,
    /// New expiry; `null` makes the link permanent.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(schema_with = crate::timestamp::input_or_null_schema)]
    pub expires_at: Option<Option<TimeInput>>,
    /// New lifetime from now, in seconds (at most 100 years).
    #[serde(default, deserialize_with = "not_null")]
    #[schema(nullable = false, minimum = 1, maximum = 3_162_240_000_u64)]
    pub ttl: Option<u64>,
    /// `false` stops renewing; `true` or seconds start it.
    #[serde(default, deserialize_with = "not_null")]
    #[schema(schema_with = renew_edit_schema)]
    pub renew_on_access: Option<RenewInput>,
    /// New visit limit; `null` removes it.
    #[serde(default, deserialize_with = "visit_limit_or_null")]
    #[schema(value_type = Option<u64>, nullable, minimum = 1, maximum = 9_223_372_036_854_775_807_u64)]
    pub max_visits: Option<Option<u64>>,
    /// New redirect status; `null` uses the edge default.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(schema_with = redirect_schema)]
    pub redirect: Option<Option<u16>>,
    /// Replaces all device targets; `null` removes them.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<TargetsInput>, nullable)]
    pub targets: Option<Option<TargetsInput>>,
    /// Replaces the tags.
    #[serde(default, deserialize_with = "not_null")]
    #[schema(schema_with = tags_edit_schema)]
    pub tags: Option<Vec<String>>,
    /// Switches the link off (`true`) or on.
    #[serde(default, deserialize_with = "not_null")]
    #[schema(nullable = false)]
    pub disabled: Option<bool>,
    /// `true` or `false` wins over the location's
    /// `shortlink_forward_query`; `null` leaves it to the location again.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<bool>, nullable)]
    pub forward_query: Option<Option<bool>>,
    /// Replaces all country targets; `null` (or `{}`) removes them.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(schema_with = country_targets_or_null_schema)]
    pub country_targets: Option<Option<BTreeMap<String, String>>>,
    /// A new password for visitors (1 to 1024 bytes); `null` removes it.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>, nullable, write_only, min_length = 1, max_length = 1024,
        pattern = r"^[^\u0000-\u001F\u007F-\u009F]+$")]
    pub password: Option<Option<super::password::LinkPassword>>,
    /// Replaces all A/B variants; `null` (or `[]`) removes them.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<Vec<VariantInput>>, nullable, max_items = 8)]
    pub variants: Option<Option<Vec<VariantInput>>>,
    /// `off`, `report` or `fallback` wins over the site's `[checker]`
    /// settings for this link; `null` leaves it to the site again.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(schema_with = check_schema)]
    pub check: Option<Option<CheckMode>>,
    /// New title (at most 512 characters); `null` or blank removes it.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>, nullable, max_length = 512,
        pattern = r"^[^\u0000-\u001F\u007F-\u009F]*$")]
    pub title: Option<Option<String>>,
}
