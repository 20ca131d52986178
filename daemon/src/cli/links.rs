//! `link`: links one at a time, and lists of them.

use std::io::Write;

use anyhow::{bail, Result};
use serde_json::{json, Map, Value};

use super::args::{LinkCommand, UpdateArgs};
use super::client::Client;
use super::output::Output;
use super::table::{when, Table};
use crate::api::links::ListParams;
use crate::links::{parse_time, CreateLink, LinkPassword, LinkView, TimeInput};

/// Runs a `link` command; `create` prints the short URL, `get` the JSON.
pub async fn link(client: &Client, command: LinkCommand, out: &mut Output) -> Result<()> {
    match command {
        LinkCommand::Create {
            url,
            alias,
            ttl,
            expires_at,
            tags,
            dedupe,
            forward_query,
            country_targets,
            password_file,
            variants,
            check,
            title,
        } => {
            let password = password_file
                .as_deref()
                .map(link_password)
                .transpose()?
                .map(LinkPassword::new);
            let req = CreateLink {
                url,
                alias,
                ttl,
                expires_at: expires_at.map(TimeInput::Text),
                tags: (!tags.is_empty()).then_some(tags),
                dedupe: dedupe.then_some(true),
                forward_query: forward_query.and_then(|f| f.value()),
                country_targets: country_map(country_targets)?,
                password,
                variants: (!variants.is_empty()).then_some(variants),
                check: check.and_then(|c| c.value()),
                title,
                ..CreateLink::default()
            };
            let link = client.create_link(&req).await?;
            if out.json {
                out.print_json(&link)?;
            } else {
                writeln!(out, "{}", link.short_url)?;
            }
        }
        LinkCommand::Get { code } => out.print_json(&client.link(&code).await?)?,
        LinkCommand::List { limit, q, tag, all } => {
            list(client, limit, q, tag, all, out).await?;
        }
        LinkCommand::Update(args) => {
            let code = args.code.clone();
            let body = patch_body(client, args).await?;
            let link = client.update_link(&code, &body).await?;
            done(out, &link, &format!("updated {code}"))?;
        }
        LinkCommand::Disable { code } => {
            let link = client
                .update_link(&code, &json!({ "disabled": true }))
                .await?;
            done(out, &link, &format!("disabled {code}"))?;
        }
        LinkCommand::Enable { code } => {
            let link = client
                .update_link(&code, &json!({ "disabled": false }))
                .await?;
            done(out, &link, &format!("enabled {code}"))?;
        }
        LinkCommand::Delete { code } => {
            client.delete_link(&code).await?;
            if out.json {
                out.print_json(&json!({ "deleted": code }))?;
            } else {
                eprintln!("deleted {code}");
            }
        }
    }
    Ok(())
}

/// `--country-target` pairs as the API's map; `None` when none was given.
/// A country named twice is refused here (the map would keep one).
fn country_map(
    pairs: Vec<(String, String)>,
) -> Result<Option<std::collections::BTreeMap<String, String>>> {
    if pairs.is_empty() {
        return Ok(None);
    }
    let mut out = std::collections::BTreeMap::new();
    for (code, url) in pairs {
        let key = code.to_ascii_uppercase();
        if out.insert(key.clone(), url).is_some() {
            bail!("--country-target: {key} is given twice");
        }
    }
    Ok(Some(out))
}

/// A link's password from `--password-file`: the file's first line, or
/// for `-` a prompt (twice, no echo) or stdin's first line.
fn link_password(file: &std::path::Path) -> Result<String> {
    if file.as_os_str() == "-" {
        return super::password::read_password("the link");
    }
    let text = std::fs::read_to_string(file)
        .map_err(|e| anyhow::anyhow!("--password-file {}: {e}", file.display()))?;
    let line = text.lines().next().unwrap_or("").to_string();
    if line.is_empty() {
        bail!(
            "--password-file {}: the first line is empty",
            file.display()
        );
    }
    Ok(line)
}

/// After an edit: the link as JSON with `--json`, else a line on stderr.
fn done(out: &mut Output, link: &LinkView, message: &str) -> Result<()> {
    if out.json {
        out.print_json(link)
    } else {
        eprintln!("{message} (now {})", link.state);
        Ok(())
    }
}

/// The `PATCH` body of `link update`: only the options given. Device
/// targets are replaced as a whole by the API, so the ones not named are
/// read from the link first and sent back unchanged.
async fn patch_body(client: &Client, a: UpdateArgs) -> Result<Value> {
    let mut body = Map::new();
    if let Some(url) = a.url {
        body.insert("url".into(), url.into());
    }
    if let Some(r) = a.redirect {
        body.insert("redirect".into(), r.into());
    }
    if let Some(f) = a.forward_query {
        body.insert("forward_query".into(), json!(f.value()));
    }
    if let Some(c) = a.check {
        body.insert("check".into(), json!(c.value()));
    }
    if let Some(t) = a.title {
        body.insert("title".into(), t.into());
    } else if a.no_title {
        body.insert("title".into(), Value::Null);
    }
    if let Some(t) = country_map(a.country_targets)? {
        body.insert("country_targets".into(), json!(t));
    } else if a.no_country_targets {
        body.insert("country_targets".into(), Value::Null);
    }
    if let Some(file) = a.password_file.as_deref() {
        body.insert("password".into(), link_password(file)?.into());
    } else if a.no_password {
        body.insert("password".into(), Value::Null);
    }
    if !a.variants.is_empty() {
        body.insert("variants".into(), json!(a.variants));
    } else if a.no_variants {
        body.insert("variants".into(), Value::Null);
    }
    if let Some(e) = a.expires {
        let t = parse_time(&e).map_err(|m| anyhow::anyhow!("--expires: {m}"))?;
        body.insert("expires_at".into(), t.into());
    } else if a.no_expiry {
        body.insert("expires_at".into(), Value::Null);
    }
    if let Some(n) = a.max_visits {
        body.insert("max_visits".into(), n.into());
    } else if a.no_max_visits {
        body.insert("max_visits".into(), Value::Null);
    }
    if !a.tags.is_empty() {
        let tags: Vec<&str> = a
            .tags
            .iter()
            .map(|t| t.trim())
            .filter(|t| !t.is_empty())
            .collect();
        body.insert("tags".into(), json!(tags));
    }
    let given = [&a.desktop, &a.mobile, &a.ios, &a.android];
    if given.iter().any(|t| t.is_some()) {
        let now = client.link(&a.code).await?.targets;
        let pick = |new: Option<String>, old: Option<String>| match new {
            Some(s) if s.is_empty() => None,
            Some(s) => Some(s),
            None => old,
        };
        let targets = json!({
            "desktop": pick(a.desktop, now.desktop),
            "mobile": pick(a.mobile, now.mobile),
            "ios": pick(a.ios, now.ios),
            "android": pick(a.android, now.android),
        });
        let none = targets
            .as_object()
            .is_some_and(|m| m.values().all(Value::is_null));
        body.insert("targets".into(), if none { Value::Null } else { targets });
    }
    if body.is_empty() {
        bail!("nothing to change: give at least one option (see `link update --help`)");
    }
    Ok(Value::Object(body))
}

/// `link list`: one page, or with `all` every page; a table, or with
/// `--json` one document `{links, total}`.
async fn list(
    client: &Client,
    limit: u32,
    q: Option<String>,
    tag: Option<String>,
    all: bool,
    out: &mut Output,
) -> Result<()> {
    let mut links: Vec<LinkView> = Vec::new();
    let mut cursor = None;
    let total = loop {
        let page = client
            .links(&ListParams {
                limit: Some(limit),
                cursor: cursor.take(),
                q: q.clone(),
                tag: tag.clone(),
            })
            .await?;
        links.extend(page.links);
        match page.next_cursor {
            Some(c) if all => cursor = Some(c),
            _ => break page.total,
        }
    };
    if out.json {
        return out.print_json(&json!({ "links": links, "total": total }));
    }
    let mut t = Table::new(&["CODE", "CLICKS", "STATE", "URL", "EXPIRES", "TAGS", "TITLE"]);
    for l in &links {
        t.row(vec![
            l.code.clone(),
            l.clicks.to_string(),
            l.state.clone(),
            l.url.clone(),
            when(l.expires_at),
            l.tags.join(","),
            l.title.clone().unwrap_or_default(),
        ]);
    }
    out.table(&t)?;
    if links.len() as u64 != total {
        eprintln!(
            "{} of {total} links shown (--all for every one)",
            links.len()
        );
    }
    Ok(())
}
