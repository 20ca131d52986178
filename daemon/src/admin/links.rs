//! Link pages: the searchable list, the create form, the detail page (short
//! URL, QR code, charts, breakdowns, edit form, disable, delete).
//!
//! Every change calls [`crate::links`] like the API does: the same rules,
//! the same error messages (shown next to the field), the same push to the
//! nginx workers before the page answers.

use axum::extract::{Path, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use maud::{html, Markup};
use serde::Deserialize;

use super::charts::{self, Bar};
use super::qr;
use super::session::Flash;
use super::view::{self, FieldErrors, Nav, Page};
use super::{AdminError, AdminState, Authed, FormFields};
use crate::codes;
use crate::links::{self, CreateLink, LinkError, TargetsInput, TimeInput, UpdateLink};
use crate::stats::{self, Granularity, StatsView};
use crate::store::links::{Link, ListQuery};
use crate::store::unix_now;

/// Links per list page.
pub const PAGE_SIZE: u32 = 25;

/// What the create and edit forms hold, as typed (kept on errors).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LinkForm {
    pub url: String,
    pub alias: String,
    pub expires_at: String,
    pub redirect: String,
    pub max_visits: String,
    pub desktop: String,
    pub mobile: String,
    pub ios: String,
    pub android: String,
    pub tags: String,
}

impl LinkForm {
    fn from_fields(f: &FormFields) -> Self {
        Self {
            url: f.get("url"),
            alias: f.get("alias"),
            expires_at: f.get("expires_at"),
            redirect: f.get("redirect"),
            max_visits: f.get("max_visits"),
            desktop: f.get("targets.desktop"),
            mobile: f.get("targets.mobile"),
            ios: f.get("targets.ios"),
            android: f.get("targets.android"),
            tags: f.get("tags"),
        }
    }

    fn from_link(l: &Link) -> Self {
        let s = |v: &Option<String>| v.clone().unwrap_or_default();
        Self {
            url: l.url.clone(),
            alias: s(&l.alias),
            expires_at: l.expires_at.map(view::datetime_local).unwrap_or_default(),
            redirect: l.redirect.map(|r| r.to_string()).unwrap_or_default(),
            max_visits: l.max_visits.map(|m| m.to_string()).unwrap_or_default(),
            desktop: s(&l.targets.desktop),
            mobile: s(&l.targets.mobile),
            ios: s(&l.targets.ios),
            android: s(&l.targets.android),
            tags: l.tags.join(", "),
        }
    }

    fn opt(v: &str) -> Option<String> {
        (!v.is_empty()).then(|| v.to_string())
    }

    fn targets(&self) -> Option<TargetsInput> {
        let t = TargetsInput {
            desktop: Self::opt(&self.desktop),
            mobile: Self::opt(&self.mobile),
            ios: Self::opt(&self.ios),
            android: Self::opt(&self.android),
        };
        (t != TargetsInput::default()).then_some(t)
    }

    fn tags(&self) -> Vec<String> {
        self.tags
            .split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_string)
            .collect()
    }

    /// The numbers the form carries; the link rules judge their values.
    fn numbers(&self) -> Result<(Option<u16>, Option<u64>), FieldErrors> {
        let mut errors = FieldErrors::new();
        let redirect = match self.redirect.as_str() {
            "" => None,
            r => match r.parse::<u16>() {
                Ok(v) => Some(v),
                Err(_) => {
                    errors.insert(
                        "redirect".into(),
                        "redirect must be 301, 302, 307 or 308".into(),
                    );
                    None
                }
            },
        };
        let max_visits = match self.max_visits.as_str() {
            "" => None,
            m => match m.parse::<u64>() {
                Ok(v) => Some(v),
                Err(_) => {
                    errors.insert(
                        "max_visits".into(),
                        format!("max_visits must be a whole number; got {m:?}"),
                    );
                    None
                }
            },
        };
        if errors.is_empty() {
            Ok((redirect, max_visits))
        } else {
            Err(errors)
        }
    }

    /// The API's create request.
    pub fn to_create(&self) -> Result<CreateLink, FieldErrors> {
        let (redirect, max_visits) = self.numbers()?;
        Ok(CreateLink {
            url: self.url.clone(),
            alias: Self::opt(&self.alias),
            expires_at: Self::opt(&self.expires_at)
                .map(|e| TimeInput::Text(view::local_to_rfc3339(&e))),
            max_visits,
            redirect,
            targets: self.targets(),
            tags: Some(self.tags()),
            ..CreateLink::default()
        })
    }

    /// The API's patch: every field as shown; the expiry only when changed
    /// (so an expired link can be edited without moving its expiry).
    pub fn to_update(&self, current: &Link) -> Result<UpdateLink, FieldErrors> {
        let (redirect, max_visits) = self.numbers()?;
        let shown = current
            .expires_at
            .map(view::datetime_local)
            .unwrap_or_default();
        let expires_at = if self.expires_at == shown {
            None
        } else {
            Some(Self::opt(&self.expires_at).map(|e| TimeInput::Text(view::local_to_rfc3339(&e))))
        };
        Ok(UpdateLink {
            url: Some(self.url.clone()),
            alias: Some(Self::opt(&self.alias)),
            expires_at,
            max_visits: Some(max_visits),
            redirect: Some(redirect),
            targets: Some(self.targets()),
            tags: Some(self.tags()),
            ..UpdateLink::default()
        })
    }
}

/// A link error as messages by field; `""` holds what belongs to no field.
fn link_errors(e: LinkError) -> Result<FieldErrors, AdminError> {
    let mut errors = FieldErrors::new();
    match e {
        LinkError::Invalid { field, message, .. } => {
            let field = match field {
                "ttl" | "renew_on_access" => "expires_at",
                f => f,
            };
            errors.insert(field.to_string(), message);
        }
        LinkError::AliasTaken(a) => {
            errors.insert("alias".into(), format!("alias \"{a}\" is already taken"));
        }
        e => return Err(e.into()),
    }
    Ok(errors)
}

fn link_fields(form: &LinkForm, errors: &FieldErrors) -> Markup {
    let redirects = [
        ("", "nginx default (shortlink_redirect)"),
        ("301", "301 Moved Permanently"),
        ("302", "302 Found"),
        ("307", "307 Temporary Redirect"),
        ("308", "308 Permanent Redirect"),
    ];
    html! {
        (view::text_input("Target URL", "url", &form.url, "url", Some("Absolute http(s) URL."), errors))
        div.row {
            (view::text_input("Alias (optional)", "alias", &form.alias, "text",
                Some("1 to 64 of A-Z a-z 0-9 - _; the generated code works too."), errors))
            (view::text_input("Expires (UTC, optional)", "expires_at", &form.expires_at,
                "datetime-local", Some("Empty: never."), errors))
        }
        div.row {
            div.field.invalid[errors.contains_key("redirect")] {
                label for="f-redirect" { "Redirect status" }
                select id="f-redirect" name="redirect" {
                    @for (v, label) in redirects {
                        option value=(v) selected[form.redirect == v] { (label) }
                    }
                    @if !form.redirect.is_empty() && !redirects.iter().any(|(v, _)| *v == form.redirect) {
                        option value=(form.redirect) selected { (form.redirect) }
                    }
                }
                (view::field_error(errors, "redirect"))
            }
            (view::text_input("Max visits (optional)", "max_visits", &form.max_visits, "text",
                Some("Human visits after which the link is gone."), errors))
        }
        fieldset {
            legend { "Device targets (optional)" }
            div.row {
                (view::text_input("Desktop", "targets.desktop", &form.desktop, "url", None, errors))
                (view::text_input("Mobile", "targets.mobile", &form.mobile, "url", None, errors))
            }
            div.row {
                (view::text_input("iOS", "targets.ios", &form.ios, "url", None, errors))
                (view::text_input("Android", "targets.android", &form.android, "url", None, errors))
            }
        }
        (view::text_input("Tags (optional)", "tags", &form.tags, "text", Some("Separated by commas."), errors))
    }
}

fn general_error(errors: &FieldErrors) -> Markup {
    html! {
        @if !errors.is_empty() {
            p.error role="alert" id="form-error" {
                "The link was not saved: see the messages below."
                @if let Some(m) = errors.get("") { " " (m) }
            }
        }
    }
}

fn new_page(a: &Authed, form: &LinkForm, errors: &FieldErrors) -> Page {
    view::layout(
        "New link",
        Some(a),
        Nav::New,
        None,
        html! {
            h1 { "New short link" }
            div.card {
                (general_error(errors))
                form method="post" action="/admin/links" id="create" novalidate {
                    (view::csrf_field(a))
                    (link_fields(form, errors))
                    button.primary type="submit" { "Create short link" }
                }
            }
        },
    )
}

/// GET `/admin/links/new`.
pub async fn new_form(a: Authed) -> Page {
    new_page(&a, &LinkForm::default(), &FieldErrors::new())
}

/// POST `/admin/links`: creates through [`links::create`], then shows the
/// new link (short URL, copy button, QR code).
pub async fn create(
    State(admin): State<AdminState>,
    a: Authed,
    fields: FormFields,
) -> Result<Response, AdminError> {
    let form = LinkForm::from_fields(&fields);
    let req = match form.to_create() {
        Ok(r) => r,
        Err(errors) => {
            return Ok((
                StatusCode::UNPROCESSABLE_ENTITY,
                new_page(&a, &form, &errors),
            )
                .into_response())
        }
    };
    let who = a.principal().who;
    match links::create(&admin.app, &req, Some(&who)).await {
        Ok(created) => {
            let code = codes::public(&admin.app.codec, created.link());
            admin.sessions.set_flash(
                &a.token,
                Flash {
                    title: format!("Short link {}/{code} created.", a.base),
                    secret: None,
                },
            );
            Ok(Redirect::to(&format!("/admin/links/{code}")).into_response())
        }
        Err(e) => {
            let errors = link_errors(e)?;
            Ok((
                StatusCode::UNPROCESSABLE_ENTITY,
                new_page(&a, &form, &errors),
            )
                .into_response())
        }
    }
}

/// Query of the list page.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct ListParams {
    /// Substring of the URL or alias.
    pub q: String,
    /// Only links with this tag.
    pub tag: String,
    /// Show links older than this id (the previous page's last).
    pub before: Option<u64>,
}

fn list_url(q: &str, tag: &str, before: Option<u64>) -> String {
    let mut s = url::form_urlencoded::Serializer::new(String::new());
    if !q.is_empty() {
        s.append_pair("q", q);
    }
    if !tag.is_empty() {
        s.append_pair("tag", tag);
    }
    if let Some(b) = before {
        s.append_pair("before", &b.to_string());
    }
    let qs = s.finish();
    if qs.is_empty() {
        "/admin/links".into()
    } else {
        format!("/admin/links?{qs}")
    }
}

/// GET `/admin/links`: newest first, searchable, paginated.
pub async fn list(
    State(admin): State<AdminState>,
    a: Authed,
    Query(p): Query<ListParams>,
) -> Result<Page, AdminError> {
    let (q, tag) = (p.q.trim().to_string(), p.tag.trim().to_string());
    let mut page = links::list(
        &admin.app,
        ListQuery {
            limit: PAGE_SIZE + 1,
            before: p.before,
            q: (!q.is_empty()).then(|| q.clone()),
            tag: (!tag.is_empty()).then(|| tag.clone()),
        },
    )
    .await?;
    let more = page.len() > PAGE_SIZE as usize;
    page.truncate(PAGE_SIZE as usize);
    let next = more.then(|| page.last().map(|l| l.id)).flatten();
    let now = unix_now();
    let flash = admin.sessions.take_flash(&a.token);
    Ok(view::layout(
        "Links",
        Some(&a),
        Nav::Links,
        flash.as_ref(),
        html! {
            div.heading {
                h1 { "Links" }
                a.button.primary href="/admin/links/new" { "New link" }
            }
            form.search method="get" action="/admin/links" id="search" {
                input type="search" name="q" value=(q) placeholder="Search target URL or alias" aria-label="Search";
                input type="text" name="tag" value=(tag) placeholder="Tag" aria-label="Tag";
                button type="submit" { "Search" }
                @if !q.is_empty() || !tag.is_empty() { a href="/admin/links" { "Clear" } }
            }
            @if page.is_empty() {
                p.empty id="no-links" {
                    @if q.is_empty() && tag.is_empty() && p.before.is_none() {
                        "No links yet. " a href="/admin/links/new" { "Create the first one." }
                    } @else { "No links match." }
                }
            } @else {
                table.links id="links" {
                    thead { tr {
                        th { "Code" } th { "Target" } th { "Created" } th { "Expires" }
                        th { "Status" } th.num { "Clicks" }
                    } }
                    tbody {
                        @for l in &page {
                            @let code = codes::public(&admin.app.codec, l);
                            tr data-code=(code) {
                                td.code { a href={ "/admin/links/" (code) } { (code) } }
                                td.target title=(l.url) {
                                    (l.url)
                                    @for t in &l.tags { " " span.tag { (t) } }
                                }
                                td.time { (view::time(l.created_at)) }
                                td.time { @match l.expires_at { Some(e) => (view::time(e)), None => "never" } }
                                td { (view::state_badge(l.state(now).as_str())) }
                                td.num.clicks { (l.clicks) }
                            }
                        }
                    }
                }
            }
            nav.pager {
                @if p.before.is_some() { a href=(list_url(&q, &tag, None)) { "« Newest" } }
                @if let Some(n) = next { a id="next-page" href=(list_url(&q, &tag, Some(n))) { "Older »" } }
            }
        },
    ))
}

/// Last 48 hours by hour and last 30 days by day.
async fn charts_for(admin: &AdminState, code: &str) -> Result<(StatsView, StatsView), AdminError> {
    let now = unix_now();
    let hourly = stats::query(
        &admin.app,
        code,
        Some(now - 47 * 3600),
        Some(now + 1),
        Granularity::Hour,
    )
    .await?;
    let daily = stats::query(
        &admin.app,
        code,
        Some(now - 29 * 86_400),
        Some(now + 1),
        Granularity::Day,
    )
    .await?;
    Ok((hourly, daily))
}

fn hourly_chart(s: &StatsView) -> String {
    let bars: Vec<Bar> = s
        .series
        .iter()
        .map(|p| {
            let label = view::time(p.t);
            Bar {
                tick: label[11..16].to_string(),
                label,
                value: p.clicks,
            }
        })
        .collect();
    charts::bar_chart("Clicks per hour, last 48 hours", &bars, 6)
}

fn daily_chart(s: &StatsView) -> String {
    let bars: Vec<Bar> = s
        .series
        .iter()
        .map(|p| {
            let label = view::time(p.t);
            Bar {
                tick: label[5..10].to_string(),
                label: label[..10].to_string(),
                value: p.clicks,
            }
        })
        .collect();
    charts::bar_chart("Clicks per day, last 30 days", &bars, 5)
}

fn device_targets(l: &Link) -> Vec<(&'static str, &str)> {
    let t = &l.targets;
    [
        ("Desktop", &t.desktop),
        ("Mobile", &t.mobile),
        ("iOS", &t.ios),
        ("Android", &t.android),
    ]
    .into_iter()
    .filter_map(|(d, u)| u.as_deref().map(|u| (d, u)))
    .collect()
}

fn share_rows(rows: &[(String, i64)], total: i64) -> Markup {
    html! {
        @for (name, n) in rows {
            @let pct = if total > 0 { n * 100 / total } else { 0 };
            tr {
                td { (name) }
                td.num { (n) }
                td.barcell { meter min="0" max="100" value=(pct) { (pct) "%" } }
            }
        }
    }
}

fn breakdown(s: &StatsView) -> Markup {
    let d = &s.devices;
    let devices = [
        ("Desktop", d.desktop),
        ("Mobile", d.mobile),
        ("iOS", d.ios),
        ("Android", d.android),
        ("Other", d.other),
    ]
    .into_iter()
    .map(|(n, c)| (n.to_string(), c))
    .collect::<Vec<_>>();
    let referrers: Vec<(String, i64)> = s
        .referrers
        .iter()
        .map(|r| {
            let host = if r.host.is_empty() {
                "(none)".to_string()
            } else {
                r.host.clone()
            };
            (host, r.clicks)
        })
        .collect();
    let visitors = vec![
        ("Humans".to_string(), s.total - s.bots),
        ("Bots".to_string(), s.bots),
    ];
    html! {
        div.grid3 id="breakdown" {
            div.card {
                h3 { "Devices" }
                table.share { tbody { (share_rows(&devices, s.total)) } }
            }
            div.card {
                h3 { "Referrers" }
                @if referrers.is_empty() { p.empty { "No clicks in this range." } }
                @else { table.share { tbody { (share_rows(&referrers, s.total)) } } }
            }
            div.card {
                h3 { "Humans and bots" }
                table.share id="bots" { tbody { (share_rows(&visitors, s.total)) } }
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn detail_page(
    admin: &AdminState,
    a: &Authed,
    link: &Link,
    hourly: &StatsView,
    daily: &StatsView,
    form: &LinkForm,
    errors: &FieldErrors,
    flash: Option<&Flash>,
) -> Page {
    let code = codes::public(&admin.app.codec, link);
    let generated = codes::generated(&admin.app.codec, link);
    let short_url = format!("{}/{code}", a.base);
    let state = link.state(unix_now()).as_str();
    let qr_svg = qr::svg(&short_url).ok();
    let path = format!("/admin/links/{code}");
    view::layout(
        &code,
        Some(a),
        Nav::Links,
        flash,
        html! {
            div.heading {
                h1 { "Link " span.code id="link-code" { (code) } " " (view::state_badge(state)) }
            }
            div.card.summary {
                div.shorturl {
                    label for="short-url" { "Short URL" }
                    div.copyrow {
                        input id="short-url" type="text" readonly value=(short_url);
                        button type="button" data-copy="#short-url" id="copy-short-url" { "Copy" }
                    }
                    dl.facts {
                        dt { "Target" } dd id="target" { a href=(link.url) rel="noreferrer noopener" target="_blank" { (link.url) } }
                        dt { "Generated code" } dd { code { (generated) } }
                        dt { "Clicks" } dd id="clicks" { (link.clicks) }
                        dt { "Bot clicks" } dd id="bot-clicks" { (link.bot_clicks) }
                        dt { "Created" } dd { (view::time(link.created_at))
                            @if let Some(by) = &link.created_by { " by " (by) } }
                        dt { "Updated" } dd { (view::time(link.updated_at)) }
                        dt { "Expires" } dd { @match link.expires_at { Some(e) => (view::time(e)), None => "never" } }
                        dt { "Redirect" } dd { @match link.redirect { Some(r) => (r), None => "nginx default" } }
                        @if let Some(m) = link.max_visits { dt { "Max visits" } dd { (m) } }
                        @for (device, url) in device_targets(link) {
                            dt { (device) " target" } dd { (url) }
                        }
                        @if !link.tags.is_empty() {
                            dt { "Tags" } dd { @for t in &link.tags { span.tag { (t) } " " } }
                        }
                    }
                }
                div.qr {
                    @if let Some(svg) = qr_svg { div.qrimg id="qr" { (view::raw_svg(svg)) } }
                    p {
                        a.button href={ (path) "/qr.png?download=1" } download={ (code) ".png" } id="qr-png" { "PNG" }
                        " "
                        a.button href={ (path) "/qr.svg?download=1" } download={ (code) ".svg" } id="qr-svg" { "SVG" }
                    }
                }
            }
            h2 { "Clicks" }
            div.card.chart-card {
                h3 { "Last 48 hours " span.hint { "(" (hourly.total) " clicks)" } }
                div id="chart-hourly" { (view::raw_svg(hourly_chart(hourly))) }
                h3 { "Last 30 days " span.hint { "(" (daily.total) " clicks)" } }
                div id="chart-daily" { (view::raw_svg(daily_chart(daily))) }
            }
            h2 { "Breakdown, last 30 days" }
            (breakdown(daily))
            h2 id="edit" { "Edit" }
            div.card {
                (general_error(errors))
                form method="post" action=(path) id="edit-form" novalidate {
                    (view::csrf_field(a))
                    (link_fields(form, errors))
                    button.primary type="submit" { "Save" }
                }
            }
            h2 { "Switch off or remove" }
            div.card.actions {
                @if link.disabled {
                    form method="post" action={ (path) "/enable" } {
                        (view::csrf_field(a))
                        button type="submit" id="enable" { "Enable" }
                        span.hint { " The link redirects again at once." }
                    }
                } @else {
                    form method="post" action={ (path) "/disable" } {
                        (view::csrf_field(a))
                        button type="submit" id="disable" { "Disable" }
                        span.hint { " nginx stops redirecting it at once (410, or the fallback)." }
                    }
                }
                form method="post" action={ (path) "/delete" } data-confirm={ "Delete " (code) " and its click stats? This cannot be undone." } {
                    (view::csrf_field(a))
                    button.danger type="submit" id="delete" { "Delete" }
                    span.hint { " Removes the link and its stats for good." }
                }
            }
        },
    )
}

/// GET `/admin/links/{code}`.
pub async fn detail(
    State(admin): State<AdminState>,
    a: Authed,
    Path(code): Path<String>,
) -> Result<Page, AdminError> {
    let link = links::get(&admin.app, &code).await?;
    let (hourly, daily) = charts_for(&admin, &code).await?;
    let flash = admin.sessions.take_flash(&a.token);
    Ok(detail_page(
        &admin,
        &a,
        &link,
        &hourly,
        &daily,
        &LinkForm::from_link(&link),
        &FieldErrors::new(),
        flash.as_ref(),
    ))
}

/// POST `/admin/links/{code}`: the edit form, through [`links::update`].
pub async fn edit(
    State(admin): State<AdminState>,
    a: Authed,
    Path(code): Path<String>,
    fields: FormFields,
) -> Result<Response, AdminError> {
    let link = links::get(&admin.app, &code).await?;
    let form = LinkForm::from_fields(&fields);
    let result = match form.to_update(&link) {
        Ok(patch) => links::update(&admin.app, &code, patch)
            .await
            .map_err(link_errors),
        Err(errors) => Err(Ok(errors)),
    };
    match result {
        Ok(updated) => {
            let new_code = codes::public(&admin.app.codec, &updated);
            tracing::info!(code = %new_code, user = %a.user, "link edited in the admin UI");
            admin.sessions.set_flash(
                &a.token,
                Flash {
                    title: "Saved. nginx was told to drop its cached copy.".into(),
                    secret: None,
                },
            );
            Ok(Redirect::to(&format!("/admin/links/{new_code}")).into_response())
        }
        Err(Err(e)) => Err(e),
        Err(Ok(errors)) => {
            let (hourly, daily) = charts_for(&admin, &code).await?;
            let page = detail_page(&admin, &a, &link, &hourly, &daily, &form, &errors, None);
            Ok((StatusCode::UNPROCESSABLE_ENTITY, page).into_response())
        }
    }
}

async fn set_disabled(
    admin: &AdminState,
    a: &Authed,
    code: &str,
    disabled: bool,
) -> Result<Redirect, AdminError> {
    let patch = UpdateLink {
        disabled: Some(disabled),
        ..UpdateLink::default()
    };
    let link = links::update(&admin.app, code, patch).await?;
    let code = codes::public(&admin.app.codec, &link);
    tracing::info!(code = %code, disabled, user = %a.user, "link switched in the admin UI");
    let title = if disabled {
        format!("{code} is disabled; nginx no longer redirects it.")
    } else {
        format!("{code} is enabled again.")
    };
    admin.sessions.set_flash(
        &a.token,
        Flash {
            title,
            secret: None,
        },
    );
    Ok(Redirect::to(&format!("/admin/links/{code}")))
}

/// POST `/admin/links/{code}/disable`.
pub async fn disable(
    State(admin): State<AdminState>,
    a: Authed,
    Path(code): Path<String>,
) -> Result<Redirect, AdminError> {
    set_disabled(&admin, &a, &code, true).await
}

/// POST `/admin/links/{code}/enable`.
pub async fn enable(
    State(admin): State<AdminState>,
    a: Authed,
    Path(code): Path<String>,
) -> Result<Redirect, AdminError> {
    set_disabled(&admin, &a, &code, false).await
}

/// POST `/admin/links/{code}/delete`.
pub async fn delete(
    State(admin): State<AdminState>,
    a: Authed,
    Path(code): Path<String>,
) -> Result<Redirect, AdminError> {
    let link = links::delete(&admin.app, &code).await?;
    let code = codes::public(&admin.app.codec, &link);
    tracing::info!(code = %code, user = %a.user, "link deleted in the admin UI");
    admin.sessions.set_flash(
        &a.token,
        Flash {
            title: format!("{code} was deleted."),
            secret: None,
        },
    );
    Ok(Redirect::to("/admin/links"))
}

/// Query of the QR endpoints.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct QrParams {
    /// Any value: send as an attachment.
    pub download: Option<String>,
}

async fn qr_target(
    admin: &AdminState,
    a: &Authed,
    code: &str,
) -> Result<(String, String), AdminError> {
    let link = links::get(&admin.app, code).await?;
    let code = codes::public(&admin.app.codec, &link);
    Ok((format!("{}/{code}", a.base), code))
}

fn qr_response(
    body: Vec<u8>,
    mime: &'static str,
    code: &str,
    ext: &str,
    download: bool,
) -> Response {
    let mut resp = ([(header::CONTENT_TYPE, mime)], body).into_response();
    if download {
        if let Ok(v) = format!("attachment; filename=\"{code}.{ext}\"").parse() {
            resp.headers_mut().insert(header::CONTENT_DISPOSITION, v);
        }
    }
    resp
}

/// GET `/admin/links/{code}/qr.svg`.
pub async fn qr_svg(
    State(admin): State<AdminState>,
    a: Authed,
    Path(code): Path<String>,
    Query(q): Query<QrParams>,
) -> Result<Response, AdminError> {
    let (url, code) = qr_target(&admin, &a, &code).await?;
    let svg = qr::svg(&url).map_err(|e| AdminError::Internal(e.to_string()))?;
    Ok(qr_response(
        svg.into_bytes(),
        "image/svg+xml",
        &code,
        "svg",
        q.download.is_some(),
    ))
}

/// GET `/admin/links/{code}/qr.png`.
pub async fn qr_png(
    State(admin): State<AdminState>,
    a: Authed,
    Path(code): Path<String>,
    Query(q): Query<QrParams>,
) -> Result<Response, AdminError> {
    let (url, code) = qr_target(&admin, &a, &code).await?;
    let png = qr::png(&url, 8).map_err(|e| AdminError::Internal(e.to_string()))?;
    Ok(qr_response(
        png,
        "image/png",
        &code,
        "png",
        q.download.is_some(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_become_api_requests() {
        let form = LinkForm {
            url: "https://example.com/".into(),
            alias: "".into(),
            expires_at: "2030-01-02T03:04".into(),
            redirect: "301".into(),
            max_visits: "".into(),
            mobile: "https://m.example.com/".into(),
            tags: " a, b ,,c ".into(),
            ..LinkForm::default()
        };
        let c = form.to_create().unwrap();
        assert_eq!(c.alias, None);
        assert_eq!(
            c.expires_at,
            Some(TimeInput::Text("2030-01-02T03:04:00Z".into()))
        );
        assert_eq!(c.redirect, Some(301));
        assert_eq!(c.tags, Some(vec!["a".into(), "b".into(), "c".into()]));
        let t = c.targets.unwrap();
        assert_eq!(t.mobile.as_deref(), Some("https://m.example.com/"));
        assert_eq!(t.desktop, None);

        let bad = LinkForm {
            redirect: "x".into(),
            max_visits: "-1".into(),
            ..form.clone()
        };
        let e = bad.to_create().unwrap_err();
        assert!(e.contains_key("redirect") && e.contains_key("max_visits"));

        // Unchanged expiry is left alone; cleared becomes null.
        let link = Link {
            url: "https://example.com/".into(),
            expires_at: Some(1_900_000_000),
            ..Link::default()
        };
        let same = LinkForm::from_link(&link);
        assert_eq!(same.to_update(&link).unwrap().expires_at, None);
        let cleared = LinkForm {
            expires_at: "".into(),
            ..same.clone()
        };
        assert_eq!(cleared.to_update(&link).unwrap().expires_at, Some(None));
        let u = same.to_update(&link).unwrap();
        assert_eq!(u.alias, Some(None));
        assert_eq!(u.targets, Some(None));
    }

    #[test]
    fn list_urls() {
        assert_eq!(list_url("", "", None), "/admin/links");
        assert_eq!(
            list_url("a b&c", "x", Some(7)),
            "/admin/links?q=a+b%26c&tag=x&before=7"
        );
    }
}
