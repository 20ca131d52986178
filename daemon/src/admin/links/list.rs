//! The list page: `GET /admin/links`, newest first, searchable by URL,
//! alias, tag and generated code, paged both ways with the search's total.

use axum::extract::{Query, State};
use maud::html;
use serde::Deserialize;

use super::super::creators::Creators;
use super::super::view::{self, Nav, Page};
use super::super::{AdminError, AdminState, Authed};
use crate::access::Role;
use crate::codes;
use crate::store::{Link, ListQuery};
use crate::timestamp::unix_now;

/// Links per list page.
pub const PAGE_SIZE: u32 = 25;

/// Query of the list page. A page is newest first and starts after a
/// keyset cursor of the list ([`crate::links::list`]): `before` (older
/// than this id) going forward, `after` (newer than this id) going back.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct ListParams {
    /// Substring of the URL, alias or title, or a generated code.
    pub q: String,
    /// Only links with this tag.
    pub tag: String,
    /// Only links of this team (by name; admins only, others see their
    /// own team whatever this says).
    pub team: String,
    /// Only links the link checker marks broken.
    pub broken: bool,
    /// Show links older than this id (the next page's start).
    pub before: Option<u64>,
    /// Show the links just newer than this id (the previous page).
    pub after: Option<u64>,
}

/// Where a list page starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Start {
    /// The newest links.
    Newest,
    /// Links older than this id.
    Before(u64),
    /// The links just newer than this id.
    After(u64),
}

/// What a list page searches for, as its URL carries it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Search {
    q: String,
    tag: String,
    team: String,
    broken: bool,
}

impl Search {
    /// Anything to search for at all.
    fn any(&self) -> bool {
        !self.q.is_empty() || !self.tag.is_empty() || !self.team.is_empty() || self.broken
    }
}

/// The list page's URL for a search and a page.
fn list_url(search: &Search, start: Start) -> String {
    let mut s = url::form_urlencoded::Serializer::new(String::new());
    for (name, value) in [
        ("q", &search.q),
        ("tag", &search.tag),
        ("team", &search.team),
    ] {
        if !value.is_empty() {
            s.append_pair(name, value);
        }
    }
    if search.broken {
        s.append_pair("broken", "true");
    }
    match start {
        Start::Newest => {}
        Start::Before(id) => {
            s.append_pair("before", &id.to_string());
        }
        Start::After(id) => {
            s.append_pair("after", &id.to_string());
        }
    }
    let qs = s.finish();
    if qs.is_empty() {
        "/admin/links".into()
    } else {
        format!("/admin/links?{qs}")
    }
}

/// One page of the list, newest first, and what lies on either side.
struct Shown {
    links: Vec<Link>,
    /// Links matching the filter on every page.
    total: u64,
    /// Newer links exist: the page has a previous one.
    newer: bool,
    /// Older links exist: the page has a next one.
    older: bool,
}

/// The filter of the page, from `start` in the given direction.
fn query(filter: &ListQuery, start: Option<u64>, ascending: bool, limit: u32) -> ListQuery {
    ListQuery {
        limit,
        ascending,
        // Creation order is id order: the cursor's key is the id.
        after: start.map(|id| (id as i64, id)),
        ..filter.clone()
    }
}

/// The page at `start`: up to [`PAGE_SIZE`] links, one more asked to know
/// whether the list goes on, and one look the other way.
async fn load(
    admin: &AdminState,
    a: &Authed,
    filter: &ListQuery,
    start: Start,
) -> Result<Shown, AdminError> {
    let links = admin.app.links().acting_as(&a.principal());
    let more = PAGE_SIZE + 1;
    if let Start::After(id) = start {
        let found = links.list(query(filter, Some(id), true, more)).await?;
        let newer = found.links.len() > PAGE_SIZE as usize;
        let mut page = found.links;
        page.truncate(PAGE_SIZE as usize);
        // Back at the newest links with room to spare: show the first page.
        if newer || page.len() == PAGE_SIZE as usize {
            page.reverse();
            let older = match page.last() {
                Some(l) => !links
                    .list(query(filter, Some(l.id), false, 1))
                    .await?
                    .links
                    .is_empty(),
                None => false,
            };
            return Ok(Shown {
                links: page,
                total: found.total,
                newer,
                older,
            });
        }
    }
    let before = match start {
        Start::Before(id) => Some(id),
        _ => None,
    };
    let found = links.list(query(filter, before, false, more)).await?;
    let older = found.links.len() > PAGE_SIZE as usize;
    let mut page = found.links;
    page.truncate(PAGE_SIZE as usize);
    let newer = match (before, page.first()) {
        (Some(_), Some(l)) => !links
            .list(query(filter, Some(l.id), true, 1))
            .await?
            .links
            .is_empty(),
        (Some(id), None) => !links
            .list(query(filter, Some(id), true, 1))
            .await?
            .links
            .is_empty(),
        (None, _) => false,
    };
    Ok(Shown {
        links: page,
        total: found.total,
        newer,
        older,
    })
}

/// GET `/admin/links`: newest first, searchable (URL, alias, tag, or a
/// generated code), paged both ways with the total of the search.
pub async fn list(
    State(admin): State<AdminState>,
    a: Authed,
    Query(p): Query<ListParams>,
) -> Result<Page, AdminError> {
    let (q, tag) = (p.q.trim().to_string(), p.tag.trim().to_string());
    let start = match (p.before, p.after) {
        (Some(id), _) => Start::Before(id),
        (None, Some(id)) => Start::After(id),
        (None, None) => Start::Newest,
    };
    let is_admin = a.role == Role::Admin;
    let teams = if is_admin {
        admin.app.store.list_teams().await?
    } else {
        Vec::new()
    };
    let team = p.team.trim().to_string();
    let team_id = match teams.iter().find(|t| t.name == team) {
        Some(t) => Some(t.id),
        None if team.is_empty() || !is_admin => None,
        None => {
            return Err(AdminError::NotFound(format!(
                "No team is named \"{team}\"."
            )))
        }
    };
    let filter = ListQuery {
        q: (!q.is_empty()).then(|| q.clone()),
        tags: (!tag.is_empty()).then(|| tag.clone()).into_iter().collect(),
        team: team_id,
        broken: p.broken.then_some(true),
        ..ListQuery::default()
    };
    let search = Search {
        q: q.clone(),
        tag: tag.clone(),
        team: team.clone(),
        broken: p.broken,
    };
    let shown = load(&admin, &a, &filter, start).await?;
    let (total, page) = (shown.total, &shown.links);
    let creators = Creators::load(&admin, &a).await?;
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
                div.buttons {
                    a.button href="/admin/bulk" id="bulk-link" { "Bulk create" }
                    " "
                    a.button href="/admin/csv" id="csv-link" { "CSV import / export" }
                    " "
                    a.button.primary href="/admin/links/new" { "New link" }
                }
            }
            form.search method="get" action="/admin/links" id="search" {
                input type="search" name="q" value=(q) placeholder="Search target URL, alias, title or code" aria-label="Search";
                input type="text" name="tag" value=(tag) placeholder="Tag" aria-label="Tag";
                @if is_admin {
                    select name="team" aria-label="Team" id="team-filter" {
                        option value="" selected[team.is_empty()] { "Every team" }
                        @for t in &teams {
                            option value=(t.name) selected[t.name == team] { (t.name) }
                        }
                    }
                }
                label.inline title="Targets that failed the link checker's probes" {
                    input type="checkbox" name="broken" value="true" id="broken-filter" checked[p.broken];
                    " Broken only"
                }
                button type="submit" { "Search" }
                @if search.any() { a href="/admin/links" { "Clear" } }
            }
            p.total id="total" {
                span id="total-count" { (total) } @if total == 1 { " link" } @else { " links" }
                @if search.any() { " match" @if total == 1 { "es" } }
                @if !page.is_empty() { span.hint { " · " (page.len()) " on this page" } }
            }
            @if page.is_empty() {
                p.empty id="no-links" {
                    @if !search.any() && start == Start::Newest {
                        "No links yet. " a href="/admin/links/new" { "Create the first one." }
                    } @else { "No links match." }
                }
            } @else {
                table.links id="links" {
                    thead { tr {
                        th { "Code" } th { "Target" } th { "Created" } th { "By" } th { "Expires" }
                        th { "Status" } th.num { "Clicks" }
                    } }
                    tbody {
                        @for l in page {
                            @let code = codes::public(&admin.app.codec, l);
                            tr data-code=(code) data-id=(l.id) {
                                td.code { a href={ "/admin/links/" (code) } { (code) } }
                                td.target title=(l.url) {
                                    @if let Some(t) = &l.title { span.title { (t) } " " }
                                    (l.url)
                                    @for t in &l.tags { " " span.tag { (t) } }
                                }
                                td.time.created { (view::time(l.created_at)) }
                                td.by { @if let Some(by) = &l.created_by { (creators.label(by)) } }
                                td.time.expires { @match l.expires_at { Some(e) => (view::time(e)), None => "never" } }
                                td.state {
                                    (view::state_badge(l.state(now).as_str()))
                                    @if l.broken { " " span.badge.state-disabled title="The target failed the link checker's probes: visitors get the fallback" { "broken" } }
                                }
                                td.num.clicks { (l.clicks) }
                            }
                        }
                    }
                }
            }
            nav.pager {
                @if start != Start::Newest && shown.newer { a id="newest-page" href=(list_url(&search, Start::Newest)) { "« Newest" } }
                @if let (true, Some(first)) = (shown.newer, page.first()) {
                    a id="prev-page" href=(list_url(&search, Start::After(first.id))) { "‹ Newer" }
                }
                @if let (true, Some(last)) = (shown.older, page.last()) {
                    a id="next-page" href=(list_url(&search, Start::Before(last.id))) { "Older ›" }
                }
            }
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_urls() {
        let none = Search::default();
        assert_eq!(list_url(&none, Start::Newest), "/admin/links");
        let search = Search {
            q: "a b&c".into(),
            tag: "x".into(),
            team: "sales".into(),
            broken: true,
        };
        assert_eq!(
            list_url(&search, Start::Before(7)),
            "/admin/links?q=a+b%26c&tag=x&team=sales&broken=true&before=7"
        );
        assert_eq!(list_url(&none, Start::After(9)), "/admin/links?after=9");
    }
}
