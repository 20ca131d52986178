//! Link operations shared by the HTTP API, the IPC server and the CLI:
//! validation of requests, creation with ids from [`crate::ids`], edits and
//! deletes that invalidate the edge, and the edge lookup.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use rusqlite::Connection;
use serde::{Deserialize, Deserializer, Serialize};
use sha2::{Digest, Sha256};
use shortlink_core::ipc::{DeviceTargets, EdgeLink, Event, LookupResult};
use shortlink_core::{validate_alias, validate_target, AliasError};
use utoipa::ToSchema;

use crate::app::{App, SharedApp};
use crate::codes::{self, CodeRef};
use crate::store::links::{self as table, Link, LinkState, ListQuery};
use crate::store::{unix_now, StoreError, StoreResult};

/// Redirect statuses a link may carry.
pub const REDIRECT_STATUSES: [u16; 4] = [301, 302, 307, 308];
/// Most links in one batch call.
pub const MAX_BATCH: usize = 10_000;
/// Most tags per link.
pub const MAX_TAGS: usize = 32;
/// Longest tag.
pub const MAX_TAG_LEN: usize = 64;
/// Longest lifetime accepted (100 years), in seconds.
const MAX_TTL: u64 = 100 * 366 * 86_400;

/// Why a link operation failed; mapped to HTTP statuses in `api::error`.
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    /// A request field is invalid.
    #[error("{message}")]
    Invalid {
        field: &'static str,
        code: &'static str,
        message: String,
    },
    /// The alias belongs to another link.
    #[error("alias \"{0}\" is already taken")]
    AliasTaken(String),
    /// No link has this code or alias.
    #[error("no link has the code \"{0}\"")]
    NotFound(String),
    /// Too many items in one batch.
    #[error("a batch holds at most {MAX_BATCH} links; this one has {0}")]
    BatchTooLarge(usize),
    /// Storage failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

fn invalid(field: &'static str, code: &'static str, message: impl Into<String>) -> LinkError {
    LinkError::Invalid {
        field,
        code,
        message: message.into(),
    }
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

/// Parses Unix seconds or RFC 3339.
pub fn parse_time(s: &str) -> Result<i64, String> {
    if let Ok(t) = s.trim().parse::<i64>() {
        return Ok(t);
    }
    time::OffsetDateTime::parse(s.trim(), &time::format_description::well_known::Rfc3339)
        .map(|t| t.unix_timestamp())
        .map_err(|_| format!("\"{s}\" is neither Unix seconds nor an RFC 3339 time"))
}

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
    pub desktop: Option<String>,
    pub mobile: Option<String>,
    pub ios: Option<String>,
    pub android: Option<String>,
}

/// Body of `POST /api/v1/links` (and each item of a batch).
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateLink {
    /// Absolute http(s) URL to redirect to.
    #[schema(example = "https://example.com/landing?utm_source=x")]
    pub url: String,
    /// Custom alias (1-64 of `0-9A-Za-z-_`), reachable besides the generated code.
    pub alias: Option<String>,
    /// Expiry as Unix seconds or RFC 3339; exclusive with `ttl`.
    pub expires_at: Option<TimeInput>,
    /// Lifetime in seconds from now; exclusive with `expires_at`.
    pub ttl: Option<u64>,
    /// Extend the expiry on every use (`true`, or a number of seconds).
    pub renew_on_access: Option<RenewInput>,
    /// Human visits after which the link is gone.
    pub max_visits: Option<u64>,
    /// Redirect status: 301, 302, 307 or 308.
    pub redirect: Option<u16>,
    /// Device-specific targets.
    pub targets: Option<TargetsInput>,
    /// Free-form labels for filtering.
    pub tags: Option<Vec<String>>,
    /// Return the existing live link created with the same URL and options.
    pub dedupe: Option<bool>,
    /// Create switched off.
    pub disabled: Option<bool>,
}

fn double_option<'de, T, D>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    T: Deserialize<'de>,
    D: Deserializer<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

/// Body of `PATCH /api/v1/links/{code}`: absent fields stay, `null` clears.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateLink {
    /// New target URL.
    pub url: Option<String>,
    /// New alias; `null` removes it.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>, nullable)]
    pub alias: Option<Option<String>>,
    /// New expiry; `null` makes the link permanent.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<TimeInput>, nullable)]
    pub expires_at: Option<Option<TimeInput>>,
    /// New lifetime from now, in seconds.
    pub ttl: Option<u64>,
    /// `false` stops renewing; `true` or seconds start it.
    pub renew_on_access: Option<RenewInput>,
    /// New visit limit; `null` removes it.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<u64>, nullable)]
    pub max_visits: Option<Option<u64>>,
    /// New redirect status; `null` uses the edge default.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<u16>, nullable)]
    pub redirect: Option<Option<u16>>,
    /// Replaces all device targets; `null` removes them.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<TargetsInput>, nullable)]
    pub targets: Option<Option<TargetsInput>>,
    /// Replaces the tags.
    pub tags: Option<Vec<String>>,
    /// Switches the link off (`true`) or on.
    pub disabled: Option<bool>,
}

/// A link as the API shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct LinkView {
    /// The alias if set, else the generated code.
    pub code: String,
    /// Public short URL built from `X-Shortlink-Base` or the configured base.
    pub short_url: String,
    /// Target URL (normalized).
    pub url: String,
    pub id: u64,
    /// The generated code; reaches the link even when it has an alias.
    pub generated_code: String,
    pub alias: Option<String>,
    /// Unix seconds.
    pub created_at: i64,
    pub updated_at: i64,
    pub expires_at: Option<i64>,
    /// Renew-on-access lifetime in seconds.
    pub renew_ttl: Option<i64>,
    pub max_visits: Option<i64>,
    pub redirect: Option<u16>,
    pub targets: TargetsInput,
    pub disabled: bool,
    pub tags: Vec<String>,
    /// `active`, `disabled`, `expired` or `exhausted`.
    pub state: String,
    /// All clicks, bots included.
    pub clicks: i64,
    /// The bot share of `clicks`.
    pub bot_clicks: i64,
    pub created_by: Option<String>,
}

impl LinkView {
    /// The view of `link` with short URLs under `base` (no trailing slash).
    pub fn new(app: &App, link: &Link, base: &str) -> Self {
        let code = codes::public(&app.codec, link);
        Self {
            short_url: format!("{base}/{code}"),
            code,
            url: link.url.clone(),
            id: link.id,
            generated_code: codes::generated(&app.codec, link),
            alias: link.alias.clone(),
            created_at: link.created_at,
            updated_at: link.updated_at,
            expires_at: link.expires_at,
            renew_ttl: link.renew_ttl,
            max_visits: link.max_visits,
            redirect: link.redirect,
            targets: TargetsInput {
                desktop: link.targets.desktop.clone(),
                mobile: link.targets.mobile.clone(),
                ios: link.targets.ios.clone(),
                android: link.targets.android.clone(),
            },
            disabled: link.disabled,
            tags: link.tags.clone(),
            state: link.state(unix_now()).as_str().into(),
            clicks: link.clicks,
            bot_clicks: link.bot_clicks,
            created_by: link.created_by.clone(),
        }
    }
}

/// A create request that passed validation.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The link to insert (its id is filled in at insert time).
    pub link: Link,
    /// Hash of the normalized URL and options, for `dedupe`.
    pub dedupe_hash: [u8; 32],
    pub dedupe: bool,
}

/// Result of a create.
#[derive(Debug, Clone)]
pub enum Created {
    /// A new link.
    New(Link),
    /// `dedupe` found this existing link.
    Existing(Link),
}

impl Created {
    /// The link either way.
    pub fn link(&self) -> &Link {
        match self {
            Created::New(l) | Created::Existing(l) => l,
        }
    }
}

fn check_alias(app: &App, alias: &str) -> Result<(), LinkError> {
    validate_alias(&app.codec, alias, &app.reserved).map_err(|e| match e {
        AliasError::Reserved(_) => invalid("alias", "alias_reserved", e.to_string()),
        _ => invalid("alias", "invalid_alias", e.to_string()),
    })
}

fn check_url(app: &App, field: &'static str, raw: &str) -> Result<String, LinkError> {
    validate_target(raw, &app.config.targets)
        .map_err(|e| invalid(field, "invalid_url", format!("{field}: {e}")))
}

fn check_targets(app: &App, t: &TargetsInput) -> Result<DeviceTargets, LinkError> {
    let one = |field, v: &Option<String>| -> Result<Option<String>, LinkError> {
        v.as_deref().map(|u| check_url(app, field, u)).transpose()
    };
    Ok(DeviceTargets {
        desktop: one("targets.desktop", &t.desktop)?,
        mobile: one("targets.mobile", &t.mobile)?,
        ios: one("targets.ios", &t.ios)?,
        android: one("targets.android", &t.android)?,
    })
}

fn check_tags(tags: &[String]) -> Result<Vec<String>, LinkError> {
    if tags.len() > MAX_TAGS {
        return Err(invalid(
            "tags",
            "invalid_tags",
            format!("at most {MAX_TAGS} tags per link; got {}", tags.len()),
        ));
    }
    let mut out: Vec<String> = Vec::with_capacity(tags.len());
    for tag in tags {
        let tag = tag.trim();
        if tag.is_empty() || tag.chars().count() > MAX_TAG_LEN {
            return Err(invalid(
                "tags",
                "invalid_tags",
                format!("tags must be 1 to {MAX_TAG_LEN} characters; got {tag:?}"),
            ));
        }
        if tag
            .chars()
            .any(|c| c.is_control() || matches!(c, ',' | ';' | '|'))
        {
            return Err(invalid(
                "tags",
                "invalid_tags",
                format!("tag {tag:?} contains a control character or one of , ; |"),
            ));
        }
        if !out.iter().any(|t| t == tag) {
            out.push(tag.to_string());
        }
    }
    Ok(out)
}

fn check_redirect(status: Option<u16>) -> Result<Option<u16>, LinkError> {
    match status {
        Some(s) if !REDIRECT_STATUSES.contains(&s) => Err(invalid(
            "redirect",
            "invalid_redirect",
            format!("redirect must be 301, 302, 307 or 308; got {s}"),
        )),
        other => Ok(other),
    }
}

fn check_ttl(field: &'static str, ttl: u64) -> Result<i64, LinkError> {
    if ttl == 0 || ttl > MAX_TTL {
        return Err(invalid(
            field,
            "invalid_expiry",
            format!("{field} must be between 1 and {MAX_TTL} seconds; got {ttl}"),
        ));
    }
    Ok(ttl as i64)
}

fn check_expires_at(input: &TimeInput, now: i64) -> Result<i64, LinkError> {
    let t = input
        .to_unix()
        .map_err(|m| invalid("expires_at", "invalid_expiry", m))?;
    if t <= now {
        return Err(invalid(
            "expires_at",
            "invalid_expiry",
            format!("expires_at {t} is not in the future (now is {now})"),
        ));
    }
    if t - now > MAX_TTL as i64 {
        return Err(invalid(
            "expires_at",
            "invalid_expiry",
            "expires_at is more than 100 years away",
        ));
    }
    Ok(t)
}

fn check_max_visits(v: u64) -> Result<i64, LinkError> {
    if v == 0 || v > i64::MAX as u64 {
        return Err(invalid(
            "max_visits",
            "invalid_max_visits",
            "max_visits must be at least 1",
        ));
    }
    Ok(v as i64)
}

/// Validates a create request.
pub fn prepare(
    app: &App,
    req: &CreateLink,
    created_by: Option<&str>,
    now: i64,
) -> Result<Prepared, LinkError> {
    let url = check_url(app, "url", &req.url)?;
    if let Some(alias) = &req.alias {
        check_alias(app, alias)?;
    }
    let ttl = req.ttl.map(|t| check_ttl("ttl", t)).transpose()?;
    let mut expires_at = match (&req.expires_at, ttl) {
        (Some(_), Some(_)) => {
            return Err(invalid(
                "ttl",
                "invalid_expiry",
                "give either expires_at or ttl, not both",
            ))
        }
        (Some(t), None) => Some(check_expires_at(t, now)?),
        (None, Some(ttl)) => Some(now + ttl),
        (None, None) => app.config.default_ttl.map(|t| now + t as i64),
    };
    let renew_ttl = match &req.renew_on_access {
        None | Some(RenewInput::Flag(false)) => None,
        Some(RenewInput::Flag(true)) => match expires_at {
            Some(e) => Some(e - now),
            None => return Err(invalid(
                "renew_on_access",
                "invalid_expiry",
                "renew_on_access needs a lifetime: give ttl or expires_at, or a number of seconds",
            )),
        },
        Some(RenewInput::Seconds(s)) => {
            let s = check_ttl("renew_on_access", *s)?;
            expires_at.get_or_insert(now + s);
            Some(s)
        }
    };
    let max_visits = req.max_visits.map(check_max_visits).transpose()?;
    let redirect = check_redirect(req.redirect)?.or(app.config.default_redirect);
    let targets = match &req.targets {
        Some(t) => check_targets(app, t)?,
        None => DeviceTargets::default(),
    };
    let tags = check_tags(req.tags.as_deref().unwrap_or_default())?;
    let disabled = req.disabled.unwrap_or(false);

    let mut sorted_tags: Vec<&str> = tags.iter().map(String::as_str).collect();
    sorted_tags.sort_unstable();
    let expiry_key = match (&req.expires_at, req.ttl) {
        (Some(_), _) => serde_json::json!(expires_at),
        (None, Some(t)) => serde_json::json!(format!("ttl:{t}")),
        (None, None) => serde_json::Value::Null,
    };
    // The same bytes as the `json!([...]).to_string()` this hash was first
    // defined with (compact JSON of an array), without building a `Value`
    // tree per link: stored hashes stay comparable.
    let canonical = serde_json::to_vec(&(
        &url,
        &req.alias,
        &expiry_key,
        renew_ttl,
        max_visits,
        redirect,
        [
            &targets.desktop,
            &targets.mobile,
            &targets.ios,
            &targets.android,
        ],
        &sorted_tags,
        disabled,
    ))
    .expect("plain values serialize");
    let dedupe_hash: [u8; 32] = Sha256::digest(&canonical).into();

    Ok(Prepared {
        link: Link {
            id: 0,
            alias: req.alias.clone(),
            url,
            created_at: now,
            updated_at: now,
            expires_at,
            renew_ttl,
            max_visits,
            redirect,
            targets,
            disabled,
            tags,
            created_by: created_by.map(str::to_string),
            clicks: 0,
            bot_clicks: 0,
        },
        dedupe_hash,
        dedupe: req.dedupe.unwrap_or(false),
    })
}

/// Inserts one prepared link inside the caller's transaction. An alias
/// conflict rolls back only this item.
fn insert_prepared(
    conn: &Connection,
    id: u64,
    prepared: Prepared,
    now: i64,
) -> StoreResult<Result<Created, LinkError>> {
    if prepared.dedupe {
        if let Some(existing) = table::by_dedupe_hash(conn, &prepared.dedupe_hash, now)? {
            return Ok(Ok(Created::Existing(existing)));
        }
    }
    let mut link = prepared.link;
    link.id = id;
    if link.alias.is_none() {
        // Only an alias can conflict; anything else fails the whole job.
        table::insert(conn, &link, Some(&prepared.dedupe_hash))?;
        return Ok(Ok(Created::New(link)));
    }
    conn.execute_batch("SAVEPOINT item")?;
    match table::insert(conn, &link, Some(&prepared.dedupe_hash)) {
        Ok(()) => {
            conn.execute_batch("RELEASE item")?;
            Ok(Ok(Created::New(link)))
        }
        Err(e) => {
            conn.execute_batch("ROLLBACK TO item; RELEASE item")?;
            match e {
                StoreError::Conflict(_) => Ok(Err(LinkError::AliasTaken(
                    link.alias.clone().unwrap_or_default(),
                ))),
                e => Err(e),
            }
        }
    }
}

/// Tells the edge about new links with aliases (and drops negative cache
/// entries it may hold for them).
async fn announce_created(app: &App, created: &[&Link]) {
    let aliases: Vec<String> = created.iter().filter_map(|l| l.alias.clone()).collect();
    if aliases.is_empty() {
        return;
    }
    let mut events = vec![Event::Aliases {
        aliases: aliases.clone(),
    }];
    events.extend(aliases.into_iter().map(|code| Event::Invalidate { code }));
    app.hub.publish(events).await;
}

/// Creates one link.
pub async fn create(
    app: &SharedApp,
    req: &CreateLink,
    created_by: Option<&str>,
) -> Result<Created, LinkError> {
    let now = unix_now();
    let prepared = prepare(app, req, created_by, now)?;
    let id = app.ids.next().await?;
    let created = app
        .store
        .write(move |c| insert_prepared(c, id, prepared, now))
        .await??;
    if let Created::New(link) = &created {
        app.metrics.links_created.fetch_add(1, Ordering::Relaxed);
        app.store.cache().put(Arc::new(link.clone()));
        announce_created(app, &[link]).await;
    }
    Ok(created)
}

/// Creates many links in one transaction; one result per item, in order.
pub async fn create_batch(
    app: &SharedApp,
    items: &[CreateLink],
    created_by: Option<&str>,
) -> Result<Vec<Result<Created, LinkError>>, LinkError> {
    if items.len() > MAX_BATCH {
        return Err(LinkError::BatchTooLarge(items.len()));
    }
    let now = unix_now();
    let prepared: Vec<Result<Prepared, LinkError>> = items
        .iter()
        .map(|req| prepare(app, req, created_by, now))
        .collect();
    let valid = prepared.iter().filter(|p| p.is_ok()).count();
    let ids = app.ids.take(valid).await?;
    let results = app
        .store
        .write(move |c| {
            let mut ids = ids.into_iter();
            let mut out = Vec::with_capacity(prepared.len());
            for p in prepared {
                match p {
                    Ok(p) => {
                        let id = ids.next().expect("one id per valid item");
                        out.push(insert_prepared(c, id, p, now)?);
                    }
                    Err(e) => out.push(Err(e)),
                }
            }
            Ok(out)
        })
        .await?;
    let new: Vec<&Link> = results
        .iter()
        .filter_map(|r| match r {
            Ok(Created::New(l)) => Some(l),
            _ => None,
        })
        .collect();
    app.metrics
        .links_created
        .fetch_add(new.len() as u64, Ordering::Relaxed);
    announce_created(app, &new).await;
    Ok(results)
}

/// Most rows in one import call.
pub const MAX_IMPORT: usize = 50_000;

/// One CSV row of `shortlinkd import`, as the CLI sends it:
/// `[line, url, alias, expires_at, tags]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ImportRow(
    pub u64,
    pub String,
    pub Option<String>,
    pub Option<String>,
    pub Option<Vec<String>>,
);

/// A refused import row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportError {
    /// The row's line in the file.
    pub line: u64,
    /// The field at fault, when one is.
    pub field: Option<String>,
    pub message: String,
}

/// What one import call did.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ImportOutcome {
    /// Rows stored as new links.
    pub imported: usize,
    /// Rows refused, each with its line.
    pub errors: Vec<ImportError>,
}

/// Imports many rows in one transaction: every row is validated like a
/// create, the good ones get ids from one block and are inserted with one
/// prepared statement, the bad ones are reported by line. Returns after the
/// commit. Only links with an alias are announced to the edge (a new
/// generated code cannot be cached there as missing: it was never handed
/// out).
pub async fn import(
    app: &SharedApp,
    rows: Vec<ImportRow>,
    created_by: Option<&str>,
) -> Result<ImportOutcome, LinkError> {
    if rows.len() > MAX_IMPORT {
        return Err(LinkError::BatchTooLarge(rows.len()));
    }
    let now = unix_now();
    let mut outcome = ImportOutcome::default();
    let mut good: Vec<(u64, Prepared)> = Vec::with_capacity(rows.len());
    for ImportRow(line, url, alias, expires_at, tags) in rows {
        let req = CreateLink {
            url,
            alias,
            expires_at: expires_at.map(TimeInput::Text),
            tags,
            ..CreateLink::default()
        };
        match prepare(app, &req, created_by, now) {
            Ok(p) => good.push((line, p)),
            Err(e) => outcome.errors.push(import_error(line, e)),
        }
    }
    let tried = good.len();
    let ids = app.ids.take(tried).await?;
    let (results, aliases) = app
        .store
        .write_bulk(move |c| {
            let mut refused = Vec::new();
            let mut aliases = Vec::new();
            for ((line, p), id) in good.into_iter().zip(ids) {
                match insert_prepared(c, id, p, now)? {
                    Ok(created) => {
                        if let Some(a) = &created.link().alias {
                            aliases.push(a.clone());
                        }
                    }
                    Err(e) => refused.push((line, e)),
                }
            }
            Ok((refused, aliases))
        })
        .await?;
    outcome.imported = tried - results.len();
    for (line, e) in results {
        outcome.errors.push(import_error(line, e));
    }
    outcome.errors.sort_by_key(|e| e.line);
    app.metrics
        .links_created
        .fetch_add(outcome.imported as u64, Ordering::Relaxed);
    if !aliases.is_empty() {
        let mut events = vec![Event::Aliases {
            aliases: aliases.clone(),
        }];
        events.extend(aliases.into_iter().map(|code| Event::Invalidate { code }));
        app.hub.publish(events).await;
    }
    Ok(outcome)
}

fn import_error(line: u64, e: LinkError) -> ImportError {
    let field = match &e {
        LinkError::Invalid { field, .. } => Some(field.to_string()),
        LinkError::AliasTaken(_) => Some("alias".to_string()),
        _ => None,
    };
    let message = match &e {
        LinkError::Invalid { message, .. } => message.clone(),
        other => other.to_string(),
    };
    ImportError {
        line,
        field,
        message,
    }
}

/// Finds the id behind a code or alias (database, not cache).
async fn resolve_id(app: &App, code: &str) -> Result<u64, LinkError> {
    match codes::resolve(&app.codec, code) {
        CodeRef::Id(id) => Ok(id),
        CodeRef::Alias(alias) => {
            let found = app.store.read(move |c| table::by_alias(c, &alias)).await?;
            found
                .map(|l| l.id)
                .ok_or_else(|| LinkError::NotFound(code.to_string()))
        }
        CodeRef::Invalid => Err(LinkError::NotFound(code.to_string())),
    }
}

/// The current link behind a code or alias, fresh from the database, with
/// every acknowledged click in its totals (folded or not).
pub async fn get(app: &App, code: &str) -> Result<Link, LinkError> {
    let by = match codes::resolve(&app.codec, code) {
        CodeRef::Id(id) => Ok(id),
        CodeRef::Alias(alias) => Err(alias),
        CodeRef::Invalid => return Err(LinkError::NotFound(code.to_string())),
    };
    let link = app
        .store
        .read_counted(move |c, clicks| {
            let link = match &by {
                Ok(id) => table::by_id(c, *id)?,
                Err(alias) => table::by_alias(c, alias)?,
            };
            Ok(link.map(|mut l| {
                clicks.apply(&mut l);
                l
            }))
        })
        .await?;
    link.ok_or_else(|| LinkError::NotFound(code.to_string()))
}

/// One page of links, with every acknowledged click in their totals.
pub async fn list(app: &App, query: ListQuery) -> Result<Vec<Link>, LinkError> {
    Ok(app
        .store
        .read_counted(move |c, clicks| {
            let mut links = table::list(c, &query)?;
            links.iter_mut().for_each(|l| clicks.apply(l));
            Ok(links)
        })
        .await?)
}

fn invalidations(app: &App, link: &Link) -> Vec<Event> {
    let mut events = vec![Event::Invalidate {
        code: codes::generated(&app.codec, link),
    }];
    if let Some(alias) = &link.alias {
        events.push(Event::Invalidate {
            code: alias.clone(),
        });
    }
    events
}

/// Applies a patch to `link` in place.
fn apply_patch(app: &App, link: &mut Link, patch: &UpdateLink, now: i64) -> Result<(), LinkError> {
    if let Some(url) = &patch.url {
        link.url = check_url(app, "url", url)?;
    }
    if let Some(alias) = &patch.alias {
        if let Some(a) = alias {
            if link.alias.as_deref() != Some(a.as_str()) {
                check_alias(app, a)?;
            }
        }
        link.alias = alias.clone();
    }
    match (&patch.expires_at, patch.ttl) {
        (Some(_), Some(_)) => {
            return Err(invalid(
                "ttl",
                "invalid_expiry",
                "give either expires_at or ttl, not both",
            ))
        }
        (Some(Some(t)), None) => link.expires_at = Some(check_expires_at(t, now)?),
        (Some(None), None) => {
            link.expires_at = None;
            link.renew_ttl = None;
        }
        (None, Some(ttl)) => link.expires_at = Some(now + check_ttl("ttl", ttl)?),
        (None, None) => {}
    }
    match &patch.renew_on_access {
        None => {}
        Some(RenewInput::Flag(false)) => link.renew_ttl = None,
        Some(RenewInput::Flag(true)) => {
            let lifetime = match (patch.ttl, link.expires_at) {
                (Some(ttl), _) => ttl as i64,
                (None, Some(e)) if e > now => e - now,
                _ => {
                    return Err(invalid(
                        "renew_on_access",
                        "invalid_expiry",
                        "renew_on_access needs a lifetime: give ttl or expires_at, or a number of seconds",
                    ))
                }
            };
            link.renew_ttl = Some(lifetime);
        }
        Some(RenewInput::Seconds(s)) => {
            let s = check_ttl("renew_on_access", *s)?;
            link.expires_at.get_or_insert(now + s);
            link.renew_ttl = Some(s);
        }
    }
    if let Some(mv) = patch.max_visits {
        link.max_visits = mv.map(check_max_visits).transpose()?;
    }
    if let Some(r) = patch.redirect {
        link.redirect = check_redirect(r)?;
    }
    if let Some(t) = &patch.targets {
        link.targets = match t {
            Some(t) => check_targets(app, t)?,
            None => DeviceTargets::default(),
        };
    }
    if let Some(tags) = &patch.tags {
        link.tags = check_tags(tags)?;
    }
    if let Some(d) = patch.disabled {
        link.disabled = d;
    }
    link.updated_at = now;
    Ok(())
}

/// Edits a link; the edge is told to drop it before this returns.
pub async fn update(app: &SharedApp, code: &str, patch: UpdateLink) -> Result<Link, LinkError> {
    let id = resolve_id(app, code).await?;
    let now = unix_now();
    let app2 = Arc::clone(app);
    let code_owned = code.to_string();
    let pending = Arc::clone(app.store.pending_clicks());
    let (old, new) = app
        .store
        .write(move |c| {
            let Some(old) = table::by_id(c, id)? else {
                return Ok(Err(LinkError::NotFound(code_owned)));
            };
            let mut new = old.clone();
            if let Err(e) = apply_patch(&app2, &mut new, &patch, now) {
                return Ok(Err(e));
            }
            match table::update(c, &new) {
                Ok(()) => {
                    // The reply shows every acknowledged click.
                    crate::store::clicks::with_overlay(c, &pending, |_, clicks| {
                        clicks.apply(&mut new);
                        Ok(())
                    })?;
                    Ok(Ok((old, new)))
                }
                Err(StoreError::Conflict(_)) => Ok(Err(LinkError::AliasTaken(
                    new.alias.clone().unwrap_or_default(),
                ))),
                Err(e) => Err(e),
            }
        })
        .await??;
    app.store.cache().forget(id, old.alias.as_deref());
    let mut events = invalidations(app, &old);
    if old.alias != new.alias {
        if let Some(a) = &old.alias {
            events.push(Event::AliasesRemoved {
                aliases: vec![a.clone()],
            });
        }
        if let Some(a) = &new.alias {
            events.push(Event::Aliases {
                aliases: vec![a.clone()],
            });
            events.push(Event::Invalidate { code: a.clone() });
        }
    }
    app.hub.publish(events).await;
    Ok(new)
}

/// Deletes a link; the edge is told before this returns.
pub async fn delete(app: &SharedApp, code: &str) -> Result<Link, LinkError> {
    let id = resolve_id(app, code).await?;
    let deleted = app
        .store
        .write(move |c| table::delete(c, id))
        .await?
        .ok_or_else(|| LinkError::NotFound(code.to_string()))?;
    app.store.cache().forget(id, deleted.alias.as_deref());
    let mut events = invalidations(app, &deleted);
    if let Some(a) = &deleted.alias {
        events.push(Event::AliasesRemoved {
            aliases: vec![a.clone()],
        });
    }
    app.hub.publish(events).await;
    Ok(deleted)
}

/// The cached link behind a code or alias (for the edge).
async fn cached(app: &App, code: &str) -> StoreResult<Option<Arc<Link>>> {
    let cache = app.store.cache();
    let generation = cache.generation();
    let found = match codes::resolve(&app.codec, code) {
        CodeRef::Id(id) => {
            if let Some(link) = cache.get(id) {
                return Ok(Some(link));
            }
            app.store.read(move |c| table::by_id(c, id)).await?
        }
        CodeRef::Alias(alias) => {
            let hit = match cache.alias_id(&alias) {
                Some(id) => cache.get(id),
                None => {
                    cache.misses.fetch_add(1, Ordering::Relaxed);
                    None
                }
            };
            if let Some(link) = hit {
                return Ok(Some(link));
            }
            app.store.read(move |c| table::by_alias(c, &alias)).await?
        }
        CodeRef::Invalid => return Ok(None),
    };
    Ok(found.map(|l| {
        let l = Arc::new(l);
        cache.put_if_current(Arc::clone(&l), generation);
        l
    }))
}

/// What the edge needs to answer a code: found, not found, or gone.
pub async fn edge_lookup(app: &App, code: &str) -> StoreResult<LookupResult> {
    let Some(link) = cached(app, code).await? else {
        return Ok(LookupResult::NotFound);
    };
    Ok(edge_result(&link, unix_now()))
}

/// The edge's view of a link at `now`.
pub fn edge_result(link: &Link, now: i64) -> LookupResult {
    match link.state(now) {
        LinkState::Active => LookupResult::Found(EdgeLink {
            id: link.id,
            target: link.url.clone(),
            status: link.redirect,
            expires_at: link.expires_at,
            targets: link.targets.clone(),
            disabled: false,
        }),
        _ => LookupResult::Gone,
    }
}

/// Edge lookups the cache could not answer, to be read from the database
/// with [`EdgeMisses::resolve`].
pub struct EdgeMisses<T> {
    items: Vec<(T, String, CodeRef)>,
    generation: u64,
    now: i64,
}

impl<T> EdgeMisses<T> {
    /// Lookups left.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// True when the cache answered everything.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

/// Answers edge lookups from the cache alone (no I/O, no await): `answer`
/// is called with the tag and result of every code the cache knows or that
/// cannot match; the rest is returned for [`EdgeMisses::resolve`].
pub fn edge_lookup_cached<T>(
    app: &App,
    items: impl IntoIterator<Item = (T, String)>,
    mut answer: impl FnMut(T, &str, Result<LookupResult, &StoreError>),
) -> EdgeMisses<T> {
    let cache = app.store.cache();
    let generation = cache.generation();
    let now = unix_now();
    let mut misses = Vec::new();
    for (tag, code) in items {
        match codes::resolve(&app.codec, &code) {
            CodeRef::Id(id) => match cache.get(id) {
                Some(link) => answer(tag, &code, Ok(edge_result(&link, now))),
                None => misses.push((tag, code, CodeRef::Id(id))),
            },
            CodeRef::Alias(alias) => {
                let hit = match cache.alias_id(&alias) {
                    Some(id) => cache.get(id),
                    None => {
                        cache.misses.fetch_add(1, Ordering::Relaxed);
                        None
                    }
                };
                match hit {
                    Some(link) => answer(tag, &code, Ok(edge_result(&link, now))),
                    None => misses.push((tag, code, CodeRef::Alias(alias))),
                }
            }
            CodeRef::Invalid => answer(tag, &code, Ok(LookupResult::NotFound)),
        }
    }
    EdgeMisses {
        items: misses,
        generation,
        now,
    }
}

impl<T> EdgeMisses<T> {
    /// Reads every missed link in one job on one reader thread, inside one
    /// read transaction (a burst of misses costs one thread hop and one set
    /// of SQLite locks, not one each), caches what it found and calls
    /// `answer` once per item.
    pub async fn resolve(
        mut self,
        app: &App,
        mut answer: impl FnMut(T, &str, Result<LookupResult, &StoreError>),
    ) {
        if self.items.is_empty() {
            return;
        }
        let refs: Vec<CodeRef> = self
            .items
            .iter_mut()
            .map(|m| std::mem::replace(&mut m.2, CodeRef::Invalid))
            .collect();
        let found = app
            .store
            .read(move |c| {
                let tx = c.unchecked_transaction()?;
                let mut out = Vec::with_capacity(refs.len());
                for r in &refs {
                    out.push(match r {
                        CodeRef::Id(id) => table::by_id(&tx, *id)?,
                        CodeRef::Alias(alias) => table::by_alias(&tx, alias)?,
                        CodeRef::Invalid => None,
                    });
                }
                tx.finish()?;
                Ok(out)
            })
            .await;
        let cache = app.store.cache();
        match found {
            Ok(found) => {
                for ((tag, code, _), link) in self.items.into_iter().zip(found) {
                    let result = match link {
                        Some(link) => {
                            let result = edge_result(&link, self.now);
                            cache.put_if_current(Arc::new(link), self.generation);
                            result
                        }
                        None => LookupResult::NotFound,
                    };
                    answer(tag, &code, Ok(result));
                }
            }
            Err(e) => {
                for (tag, code, _) in self.items {
                    answer(tag, &code, Err(&e));
                }
            }
        }
    }
}

/// Invalidation events for links whose edge view changed (click batches).
pub fn changed_events(app: &App, changed: &[(u64, Option<String>)]) -> Vec<Event> {
    let mut events = Vec::new();
    for (id, alias) in changed {
        app.store.cache().forget(*id, alias.as_deref());
        events.push(Event::Invalidate {
            code: app.codec.encode(*id).as_str().to_string(),
        });
        if let Some(a) = alias {
            events.push(Event::Invalidate { code: a.clone() });
        }
    }
    events
}

#[cfg(test)]
mod tests {
    use super::*;
    use shortlink_core::DeploymentKey;

    fn app(dir: &std::path::Path) -> SharedApp {
        let config = crate::config::Config {
            data_dir: dir.to_path_buf(),
            ..crate::config::Config::default()
        };
        App::with_key(config, &DeploymentKey::from_bytes([7; 32]), Some(100)).unwrap()
    }

    /// The dedupe hash is written without a `serde_json::Value` tree now; it
    /// must stay byte-for-byte what links already stored were hashed with.
    #[tokio::test]
    async fn dedupe_hash_is_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let app = app(dir.path());
        let req = CreateLink {
            url: "https://example.com/a?b=\"c\"".into(),
            alias: Some("x-y".into()),
            ttl: Some(3600),
            renew_on_access: Some(RenewInput::Flag(true)),
            max_visits: Some(5),
            redirect: Some(301),
            targets: Some(TargetsInput {
                ios: Some("https://example.com/ios".into()),
                ..TargetsInput::default()
            }),
            tags: Some(vec!["zeta".into(), "alpha".into()]),
            ..CreateLink::default()
        };
        let p = prepare(&app, &req, None, 1_000).unwrap();
        let l = &p.link;
        let mut sorted = l.tags.clone();
        sorted.sort();
        let old = serde_json::json!([
            l.url,
            req.alias,
            serde_json::Value::String("ttl:3600".into()),
            l.renew_ttl,
            l.max_visits,
            l.redirect,
            [
                &l.targets.desktop,
                &l.targets.mobile,
                &l.targets.ios,
                &l.targets.android
            ],
            sorted,
            l.disabled
        ]);
        let want: [u8; 32] = Sha256::digest(old.to_string().as_bytes()).into();
        assert_eq!(p.dedupe_hash, want);
        app.store.close();
    }

    #[tokio::test]
    async fn import_commits_good_rows_and_names_bad_lines() {
        let dir = tempfile::tempdir().unwrap();
        let app = app(dir.path());
        let row = |line, url: &str, alias: Option<&str>| {
            ImportRow(line, url.into(), alias.map(Into::into), None, None)
        };
        let out = import(
            &app,
            vec![
                row(2, "https://e.com/1", Some("imp")),
                row(3, "nope", None),
                row(4, "https://e.com/2", Some("imp")),
                row(5, "https://e.com/3", None),
            ],
            Some("cli"),
        )
        .await
        .unwrap();
        assert_eq!(out.imported, 2);
        let lines: Vec<(u64, Option<&str>)> = out
            .errors
            .iter()
            .map(|e| (e.line, e.field.as_deref()))
            .collect();
        assert_eq!(lines, vec![(3, Some("url")), (4, Some("alias"))]);
        assert_eq!(get(&app, "imp").await.unwrap().url, "https://e.com/1");
        let n = app.store.read(table::count).await.unwrap();
        assert_eq!(n, 2);
        app.store.close();
    }
}
