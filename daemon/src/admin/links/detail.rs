//! The detail page of one link: short URL with copy button and QR code,
//! its facts, hourly and daily click charts, breakdowns by device, referrer
//! and bots, clicks per A/B variant, its edit form, and the disable and
//! delete buttons.

use axum::extract::{Path, State};
use maud::{html, Markup};

use super::super::charts::{self, Bar};
use super::super::creators::Creators;
use super::super::session::Flash;
use super::super::view::{self, FieldErrors, Nav, Page};
use super::super::{AdminError, AdminState, Authed};
use super::form::{general_error, link_fields, LinkForm};
use crate::codes;
use crate::links::LinkView;
use crate::qr;
use crate::stats::shares::percentages;
use crate::stats::{self, Granularity, StatsView};
use crate::store::Link;
use crate::timestamp::unix_now;

/// What a detail page shows beside the link itself: the clicks it charts
/// (the last 48 hours by hour, the last 30 days by day) and who made it.
pub(super) struct Charts {
    hourly: StatsView,
    daily: StatsView,
    /// `created_by` by name (a key's name, not `key:3`).
    creator: Option<String>,
}

impl Charts {
    /// The stats of `link` (reached by `code`), now.
    pub(super) async fn load(
        admin: &AdminState,
        a: &Authed,
        code: &str,
        link: &Link,
    ) -> Result<Self, AdminError> {
        let creator = match &link.created_by {
            Some(by) => Some(Creators::load(admin, a).await?.label(by)),
            None => None,
        };
        let now = unix_now();
        let hourly = stats::query(
            &admin.app,
            &a.principal(),
            code,
            Some(now - 47 * 3600),
            Some(now + 1),
            Granularity::Hour,
            &Default::default(),
        )
        .await?;
        let daily = stats::query(
            &admin.app,
            &a.principal(),
            code,
            Some(now - 29 * 86_400),
            Some(now + 1),
            Granularity::Day,
            &Default::default(),
        )
        .await?;
        Ok(Self {
            hourly,
            daily,
            creator,
        })
    }
}

fn hourly_chart(s: &StatsView) -> String {
    let bars: Vec<Bar> = s
        .series
        .iter()
        .map(|p| {
            let label = view::time(p.t.unix());
            Bar {
                tick: label[11..16].to_string(),
                label,
                value: p.clicks,
            }
        })
        .collect();
    charts::bar_chart("Clicks per hour, last 48 hours", &bars, 6)
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

/// Rows of names, clicks and shares of `total`: what the rows leave out
/// (past the top ones) is one `(others)` row, and the shares add up to
/// 100 (largest remainders).
fn share_rows(rows: &[(String, i64)], total: i64) -> Markup {
    let mut rows = rows.to_vec();
    let rest = total - rows.iter().map(|(_, n)| n).sum::<i64>();
    if rest > 0 {
        rows.push(("(others)".into(), rest));
    }
    let counts: Vec<i64> = rows.iter().map(|(_, n)| *n).collect();
    html! {
        @for ((name, n), pct) in rows.iter().zip(percentages(&counts)) {
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
        .map(|r| (r.host.clone(), r.clicks))
        .collect();
    // `--`: nginx's `shortlink_country` variable was unset or not a code.
    let countries: Vec<(String, i64)> = s
        .countries
        .iter()
        .take(20)
        .map(|c| {
            let name = if c.country == "--" {
                "(unknown)".to_string()
            } else {
                c.country.clone()
            };
            (name, c.clicks)
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
                h3 { "Countries" }
                @if countries.is_empty() { p.empty { "No clicks in this range." } }
                @else { table.share id="countries" { tbody { (share_rows(&countries, s.total)) } } }
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

/// Clicks per A/B variant: a chart and a table of each variant's URL,
/// weight (and the share it asks for) and clicks (and the share it got).
fn variants_card(s: &StatsView) -> Markup {
    let weights: Vec<i64> = s.variants.iter().map(|v| i64::from(v.weight)).collect();
    let clicks: Vec<i64> = s.variants.iter().map(|v| v.clicks).collect();
    let shares = percentages(&weights).into_iter().zip(percentages(&clicks));
    html! {
        div.card id="variants" {
            div id="chart-variants" { (view::raw_svg(charts::variant_clicks(&s.variants))) }
            table.share id="variant-clicks" {
                thead { tr { th { "Variant" } th { "Target" } th.num { "Weight" } th.num { "Clicks" } th { "Share" } } }
                tbody {
                    @for (v, (asked, got)) in s.variants.iter().zip(shares) {
                        tr.variant-clicks {
                            td { (v.index + 1) }
                            td { (v.url.as_deref().unwrap_or("")) }
                            td.num { (v.weight) " (" (asked) "%)" }
                            td.num { (v.clicks) }
                            td.barcell { meter min="0" max="100" value=(got) { (got) "%" } }
                        }
                    }
                }
            }
        }
    }
}

/// The page of one link; `form` and `errors` fill its edit form.
pub(super) fn detail_page(
    admin: &AdminState,
    a: &Authed,
    link: &Link,
    charts: &Charts,
    form: &LinkForm,
    errors: &FieldErrors,
    flash: Option<&Flash>,
) -> Page {
    let code = codes::public(&admin.app.codec, link);
    let generated = codes::generated(&admin.app.codec, link);
    let short_url = LinkView::short_url(&a.base, &code);
    let state = link.state(unix_now()).as_str();
    let qr_svg = qr::svg(&short_url).ok();
    let (hourly, daily) = (&charts.hourly, &charts.daily);
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
                        @if let Some(t) = &link.title { dt { "Title" } dd id="title" { (t) } }
                        dt { "Target" } dd id="target" { a href=(link.url) rel="noreferrer noopener" target="_blank" { (link.url) } }
                        dt { "Generated code" } dd { code { (generated) } }
                        dt { "Clicks" } dd id="clicks" { (link.clicks) }
                        dt { "Bot clicks" } dd id="bot-clicks" { (link.bot_clicks) }
                        dt { "Created" } dd { (view::time(link.created_at))
                            @if let Some(by) = &charts.creator { " by " span id="created-by" { (by) } } }
                        dt { "Updated" } dd { (view::time(link.updated_at)) }
                        dt { "Expires" } dd { @match link.expires_at { Some(e) => (view::time(e)), None => "never" } }
                        dt { "Redirect" } dd { @match link.redirect { Some(r) => (r), None => "nginx default" } }
                        dt { "Query string" } dd id="forward-query" { @match link.forward_query {
                            Some(true) => "appended to the target",
                            Some(false) => "never appended",
                            None => "nginx default (shortlink_forward_query)",
                        } }
                        @if let Some(m) = link.max_visits { dt { "Max visits" } dd { (m) } }
                        dt { "Link checker" } dd id="check" { @match link.check {
                            Some(m) => (m.as_str()),
                            None => "the site's settings",
                        } }
                        dt { "Password" } dd id="protected" {
                            @if link.password_hash.is_some() { "protected: visitors must type it" } @else { "none" }
                        }
                        @for (country, url) in &link.country_targets {
                            dt { "Target for " (country) } dd.country-target { (url) }
                        }
                        @for (i, v) in link.variants.iter().enumerate() {
                            dt { "Variant " (i + 1) " (weight " (v.weight) ")" } dd.variant { (v.url) }
                        }
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
                div id="chart-daily" { (view::raw_svg(charts::daily_clicks(&daily.series))) }
            }
            h2 { "Breakdown, last 30 days" }
            (breakdown(daily))
            @if !daily.variants.is_empty() {
                h2 { "A/B variants, last 30 days" }
                (variants_card(daily))
            }
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
                @if link.taken_down {
                    p id="taken-down" {
                        "Taken down: it answers as gone until an admin undoes the takedown "
                        "(" a href="/admin/takedowns" { "Takedowns" } ")."
                    }
                } @else if link.disabled {
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
    let link = admin
        .app
        .links()
        .acting_as(&a.principal())
        .get(&code)
        .await?;
    let charts = Charts::load(&admin, &a, &code, &link).await?;
    let flash = admin.sessions.take_flash(&a.token);
    Ok(detail_page(
        &admin,
        &a,
        &link,
        &charts,
        &LinkForm::from_link(&link),
        &FieldErrors::new(),
        flash.as_ref(),
    ))
}
