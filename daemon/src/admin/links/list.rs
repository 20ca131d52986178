//! The list page: `GET /admin/links`, newest first, searchable by URL,
//! alias and tag, paginated.

use axum::extract::{Query, State};
use maud::html;
use serde::Deserialize;

use super::super::view::{self, Nav, Page};
use super::super::{AdminError, AdminState, Authed};
use crate::codes;
use crate::store::links::ListQuery;
use crate::store::unix_now;

/// Links per list page.
pub const PAGE_SIZE: u32 = 25;

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

/// The list page's URL for a search and a page.
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
    let found = admin
        .app
        .links()
        .list(ListQuery {
            limit: PAGE_SIZE + 1,
            after: p.before.map(|id| (id as i64, id)),
            q: (!q.is_empty()).then(|| q.clone()),
            tags: (!tag.is_empty()).then(|| tag.clone()).into_iter().collect(),
            ..ListQuery::default()
        })
        .await?;
    let (total, mut page) = (found.total, found.links);
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
                input type="search" name="q" value=(q) placeholder="Search target URL, alias or code" aria-label="Search";
                input type="text" name="tag" value=(tag) placeholder="Tag" aria-label="Tag";
                button type="submit" { "Search" }
                @if !q.is_empty() || !tag.is_empty() { a href="/admin/links" { "Clear" } }
            }
            p.total id="total" { (total) @if total == 1 { " link" } @else { " links" } }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_urls() {
        assert_eq!(list_url("", "", None), "/admin/links");
        assert_eq!(
            list_url("a b&c", "x", Some(7)),
            "/admin/links?q=a+b%26c&tag=x&before=7"
        );
    }
}
