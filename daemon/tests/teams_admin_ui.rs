//! The admin UI with teams and roles, against a real daemon (SQLite, or
//! PostgreSQL under `with-pg`): a member's pages show and change only
//! their team's links (another team's answers 404) and no user or team
//! page; a viewer changes nothing; an admin sees every team, filters the
//! list by one, and moves a user to another team with another role.

mod common;

use common::{http_unix, stderr, Daemon};
use serde_json::Value;

const PASSWORD: &str = "correct horse battery";

/// A signed-in user: the session cookie and the forms' CSRF token.
struct Session {
    cookie: String,
    csrf: String,
}

fn cookie_value(h: &axum::http::HeaderMap, name: &str) -> String {
    h.get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|v| v.strip_prefix(&format!("{name}=")))
        .and_then(|v| v.split(';').next())
        .unwrap_or_else(|| panic!("no {name} cookie in {h:?}"))
        .to_string()
}

fn csrf_of(page: &Value) -> String {
    let html = page.as_str().expect("an HTML page");
    let start = html.find("name=\"csrf\" value=\"").expect("a CSRF field") + 19;
    html[start..].split('"').next().unwrap().to_string()
}

fn form(fields: &[(&str, &str)]) -> Vec<u8> {
    url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(fields)
        .finish()
        .into_bytes()
}

/// Adds `name` from the CLI (with `extra` options) and signs them in.
async fn user(d: &Daemon, name: &str, extra: &[&str]) -> Session {
    let mut args = vec!["user", "add", name];
    args.extend_from_slice(extra);
    let out = d.cli_stdin(&args, &format!("{PASSWORD}\n"));
    assert!(out.status.success(), "user add: {}", stderr(&out));
    let (_, h, page) = http_unix(&d.api_path(), "GET", "/admin/login", &[], None)
        .await
        .unwrap();
    let login = format!("shortlink_login={}", cookie_value(&h, "shortlink_login"));
    let body = form(&[
        ("csrf", &csrf_of(&page)),
        ("name", name),
        ("password", PASSWORD),
    ]);
    let (s, h, v) = http_unix(
        &d.api_path(),
        "POST",
        "/admin/login",
        &[("cookie", &login)],
        Some(body),
    )
    .await
    .unwrap();
    assert_eq!(s, 303, "sign-in: {v}");
    let cookie = format!(
        "shortlink_session={}",
        cookie_value(&h, "shortlink_session")
    );
    let (_, _, page) = http_unix(
        &d.api_path(),
        "GET",
        "/admin/links/new",
        &[("cookie", &cookie)],
        None,
    )
    .await
    .unwrap();
    Session {
        csrf: csrf_of(&page),
        cookie,
    }
}

impl Session {
    async fn get(&self, d: &Daemon, path: &str) -> (u16, String) {
        let (s, _, v) = http_unix(
            &d.api_path(),
            "GET",
            path,
            &[("cookie", &self.cookie)],
            None,
        )
        .await
        .unwrap();
        (
            s,
            v.as_str()
                .map(str::to_string)
                .unwrap_or_else(|| v.to_string()),
        )
    }

    async fn post(&self, d: &Daemon, path: &str, fields: &[(&str, &str)]) -> u16 {
        let mut all = vec![("csrf", self.csrf.as_str())];
        all.extend_from_slice(fields);
        let headers = [
            ("cookie", self.cookie.as_str()),
            ("x-shortlink-base", "https://go.example.net"),
        ];
        let (s, _, _) = http_unix(&d.api_path(), "POST", path, &headers, Some(form(&all)))
            .await
            .unwrap();
        s
    }
}

/// The codes of the links on a list page, in page order.
fn listed(page: &str) -> Vec<String> {
    page.split("data-code=\"")
        .skip(1)
        .map(|rest| rest.split('"').next().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn pages_show_and_change_only_the_team_unless_admin() {
    let d = Daemon::start().await;
    for team in ["alpha", "beta"] {
        assert!(d.cli(&["team", "create", team]).status.success());
    }
    let admin = user(&d, "adm", &[]).await;
    let ann = user(&d, "ann", &["--team", "alpha", "--role", "member"]).await;
    let ben = user(&d, "ben", &["--team", "beta", "--role", "member"]).await;
    let vera = user(&d, "vera", &["--team", "alpha", "--role", "viewer"]).await;
    assert_eq!(
        ann.post(
            &d,
            "/admin/links",
            &[("url", "https://e.com/a"), ("alias", "ann-link")]
        )
        .await,
        303
    );
    assert_eq!(
        ben.post(
            &d,
            "/admin/links",
            &[("url", "https://e.com/b"), ("alias", "ben-link")]
        )
        .await,
        303
    );

    let (s, page) = ann.get(&d, "/admin/links").await;
    assert_eq!((s, listed(&page)), (200, vec!["ann-link".to_string()]));
    for path in ["/admin/links/ben-link", "/admin/links/ben-link/qr.svg"] {
        assert_eq!(ann.get(&d, path).await.0, 404, "{path}");
    }
    for path in [
        "/admin/links/ben-link/delete",
        "/admin/links/ben-link/disable",
    ] {
        assert_eq!(ann.post(&d, path, &[]).await, 404, "{path}");
    }
    let (s, csv) = ann.get(&d, "/admin/csv/export.csv").await;
    assert_eq!(s, 200);
    assert!(
        csv.contains("ann-link") && !csv.contains("ben-link"),
        "{csv}"
    );
    let (_, dash) = ann.get(&d, "/admin/dashboard").await;
    assert!(dash.contains("id=\"dash-total\">1<"), "{dash}");
    for path in ["/admin/users", "/admin/teams", "/admin/keys"] {
        assert_eq!(ann.get(&d, path).await.0, 403, "{path}");
    }

    // A viewer reads the team's links and changes none.
    let (_, page) = vera.get(&d, "/admin/links/ann-link").await;
    assert!(page.contains("https://e.com/a"));
    assert_eq!(
        vera.post(&d, "/admin/links/ann-link/disable", &[]).await,
        403
    );
    assert_eq!(
        vera.post(&d, "/admin/links", &[("url", "https://e.com/v")])
            .await,
        403
    );

    // An admin sees every team and filters by one.
    let (_, page) = admin.get(&d, "/admin/links").await;
    let mut all = listed(&page);
    all.sort();
    assert_eq!(all, ["ann-link", "ben-link"]);
    assert!(page.contains("id=\"team-filter\""));
    let (_, page) = admin.get(&d, "/admin/links?team=beta").await;
    assert_eq!(listed(&page), ["ben-link"]);
    let (_, page) = admin.get(&d, "/admin/teams").await;
    assert!(page.contains("data-team=\"alpha\"") && page.contains("data-team=\"beta\""));

    // Moving ann to beta as a viewer shows at her next page.
    let moved = admin
        .post(
            &d,
            "/admin/users/ann/membership",
            &[("team", "beta"), ("role", "viewer")],
        )
        .await;
    assert_eq!(moved, 303);
    let (_, page) = admin.get(&d, "/admin/users").await;
    assert!(
        page.contains("<option value=\"viewer\" selected>"),
        "the form shows the role"
    );
    let (_, page) = ann.get(&d, "/admin/links").await;
    assert_eq!(listed(&page), ["ben-link"]);
    assert_eq!(
        ann.post(&d, "/admin/links/ben-link/disable", &[]).await,
        403
    );
    // And a team is added and deleted from its page.
    assert_eq!(
        admin.post(&d, "/admin/teams", &[("name", "gamma")]).await,
        303
    );
    assert_eq!(admin.post(&d, "/admin/teams/gamma/delete", &[]).await, 303);
    assert_eq!(
        admin.post(&d, "/admin/teams/alpha/delete", &[]).await,
        409,
        "vera is in it"
    );
}
