//! A new link's row as PostgreSQL stores it: the column list and the
//! stored forms of the values, one home for the single insert
//! (`links::insert_row`), the plain create (`plain::insert_one`) and the
//! bulk insert (`bulk::insert`, a binary `COPY`).

use shortlink_core::check_mode::CheckMode;
use tokio_postgres::types::{ToSql, Type};

use super::rows::bigint;
use crate::store::links::{country_targets_to_stored, variants_to_stored};
use crate::store::{Link, StoreResult};

/// The columns a new link is written with, as a literal for `concat!`;
/// [`Values::params`] answers in this order.
macro_rules! insert_columns {
    () => {
        "id, alias, url, created_at, updated_at, expires_at, renew_ttl, max_visits, \
         redirect, target_desktop, target_mobile, target_ios, target_android, disabled, tags, \
         created_by, dedupe_hash, forward_query, country_targets, password_hash, variants, \
         team_id, check_mode, title"
    };
}
pub(super) use insert_columns;

/// How many [`insert_columns!`] there are.
pub(super) const COLUMNS: usize = 24;

/// The type of each of [`insert_columns!`], for a binary `COPY`.
pub(super) const COLUMN_TYPES: [Type; COLUMNS] = [
    Type::INT8,  // id
    Type::TEXT,  // alias
    Type::TEXT,  // url
    Type::INT8,  // created_at
    Type::INT8,  // updated_at
    Type::INT8,  // expires_at
    Type::INT8,  // renew_ttl
    Type::INT8,  // max_visits
    Type::INT4,  // redirect
    Type::TEXT,  // target_desktop
    Type::TEXT,  // target_mobile
    Type::TEXT,  // target_ios
    Type::TEXT,  // target_android
    Type::BOOL,  // disabled
    Type::TEXT,  // tags
    Type::TEXT,  // created_by
    Type::BYTEA, // dedupe_hash
    Type::BOOL,  // forward_query
    Type::TEXT,  // country_targets
    Type::TEXT,  // password_hash
    Type::TEXT,  // variants
    Type::INT8,  // team_id
    Type::TEXT,  // check_mode
    Type::TEXT,  // title
];

/// A new link's values in their stored forms, for [`insert_columns!`].
pub(super) struct Values<'a> {
    pub link: &'a Link,
    pub id: i64,
    pub hash: &'a [u8],
    pub redirect: Option<i32>,
    pub tags: String,
    pub country_targets: Option<String>,
    pub variants: Option<String>,
    pub check: Option<&'static str>,
}

impl<'a> Values<'a> {
    /// `link` with its dedupe `hash` (stored for every link).
    pub(super) fn new(link: &'a Link, hash: &'a [u8]) -> StoreResult<Self> {
        Ok(Values {
            link,
            id: bigint(link.id)?,
            hash,
            redirect: link.redirect.map(i32::from),
            tags: serde_json::to_string(&link.tags).unwrap_or_else(|_| "[]".into()),
            country_targets: country_targets_to_stored(&link.country_targets),
            variants: variants_to_stored(&link.variants),
            check: link.check.map(CheckMode::as_str),
        })
    }

    /// The values as `$1` to `$24`, in [`insert_columns!`] order.
    pub(super) fn params(&self) -> [&(dyn ToSql + Sync); COLUMNS] {
        let l = self.link;
        [
            &self.id,
            &l.alias,
            &l.url,
            &l.created_at,
            &l.updated_at,
            &l.expires_at,
            &l.renew_ttl,
            &l.max_visits,
            &self.redirect,
            &l.targets.desktop,
            &l.targets.mobile,
            &l.targets.ios,
            &l.targets.android,
            &l.disabled,
            &self.tags,
            &l.created_by,
            &self.hash,
            &l.forward_query,
            &self.country_targets,
            &l.password_hash,
            &self.variants,
            &l.team_id,
            &self.check,
            &l.title,
        ]
    }
}
