//! The floor of counting clicks in `make bench`'s `hot` scenario on this
//! machine: SQLite alone doing the writes the daemon does for them, with the
//! daemon's own schema (its migrations), its log append
//! (`store::sqlite::clicks::append_batches`: the batch id, the framed batch), its
//! pending aggregate (`store::clicks::Aggregate`) and its fold statements
//! (`store::sqlite::clicks::ADD_TOTALS`, `ADD_ROW`), on one thread with the
//! writer's settings, and nothing else: no IPC, no nginx, no thread hop.
//!
//! `cargo run --release --example click_floor -- [LINKS] [CLICKS] [RUNS]`
//! draws CLICKS clicks (550,000: a 10 s `hot` window at 55,000 req/s)
//! uniformly over LINKS links (100,000, as `hot`), one click per row as a
//! worker's page holds them, in batches of 6,144 rows (a sealed page), and
//! prints the writing thread's CPU per click (medians of RUNS, each on a
//! new database) of:
//!
//! * `log`: each batch appended and committed (`synchronous=FULL`), and the
//!   log rows deleted after the fold;
//! * `aggregate`: each batch added to the pending aggregate;
//! * `fold, as the daemon`: per link in id order its totals in `links` and
//!   its `clicks` rows, one transaction;
//! * `fold, narrow totals`: the same with the totals in a table of their
//!   own (id, clicks, bot clicks): what a narrow totals table would cost;
//! * `fold, rows only`: the `clicks` rows alone, the least a fold can write
//!   and still keep hourly stats;
//!
//! each with the checkpoint that copies its pages into the database file
//! (the daemon's checkpointer does it on another thread), and the sum the
//! scenario cannot go below: log, aggregate and the rows-only fold. It
//! checks that each fold wrote every click, and fails when one did not.

mod common;

use std::time::Duration;

use common::{arg, median, Spent};
use rusqlite::{params, Connection};
use sha2::{Digest, Sha256};
use shortlink_core::country::UNKNOWN;
use shortlink_core::device::DeviceClass;
use shortlink_core::ipc::{BatchId, ClickBatch, ClickCount};
use shortlinkd::store::clicks::Aggregate;
use shortlinkd::store::sqlite::clicks::{self, ADD_ROW, ADD_TOTALS, DELETE_FOLDED_LOG};
use shortlinkd::store::sqlite::{links, writer_connection};
use shortlinkd::store::{Link, StoreResult};

/// Rows of a worker's page when it is sealed (`clicks::page::MAX_USED` in
/// the module).
const BATCH_ROWS: usize = 6_144;
const NOW: i64 = 1_790_000_000;
/// `make bench`'s targets (`bench/harness.py`'s `TARGET`): 101 bytes.
const TARGET: &str =
    "https://www.example.com/campaigns/2026/spring/landing-page?utm_source=sms&utm_medium=bulk&id=";

/// The fold shapes; each indexes [`Run::folds`] (`fold as usize`).
#[derive(Clone, Copy, PartialEq)]
enum Fold {
    AsDaemon,
    NarrowTotals,
    RowsOnly,
}

const FOLDS: [Fold; 3] = [Fold::AsDaemon, Fold::NarrowTotals, Fold::RowsOnly];

impl Fold {
    fn name(self) -> &'static str {
        match self {
            Fold::AsDaemon => "fold, as the daemon",
            Fold::NarrowTotals => "fold, narrow totals",
            Fold::RowsOnly => "fold, rows only",
        }
    }
}

/// One run's parts: log, its checkpoint, aggregate, then per fold shape
/// the fold and its checkpoint; and how many links a fold wrote.
#[derive(Clone, Copy, Default)]
struct Run {
    log: Spent,
    log_checkpoint: Spent,
    aggregate: Spent,
    folds: [(Spent, Spent); 3],
    links_folded: usize,
}

impl Run {
    /// The CPU time of log, aggregate and the fold `fold`, with their
    /// checkpoints.
    fn sum(&self, fold: Fold) -> Spent {
        let (f, ckpt) = self.folds[fold as usize];
        let parts = [self.log, self.log_checkpoint, self.aggregate, f, ckpt];
        Spent {
            cpu: parts.iter().map(|p| p.cpu).sum(),
            wall: parts.iter().map(|p| p.wall).sum(),
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let links = arg(1, "LINKS", 100_000)?.max(1);
    let clicks = arg(2, "CLICKS", 550_000)?.max(1);
    let runs = arg(3, "RUNS", 3)?.max(1);
    println!(
        "{clicks} clicks uniformly over {links} links, batches of {BATCH_ROWS} rows, medians of {runs} runs"
    );
    let mut all = Vec::new();
    for r in 0..runs {
        all.push(run(links, clicks, r)?);
    }
    let per_click = |d: Duration| d.as_secs_f64() * 1e6 / clicks as f64;
    println!(
        "{:<28} {:>13} {:>14} {:>14}",
        "", "CPU µs/click", "wall µs/click", "CPU µs/link"
    );
    let show = |name: &str, part: &dyn Fn(&Run) -> Spent, per_link: bool| {
        let cpu = median(all.iter().map(|r| per_click(part(r).cpu)).collect());
        let wall = median(all.iter().map(|r| per_click(part(r).wall)).collect());
        let link = if per_link {
            let v = all
                .iter()
                .map(|r| part(r).cpu.as_secs_f64() * 1e6 / r.links_folded.max(1) as f64);
            format!("{:>14.2}", median(v.collect()))
        } else {
            String::new()
        };
        println!("{name:<28} {cpu:>13.3} {wall:>14.3} {link}");
    };
    show("log", &|r| r.log, false);
    show("  its checkpoint", &|r| r.log_checkpoint, false);
    show("aggregate", &|r| r.aggregate, false);
    for fold in FOLDS {
        show(fold.name(), &|r| r.folds[fold as usize].0, true);
        show("  its checkpoint", &|r| r.folds[fold as usize].1, true);
    }
    show("sum, as the daemon", &|r| r.sum(Fold::AsDaemon), false);
    show("sum, the least", &|r| r.sum(Fold::RowsOnly), false);
    println!(
        "({} distinct links folded per window)",
        all.first().map_or(0, |r| r.links_folded)
    );
    Ok(())
}

fn checkpoint(c: &Connection) -> StoreResult<()> {
    c.query_row("PRAGMA wal_checkpoint(RESTART)", [], |_| Ok(()))?;
    Ok(())
}

/// The links, in chunks of 20,000, with `make bench`'s targets and their
/// dedupe hashes, and a narrow copy of their totals.
fn make_links(c: &Connection, n: usize) -> StoreResult<()> {
    let mut id = 0u64;
    while (id as usize) < n {
        let tx = c.unchecked_transaction()?;
        {
            let mut ins = tx.prepare_cached(links::INSERT)?;
            for _ in 0..20_000.min(n - id as usize) {
                id += 1;
                let url = format!("{TARGET}{id:08}");
                let hash: [u8; 32] = Sha256::digest(url.as_bytes()).into();
                let link = Link {
                    id,
                    url,
                    created_at: NOW - 86_400,
                    updated_at: NOW - 86_400,
                    team_id: 1,
                    ..Link::default()
                };
                links::insert_with(&tx, &mut ins, &link, Some(&hash))?;
            }
        }
        tx.commit()?;
    }
    c.execute_batch(
        "CREATE TABLE link_totals (id INTEGER PRIMARY KEY, clicks INTEGER NOT NULL, \
         bot_clicks INTEGER NOT NULL); \
         INSERT INTO link_totals SELECT id, clicks, bot_clicks FROM links;",
    )?;
    checkpoint(c)
}

/// The batches of one window: clicks drawn uniformly (xorshift, seeded per
/// run) over links 1..=`links`, in the current hour, no referrer, no
/// device known, country unknown: `hot`'s clicks (wrk sends neither
/// `Referer` nor `User-Agent`).
fn batches(links: usize, clicks: usize, seed: u64) -> Vec<ClickBatch> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let hour = (NOW / 3600) as u32;
    let mut out = Vec::new();
    let mut left = clicks;
    while left > 0 {
        let n = left.min(BATCH_ROWS);
        left -= n;
        let mut id = [0u8; 16];
        id[..8].copy_from_slice(&(out.len() as u64).to_le_bytes());
        id[8..].copy_from_slice(&seed.to_le_bytes());
        let rows = (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                ClickCount {
                    link_id: x % links as u64 + 1,
                    hour,
                    device: DeviceClass::Other,
                    bot: false,
                    referrer: None,
                    count: 1,
                    country: UNKNOWN,
                    variant: 0,
                }
            })
            .collect();
        out.push(ClickBatch {
            batch_id: BatchId(id),
            clicks: rows,
        });
    }
    out
}

fn run(links: usize, clicks: usize, r: usize) -> Result<Run, Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("floor.db");
    // The daemon's own migrations make the schema.
    shortlinkd::store::sqlite::SqliteStore::open(&path, 1, 16)?.close();
    let c = writer_connection(&path)?;
    make_links(&c, links)?;
    let batches = batches(links, clicks, r as u64 + 1);
    let mut out = Run::default();
    let mut last = 0;
    for b in &batches {
        let mut one = [b.clone()];
        let seqs = out.log.time(|| -> StoreResult<_> {
            let tx = c.unchecked_transaction()?;
            let seqs = clicks::append_batches(&tx, &mut one, NOW)?;
            tx.commit()?;
            Ok(seqs)
        })?;
        last = seqs.into_iter().flatten().max().unwrap_or(last);
    }
    out.log_checkpoint.time(|| checkpoint(&c))?;
    let mut agg = Aggregate::default();
    out.aggregate.time(|| {
        for b in &batches {
            agg.add_batch(b, NOW);
        }
    });
    // The fold shapes take turns from run to run, each in an hour of its
    // own. As in `make bench`, whose warm-up's fold makes the hour's rows
    // that its measured windows' folds then add to, an untimed fold first
    // inserts the rows the timed one updates.
    for k in 0..FOLDS.len() {
        let fold = FOLDS[(k + r) % FOLDS.len()];
        write_fold(&c, &agg, fold)?;
        checkpoint(&c)?;
        let (spent, ckpt) = &mut out.folds[fold as usize];
        spent.time(|| write_fold(&c, &agg, fold))?;
        ckpt.time(|| checkpoint(&c))?;
        check_fold(&c, fold, clicks)?;
    }
    out.links_folded = agg.link_count();
    // The log rows the fold covered go with the next one.
    out.log.time(|| -> StoreResult<()> {
        let tx = c.unchecked_transaction()?;
        tx.execute(DELETE_FOLDED_LOG, [last])?;
        tx.commit()?;
        Ok(())
    })?;
    out.log_checkpoint.time(|| checkpoint(&c))?;
    Ok(out)
}

/// The `clicks` rows of fold shape `fold` go this many hours after the
/// window's own.
fn hour_offset(fold: Fold) -> i64 {
    fold as i64
}

/// Whether the two folds of shape `fold` wrote what they were given: each
/// of the window's `clicks` twice in its hour's rows and, where the shape
/// keeps them, in the totals (its own since the links were made).
fn check_fold(c: &Connection, fold: Fold, clicks: usize) -> Result<(), Box<dyn std::error::Error>> {
    let hour = NOW / 3600 + hour_offset(fold);
    let want = 2 * clicks as i64;
    let rows: i64 = c.query_row(
        "SELECT coalesce(sum(count), 0) FROM clicks WHERE hour = ?1",
        [hour],
        |r| r.get(0),
    )?;
    let totals: Option<i64> = match fold {
        Fold::AsDaemon => Some(c.query_row("SELECT sum(clicks) FROM links", [], |r| r.get(0))?),
        Fold::NarrowTotals => {
            Some(c.query_row("SELECT sum(clicks) FROM link_totals", [], |r| r.get(0))?)
        }
        Fold::RowsOnly => None,
    };
    if rows != want || totals.is_some_and(|t| t != want) {
        return Err(format!(
            "{}: {rows} clicks in the hour's rows and {totals:?} in the totals, not {want}",
            fold.name()
        )
        .into());
    }
    Ok(())
}

/// One fold of `agg`, in one transaction.
fn write_fold(c: &Connection, agg: &Aggregate, fold: Fold) -> StoreResult<()> {
    let tx = c.unchecked_transaction()?;
    {
        let mut totals = tx.prepare_cached(match fold {
            Fold::NarrowTotals => {
                "UPDATE link_totals SET clicks = clicks + ?2, bot_clicks = bot_clicks + ?3 \
                 WHERE id = ?1"
            }
            _ => ADD_TOTALS,
        })?;
        let mut row = tx.prepare_cached(ADD_ROW)?;
        let mut ids: Vec<u64> = agg.link_ids().collect();
        ids.sort_unstable();
        for id in ids {
            let Some(l) = agg.link(id) else { continue };
            if fold != Fold::RowsOnly {
                totals.execute(params![id as i64, l.clicks, l.bots])?;
            }
            let mut rows: Vec<_> = l.rows.iter().collect();
            rows.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            for (k, n) in rows {
                row.execute(params![
                    id as i64,
                    k.hour + hour_offset(fold),
                    k.device as i64,
                    k.bot,
                    k.referrer,
                    k.country.as_str(),
                    n
                ])?;
            }
        }
    }
    tx.commit()?;
    Ok(())
}
