//! `shortlinkd import`: many CSV rows in one transaction, each judged like
//! a create, the bad ones reported by line. Rows from an `export` keep
//! their generated code (the id) and click totals; rows from another
//! shortener keep their code as the alias where our alias rules allow
//! ([`formats`] reads those files).

pub mod formats;
mod names;
mod row;

use std::collections::{HashMap, HashSet};

pub use row::{ImportError, ImportExtra, ImportOutcome, ImportRow};

use super::input::{parse_time, CreateLink, RenewInput, TimeInput};
use super::loops::AliasTarget;
use super::ops::{created, new_link, Links};
use super::rules::Prepared;
use crate::codes;
use crate::edge::{EdgeKeys, LinkChange};
use crate::links::team::TeamScope;
use crate::store::{CodeRef, ImportLink, Imported, LinkError, StoreResult};
use crate::timestamp::unix_now;
use names::OldName;

/// Most rows in one import call.
pub const MAX_IMPORT: usize = 50_000;

/// Largest id an imported code keeps (2^40, a trillion links). A code of
/// another length can decode to any id (its check character passes for
/// about one string in 31), and keeping a huge one would move the id
/// allocator to the end of its range for every later create.
pub const MAX_KEPT_ID: u64 = 1 << 40;

/// A row that passed the rules, waiting for the transaction.
struct Good {
    line: u64,
    prepared: Prepared,
    /// The id of the row's exported generated code, kept when free.
    keep_id: Option<u64>,
    /// `keep_id` may lie anywhere (a code-shaped name): kept without
    /// moving the id allocator.
    far: bool,
    /// The team the file names, when the importer may place links there.
    owner: Option<i64>,
    /// `(clicks, bot_clicks)` to restore.
    clicks: Option<(i64, i64)>,
}

/// What the transaction did.
#[derive(Default)]
struct Written {
    refused: Vec<(u64, LinkError)>,
    notes: Vec<ImportError>,
    present: usize,
    /// The lines of the rows counted in `present`.
    present_lines: HashSet<u64>,
    /// `(id, alias, kept its exported code)` of every new link.
    made: Vec<(u64, Option<String>, bool)>,
}

impl Links<'_> {
    /// Imports many rows in one transaction: every row is validated like a
    /// create; a row already stored before this call is skipped and counted
    /// as present; a row with an exported generated code whose id is free
    /// keeps it (the allocator is moved past it first, so later creates
    /// never collide), the others get ids from one block; click totals are
    /// restored. The bad rows are reported by line. Returns after the
    /// commit. Links with an alias or a kept code are announced to the
    /// edge (a kept code may have been asked for, and cached as missing,
    /// before it was imported).
    pub async fn import(
        &self,
        rows: Vec<ImportRow>,
        created_by: Option<&str>,
    ) -> Result<ImportOutcome, LinkError> {
        if rows.len() > MAX_IMPORT {
            return Err(LinkError::BatchTooLarge {
                got: rows.len(),
                max: MAX_IMPORT,
            });
        }
        let now = unix_now();
        let mut outcome = ImportOutcome::default();
        let taken = self.taken_aliases(&rows).await?;
        let teams = self.team_names(&rows).await?;
        let good: Vec<Good> = rows
            .into_iter()
            .filter_map(|row| self.judge(row, &taken, &teams, created_by, now, &mut outcome))
            .collect();
        let tried = good.len();
        // Kept ids first: no id handed out from here on is one of them.
        if let Some(last) = good
            .iter()
            .filter(|g| !g.far)
            .filter_map(|g| g.keep_id)
            .max()
        {
            self.ids.reserve_through(last).await?;
        }
        let far: Vec<u64> = good
            .iter()
            .filter(|g| g.far)
            .filter_map(|g| g.keep_id)
            .collect();
        self.ids.exclude(&far);
        let ids = self.ids.take(tried).await?;
        let (rows, refs): (Vec<ImportLink>, Vec<(u64, Vec<AliasTarget>)>) = good
            .into_iter()
            .zip(ids)
            .map(|(g, id)| {
                let team = TeamScope {
                    owner: g.owner.unwrap_or(self.team.owner),
                    ..self.team
                };
                let (new, targets) = new_link(id, g.prepared, team);
                let row = ImportLink {
                    new,
                    keep_id: g.keep_id,
                    advance: !g.far,
                    clicks: g.clicks,
                    sees: self.team.sees,
                };
                (row, (g.line, targets))
            })
            .unzip();
        let written = tally(refs, self.store.import_links(rows, now).await?);
        outcome.present = written.present;
        outcome.imported = tried - written.refused.len() - written.present;
        for (line, e) in written.refused {
            outcome.errors.push(import_error(line, e));
        }
        outcome.errors.sort_by_key(|e| e.line);
        outcome.notes.extend(written.notes);
        // Notes only on rows imported now.
        let skipped: HashSet<u64> = outcome.errors.iter().map(|e| e.line).collect();
        outcome
            .notes
            .retain(|n| !skipped.contains(&n.line) && !written.present_lines.contains(&n.line));
        outcome.notes.sort_by_key(|e| e.line);
        self.count_created(outcome.imported);
        self.edge
            .links_changed(written.made.iter().filter_map(|(id, alias, kept)| {
                match (alias.as_deref(), kept) {
                    (Some(alias), _) => Some(LinkChange {
                        old: None,
                        new: Some(EdgeKeys {
                            id: *id,
                            alias: Some(alias),
                        }),
                    }),
                    (None, true) => Some(LinkChange::in_place(*id, None)),
                    (None, false) => None,
                }
            }))
            .await;
        Ok(outcome)
    }

    /// One row judged like a create: the link to write, or `None` with
    /// the row's error in `outcome`; a foreign code our rules refuse, or
    /// that another link holds, is dropped with a note.
    #[allow(clippy::too_many_arguments)]
    fn judge(
        &self,
        row: ImportRow,
        taken: &HashMap<String, Option<String>>,
        teams: &HashMap<String, i64>,
        created_by: Option<&str>,
        now: i64,
        outcome: &mut ImportOutcome,
    ) -> Option<Good> {
        let ImportRow(line, url, alias, expires_at, tags, extra) = row;
        if let Some(why) = &extra.disabled_because {
            outcome
                .notes
                .push(note(line, "disabled", format!("imported disabled: {why}")));
        }
        let mut kept = Names::default();
        if let Some(a) = alias {
            if let Err(e) = self.keep_alias(
                line,
                a,
                &url,
                extra.alias_optional,
                taken,
                &mut kept,
                outcome,
            ) {
                outcome.errors.push(import_error(line, e));
                return None;
            }
        }
        if let Some(code) = extra.code.as_deref() {
            self.keep_code(line, code, &url, taken, &mut kept, outcome);
        }
        let clicks = match click_totals(&extra) {
            Ok(c) => c,
            Err(e) => {
                outcome.errors.push(import_error(line, e));
                return None;
            }
        };
        // An export holds expired links too: they come back expired.
        let expired = expires_at
            .as_deref()
            .and_then(|t| t.parse::<i64>().ok())
            .filter(|&t| t <= now);
        let req = CreateLink {
            url,
            alias: kept.alias,
            expires_at: expires_at
                .filter(|_| expired.is_none())
                .map(TimeInput::Text),
            renew_on_access: extra.renew_ttl.map(RenewInput::Seconds),
            tags,
            redirect: extra.redirect,
            max_visits: extra.max_visits,
            targets: extra.targets,
            disabled: extra.disabled.then_some(true),
            forward_query: extra.forward_query,
            country_targets: extra.country_targets,
            variants: extra.variants,
            check: extra.check,
            title: extra.title,
            ..CreateLink::default()
        };
        let created_at = extra.created_at.as_deref().map(|t| created_at(t, now));
        let prepared = self.rules.prepare(&req, created_by, now);
        match (prepared, created_at) {
            (Err(e), _) | (_, Some(Err(e))) => {
                outcome.errors.push(import_error(line, e));
                None
            }
            (Ok(mut p), t) => {
                if let Some(Ok(t)) = t {
                    p.link.created_at = t;
                }
                if expired.is_some() {
                    p.link.expires_at = expired;
                }
                if kept.loose_alias.is_some() {
                    p.link.alias = kept.loose_alias;
                }
                // Whose link it is, as the file says: only for an importer
                // that sees every team (another's go into its own team).
                let mut owner = None;
                if self.team.sees.is_none() {
                    if let Some(creator) = extra.creator {
                        p.link.created_by = Some(creator);
                    }
                    owner = extra.team.and_then(|name| match teams.get(&name) {
                        Some(id) => Some(*id),
                        None => {
                            outcome.notes.push(note(
                                line,
                                "team",
                                format!("there is no team \"{name}\" here; imported into the importer's team"),
                            ));
                            None
                        }
                    });
                }
                Some(Good {
                    line,
                    prepared: p,
                    keep_id: kept.id,
                    far: kept.far,
                    owner,
                    clicks,
                })
            }
        }
    }

    /// Whether the row's `url` is `stored` once normalized.
    fn is_url(&self, url: &str, stored: &str) -> bool {
        self.rules.check_url("url", url).is_ok_and(|u| u == stored)
    }

    /// The URL of the link holding each foreign code of `rows` (and each
    /// exported code that may become an alias) that is already an alias
    /// here.
    async fn taken_aliases(
        &self,
        rows: &[ImportRow],
    ) -> StoreResult<HashMap<String, Option<String>>> {
        let wanted: Vec<String> = rows
            .iter()
            .filter(|r| r.5.alias_optional)
            .filter_map(|r| r.2.clone())
            .chain(rows.iter().filter_map(|r| r.5.code.clone()))
            .collect();
        if wanted.is_empty() {
            return Ok(HashMap::new());
        }
        self.store.aliases_taken(wanted, self.team.sees).await
    }
}

impl Links<'_> {
    /// The ids of the teams `rows` name, when this importer may place links
    /// in any team.
    async fn team_names(&self, rows: &[ImportRow]) -> StoreResult<HashMap<String, i64>> {
        if self.team.sees.is_some() || rows.iter().all(|r| r.5.team.is_none()) {
            return Ok(HashMap::new());
        }
        Ok(self
            .store
            .list_teams()
            .await?
            .into_iter()
            .map(|t| (t.name, t.id))
            .collect())
    }

    /// Keeps the row's alias (or foreign code) as [`names`] says; a name
    /// another link holds, or our rules refuse, is dropped with a note when
    /// it was another shortener's code, else it is the row's error.
    #[allow(clippy::too_many_arguments)]
    fn keep_alias(
        &self,
        line: u64,
        a: String,
        url: &str,
        optional: bool,
        taken: &HashMap<String, Option<String>>,
        kept: &mut Names,
        outcome: &mut ImportOutcome,
    ) -> Result<(), LinkError> {
        let held_elsewhere = |a: &str| {
            // Another team's holder is taken whatever its URL.
            taken
                .get(a)
                .is_some_and(|held| held.as_deref().is_none_or(|held| !self.is_url(url, held)))
        };
        match names::judge(self.rules, &a) {
            OldName::Alias(_) | OldName::LooseAlias(_) if optional && held_elsewhere(&a) => {
                outcome.notes.push(note(
                    line,
                    "alias",
                    format!("alias \"{a}\" is taken by another link; imported without it"),
                ));
            }
            OldName::Alias(a) => kept.alias = Some(a),
            OldName::LooseAlias(a) => kept.loose_alias = Some(a),
            OldName::Code(id) => {
                outcome.notes.push(note(
                    line,
                    "kept",
                    format!(
                        "\"{a}\" has the form of a generated code here: the link keeps it \
                         as its code"
                    ),
                ));
                kept.id = Some(id);
                kept.far = true;
            }
            OldName::Refused(why) if optional => {
                outcome.notes.push(note(
                    line,
                    "alias",
                    format!("{why}; imported without the code \"{a}\""),
                ));
            }
            OldName::Refused(why) => {
                return Err(LinkError::Invalid {
                    field: "alias",
                    code: "invalid_alias",
                    message: why,
                })
            }
        }
        Ok(())
    }

    /// Keeps the row's exported code: its id when it is one of ours (moving
    /// the allocator past it when it is in the range this deployment hands
    /// out); another deployment's code keeps working as the alias when the
    /// row has none.
    fn keep_code(
        &self,
        line: u64,
        code: &str,
        url: &str,
        taken: &HashMap<String, Option<String>>,
        kept: &mut Names,
        outcome: &mut ImportOutcome,
    ) {
        if kept.id.is_some() {
            return;
        }
        if let CodeRef::Id(id) = codes::resolve(&self.rules.codec, code) {
            kept.id = Some(id);
            kept.far = id > MAX_KEPT_ID;
            return;
        }
        let free = kept.alias.is_none() && kept.loose_alias.is_none();
        let name = free.then(|| names::judge(self.rules, code));
        let held = taken
            .get(code)
            .is_some_and(|held| held.as_deref().is_none_or(|held| !self.is_url(url, held)));
        let as_alias = format!(
            "\"{code}\" is not a generated code of this deployment (exported under \
             another key?); kept as the link's alias"
        );
        let message = match name {
            Some(OldName::Alias(a)) if !held => {
                kept.alias = Some(a);
                outcome.notes.push(note(line, "kept", as_alias));
                return;
            }
            Some(OldName::LooseAlias(a)) if !held => {
                kept.loose_alias = Some(a);
                outcome.notes.push(note(line, "kept", as_alias));
                return;
            }
            Some(OldName::Refused(why)) => format!("{why}; imported under a new code"),
            _ if held => format!("\"{code}\" is another link's alias here; imported under a new code"),
            _ => format!(
                "\"{code}\" is not a generated code of this deployment (exported under another key?) \
                 and the link has an alias; imported under a new code"
            ),
        };
        outcome.notes.push(note(line, "code", message));
    }
}

/// The names a row keeps.
#[derive(Default)]
struct Names {
    alias: Option<String>,
    loose_alias: Option<String>,
    id: Option<u64>,
    /// `id` may lie anywhere: kept without moving the allocator.
    far: bool,
}

/// What the store did with each row, as the import reports it.
fn tally(rows: Vec<(u64, Vec<AliasTarget>)>, imported: Vec<Imported>) -> Written {
    let mut w = Written::default();
    for ((line, targets), r) in rows.into_iter().zip(imported) {
        let (outcome, kept, moved) = match r {
            Imported::Present => {
                w.present += 1;
                w.present_lines.insert(line);
                continue;
            }
            Imported::Written {
                outcome,
                kept,
                moved,
            } => (outcome, kept, moved),
        };
        if moved {
            w.notes.push(note(
                line,
                "code",
                "the exported code belongs to another link here; imported under a new code".into(),
            ));
        }
        match created(outcome, &targets) {
            Ok(c) => {
                let link = c.link();
                w.made.push((link.id, link.alias.clone(), kept));
            }
            Err(e) => w.refused.push((line, e)),
        }
    }
    w
}

/// A row's click totals: bots never more than all clicks.
fn click_totals(extra: &ImportExtra) -> Result<Option<(i64, i64)>, LinkError> {
    let bad = |field: &'static str, message: String| LinkError::Invalid {
        field,
        code: "invalid_clicks",
        message,
    };
    let clicks = match extra.clicks {
        None if extra.bot_clicks.is_some() => {
            return Err(bad("bot_clicks", "bot_clicks given without clicks".into()))
        }
        None => return Ok(None),
        Some(c) => i64::try_from(c).map_err(|_| bad("clicks", format!("{c} is too large")))?,
    };
    let bots = extra.bot_clicks.unwrap_or(0);
    if bots > clicks as u64 {
        return Err(bad(
            "bot_clicks",
            format!("{bots} bot clicks are more than the {clicks} clicks"),
        ));
    }
    Ok(Some((clicks, bots as i64)))
}

/// A note on a row imported with a change.
fn note(line: u64, field: &str, message: String) -> ImportError {
    ImportError {
        line,
        field: Some(field.to_string()),
        message,
    }
}

/// A row's creation time: Unix seconds or RFC 3339, not after `now`.
fn created_at(t: &str, now: i64) -> Result<i64, LinkError> {
    let bad = |message: String| LinkError::Invalid {
        field: "created_at",
        code: "invalid_created_at",
        message,
    };
    let t = parse_time(t).map_err(bad)?;
    if t > now {
        return Err(bad(format!("created_at {t} is in the future")));
    }
    Ok(t)
}

/// A refused row as the CLI reports it: its line, its field, the message.
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

#[cfg(test)]
mod tests;
