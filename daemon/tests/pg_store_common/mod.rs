//! What the `PgStore` tests share: opening a store, links and edits to
//! write, and the change log as rows.

#![allow(dead_code)]

use shortlink_core::DeploymentKey;
use shortlinkd::config::Config;
use shortlinkd::store::postgres::backend::PgStore;
use shortlinkd::store::{ImportLink, Link, LinkEdit, NewLink};
use testpg::PgCluster;

pub async fn open(config: &Config) -> PgStore {
    PgStore::open(config, &DeploymentKey::from_bytes([7; 32]))
        .await
        .unwrap()
}

pub fn new_link(id: u64, alias: Option<&str>, url: &str, targets: &[&str]) -> NewLink {
    NewLink {
        link: Link {
            id,
            alias: alias.map(Into::into),
            url: url.into(),
            ..Link::default()
        },
        dedupe_hash: [id as u8; 32],
        dedupe: false,
        alias_targets: targets.iter().map(|t| t.to_string()).collect(),
    }
}

pub fn edit(alias: Option<&str>, targets: &[&str]) -> LinkEdit {
    let alias = alias.map(String::from);
    LinkEdit {
        apply: Box::new(move |old: &Link| {
            let mut new = old.clone();
            new.alias = alias;
            new.updated_at = old.updated_at + 1;
            Ok(new)
        }),
        alias_targets: targets.iter().map(|t| t.to_string()).collect(),
        check: Box::new(|_, _| None),
    }
}

/// The change log as `link_id|old_alias|new_alias` rows, in seq order.
pub fn change_rows(cluster: &PgCluster, db: &str) -> Vec<String> {
    let out = cluster.psql(
        db,
        "SELECT string_agg(concat_ws('|', link_id, coalesce(old_alias, '-'), \
         coalesce(new_alias, '-')), ',' ORDER BY seq) FROM edge_changes",
    );
    out.split(',')
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

pub fn import_row(id: u64, keep: Option<u64>, alias: Option<&str>, url: &str) -> ImportLink {
    let mut new = new_link(id, alias, url, &[]);
    new.dedupe_hash = [0; 32];
    url.bytes()
        .zip(new.dedupe_hash.iter_mut())
        .for_each(|(b, h)| *h = b);
    ImportLink {
        new,
        keep_id: keep,
        advance: true,
        clicks: Some((7, 2)),
        sees: None,
    }
}
