//! `/admin/dashboard`: links by state, clicks today and over 30 days (with
//! a daily chart) and the most clicked links of those 30 days; with
//! `?tag=NAME` the clicks are a campaign's (the links with that tag).

use axum::extract::{Query, State};
use maud::html;

use super::charts;

use super::view::{self, Nav, Page};
use super::{AdminError, AdminState, Authed};
use crate::stats::{self, Granularity, SiteQuery};
use crate::store::{LinkState, ListQuery};
use crate::timestamp::unix_now;

/// Links listed under "Most clicked".
const TOP: usize = 10;
const DAY: i64 = 86_400;

/// How many of team `team`'s links are in each state now (a member's
/// dashboard counts only their team).
async fn team_states(app: &crate::app::App, team: i64) -> Result<Vec<(String, u64)>, AdminError> {
    let mut out = Vec::new();
    for state in [
        LinkState::Active,
        LinkState::TakenDown,
        LinkState::Disabled,
        LinkState::Expired,
        LinkState::Exhausted,
    ] {
        let query = ListQuery {
            limit: 1,
            state: Some(state),
            team: Some(team),
            now: unix_now(),
            ..ListQuery::default()
        };
        out.push((
            state.as_str().to_string(),
            app.store.list_links(query).await?.total,
        ));
    }
    Ok(out)
}

/// The id recycling line, for admins: whether it is on, and what waits
/// to be reused.
async fn ids_line(
    app: &crate::app::App,
    p: &crate::auth::Principal,
) -> Result<Option<String>, AdminError> {
    if p.require(crate::access::Scope::Admin).is_err() {
        return Ok(None);
    }
    let r = &app.config.recycling;
    if !r.enabled {
        return Ok(Some("Id recycling: off.".into()));
    }
    let ranges = app.store.id_ranges(0).await?;
    Ok(Some(format!(
        "Id recycling: on (grace {} days): {} ranges available ({} ids), {} taken again.",
        r.grace_days, ranges.available, ranges.available_ids, ranges.reused
    )))
}

/// Query of the dashboard.
#[derive(Debug, Default, serde::Deserialize)]
pub struct DashboardQuery {
    /// Only the clicks of links with this tag (a campaign); empty: all.
    #[serde(default)]
    pub tag: String,
}

/// GET `/admin/dashboard`.
pub async fn page(
    State(admin): State<AdminState>,
    a: Authed,
    Query(q): Query<DashboardQuery>,
) -> Result<Page, AdminError> {
    let app = &admin.app;
    let now = unix_now();
    let p = a.principal();
    let states = match p.team_filter() {
        None => app.store.count_links_by_state(now).await?,
        Some(team) => team_states(app, team).await?,
    };
    let count = |s: &str| {
        states
            .iter()
            .find(|(state, _)| state == s)
            .map_or(0, |(_, n)| *n)
    };
    let total: u64 = states.iter().map(|(_, n)| n).sum();
    let today_start = now - now.rem_euclid(DAY);
    let tag = Some(q.tag.trim().to_string()).filter(|t| !t.is_empty());
    let days = |from: i64, top: usize| SiteQuery {
        from: Some(from),
        granularity: Granularity::Day,
        tag: tag.clone(),
        top,
        ..SiteQuery::default()
    };
    let today = stats::site_query(app, &p, days(today_start, 0)).await?;
    let month = stats::site_query(app, &p, days(now - 30 * DAY, TOP)).await?;
    let chart = charts::daily_clicks(&month.series);
    let flash = admin.sessions.take_flash(&a.token);
    let ids = ids_line(app, &p).await?;
    Ok(view::layout(
        "Dashboard",
        Some(&a),
        Nav::Dashboard,
        flash.as_ref(),
        html! {
            h1 { "Dashboard" }
            section.cards id="dash-states" {
                div.card { span.n id="dash-total" { (total) } span { "links" } }
                @for state in ["active", "taken_down", "disabled", "expired", "exhausted"] {
                    div.card {
                        span.n id=(format!("dash-{state}")) { (count(state)) }
                        span { (view::state_badge(state)) }
                    }
                }
            }
            form.search id="dash-tag" method="get" action="/admin/dashboard" {
                input type="search" name="tag" value=(q.tag) placeholder="Campaign tag" aria-label="Campaign tag";
                button type="submit" { "Show" }
                @if tag.is_some() { " " a href="/admin/dashboard" { "All links" } }
            }
            @if let Some(t) = &tag {
                p.note id="dash-tag-note" { "Clicks of the links tagged " span.tag { (t) } "." }
            }
            section.cards id="dash-clicks" {
                div.card { span.n id="dash-today" { (today.total) } span { "clicks today (UTC)" } }
                div.card { span.n id="dash-30d" { (month.total) } span { "clicks in 30 days" } }
                div.card { span.n id="dash-30d-bots" { (month.bots) } span { "of them bots" } }
            }
            @if let Some(line) = ids {
                p.note id="dash-ids" { (line) }
            }
            (maud::PreEscaped(chart))
            h2 { "Most clicked, last 30 days" }
            @if month.top_links.is_empty() {
                p.empty id="no-top" { "No clicks in the last 30 days." }
            } @else {
                table.links id="top-links" {
                    thead { tr { th { "Code" } th { "Target" } th.num { "Clicks" } } }
                    tbody {
                        @for l in &month.top_links {
                            tr data-code=(l.code) {
                                td { a href=(format!("/admin/links/{}", l.code)) { (l.code) } }
                                td.url { (l.url.as_deref().unwrap_or("")) }
                                td.num { (l.clicks) }
                            }
                        }
                    }
                }
            }
        },
    ))
}
