//! Our own `shortlinkd export` (`links::csv_format::HEADER`): `code,url,
//! alias,expires_at,tags,clicks,bot_clicks,created_at,redirect,max_visits,
//! disabled,target_desktop,target_mobile,target_ios,target_android,
//! forward_query,country_targets,protected,variants,check,title,
//! renew_on_access,team,creator` (a `true` in `protected` is refused:
//! exports never carry passwords). Only `url` is needed; the generated
//! code, the click totals and the title come back with the link.

use super::{Columns, Headers};

/// What makes a header ours.
pub const NEEDS: &str = "a `url` column";

/// Our columns in `h`, when it has a `url` column.
pub fn columns(h: &Headers) -> Option<Columns> {
    Some(Columns {
        url: Some(h.col(&["url"])?),
        alias: h
            .col(&["alias"])
            .map(|c| vec![(c, super::CodeCell::Plain)])
            .unwrap_or_default(),
        code: h.col(&["code"]),
        created_at: h.col(&["created_at"]),
        expires_at: h.col(&["expires_at", "expiry", "expires"]),
        tags: h.col(&["tags", "tag"]),
        tag_separators: &[',', ';', '|'],
        clicks: h.col(&["clicks"]),
        bot_clicks: h.col(&["bot_clicks"]),
        redirect: h.col(&["redirect"]),
        max_visits: h.col(&["max_visits"]),
        disabled: h.col(&["disabled"]),
        forward_query: h.col(&["forward_query"]),
        country_targets: h.col(&["country_targets"]),
        protected: h.col(&["protected"]),
        variants: h.col(&["variants"]),
        check: h.col(&["check"]),
        title: h.col(&["title"]),
        renew: h.col(&["renew_on_access"]),
        team: h.col(&["team"]),
        creator: h.col(&["creator"]),
        targets: [
            h.col(&["target_desktop"]),
            h.col(&["target_mobile"]),
            h.col(&["target_ios"]),
            h.col(&["target_android"]),
        ],
        ..Columns::default()
    })
}
