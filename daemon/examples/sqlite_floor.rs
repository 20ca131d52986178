//! The floor of an import on this machine: SQLite alone writing rows shaped
//! like `make bench`'s import into the daemon's own schema, with the
//! writer's settings (WAL, `synchronous=FULL`, the bulk connection's page
//! cache, CHUNK rows per transaction, 20,000 as `shortlinkd import`'s) and
//! the daemon's own statements and binding code (`store::sqlite::links::INSERT`
//! through `insert_with`, the dedupe probe through `by_dedupe_hash_with`),
//! prepared once per connection, and nothing else: no CSV, no validation, no
//! IPC, no thread hop.
//!
//! `cargo run --release --example sqlite_floor -- [ROWS] [RUNS] [CHUNK] [SHAPE]`
//! prints the writer thread's CPU and wall microseconds per row (medians
//! of RUNS) and the rows per second one writer could reach, for every
//! shape below or only the one named SHAPE:
//!
//! * `probe + insert`: what an import does per row (the dedupe probe, then
//!   the insert with every index of the schema);
//! * `insert`: the insert alone;
//! * `insert, dedupe key order`: the insert alone, each chunk sorted by
//!   the dedupe key and given its ids in that order (an import does not:
//!   its ids follow the file's lines);
//! * `insert, no dedupe index`: the insert with `links_dedupe8` dropped,
//!   to show what that index's random keys cost.
//!
//! A checkpoint runs every 100 chunks or 20,000 rows, between chunks and
//! outside the timed part (the daemon checkpoints on another thread).
//!
//! With a small CHUNK it measures single creates grouped as the writer
//! groups them (`cargo run --release --example sqlite_floor -- 30000 3 6
//! "probe + insert"`): what one durable commit costs, shared by the creates
//! in it.

mod common;

use std::time::Duration;

use common::{arg, median, Spent};
use rusqlite::Connection;
use sha2::{Digest, Sha256};
use shortlinkd::store::sqlite::links;
use shortlinkd::store::{Link, StoreResult};

const TARGET: &str =
    "https://www.example.com/campaigns/2026/spring/landing-page?utm_source=sms&utm_medium=bulk&id=";

#[derive(Clone, Copy)]
enum Shape {
    ProbeInsert,
    Insert,
    SortedInsert,
    InsertNoDedupeIndex,
}

impl Shape {
    fn name(self) -> &'static str {
        match self {
            Shape::ProbeInsert => "probe + insert",
            Shape::Insert => "insert",
            Shape::SortedInsert => "insert, dedupe key order",
            Shape::InsertNoDedupeIndex => "insert, no dedupe index",
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rows = arg(1, "ROWS", 1_000_000)?;
    let runs = arg(2, "RUNS", 3)?.max(1);
    // `shortlinkd import` sends chunks of 20,000 rows (cli/import.rs).
    let chunk = arg(3, "CHUNK", 20_000)?.max(1);
    println!("{rows} rows in chunks of {chunk}, medians of {runs} runs");
    let only = std::env::args().nth(4);
    let shapes: Vec<Shape> = [
        Shape::ProbeInsert,
        Shape::Insert,
        Shape::SortedInsert,
        Shape::InsertNoDedupeIndex,
    ]
    .into_iter()
    .filter(|s| only.as_deref().is_none_or(|o| s.name() == o))
    .collect();
    let mut times: Vec<Vec<Spent>> = vec![Vec::new(); shapes.len()];
    // Shapes take turns, so that the machine's drift touches them alike.
    for _ in 0..runs {
        for (i, shape) in shapes.iter().enumerate() {
            let dir = tempfile::tempdir()?;
            let path = dir.path().join("floor.db");
            // The daemon's own migrations make the schema.
            shortlinkd::store::sqlite::SqliteStore::open(&path, 1, 16)?.close();
            times[i].push(run(&path, rows, chunk, *shape)?);
        }
    }
    println!(
        "{:<24} {:>10} {:>10} {:>12}",
        "", "CPU µs/row", "wall µs/row", "rows/s (wall)"
    );
    for (shape, spent) in shapes.iter().zip(times) {
        let per_row = |f: fn(&Spent) -> Duration| {
            median(
                spent
                    .iter()
                    .map(|s| f(s).as_secs_f64() * 1e6 / rows as f64)
                    .collect(),
            )
        };
        let cpu = per_row(|s| s.cpu);
        let wall = per_row(|s| s.wall);
        println!(
            "{:<24} {cpu:>10.2} {wall:>10.2} {:>12.0}",
            shape.name(),
            1e6 / wall
        );
    }
    Ok(())
}

/// Writes `rows` rows; returns the time spent inside the transactions.
fn run(path: &std::path::Path, rows: usize, chunk: usize, shape: Shape) -> StoreResult<Spent> {
    let c = Connection::open(path)?;
    if let Shape::InsertNoDedupeIndex = shape {
        c.execute_batch("DROP INDEX links_dedupe8")?;
    }
    let probe = matches!(shape, Shape::ProbeInsert);
    c.pragma_update(None, "journal_mode", "WAL")?;
    c.pragma_update(None, "synchronous", "FULL")?;
    c.pragma_update(None, "mmap_size", 1i64 << 30)?;
    c.pragma_update(None, "cache_size", -64 * 1024)?;
    c.pragma_update(None, "wal_autocheckpoint", 0)?;
    let now = 1_790_000_000i64;
    let mut spent = Spent::default();
    let mut next = 0usize;
    let mut commits = 0u64;
    while next < rows {
        let end = (next + chunk).min(rows);
        // The hashes are made before the clock starts: the daemon makes
        // them on another thread.
        let mut work: Vec<(u64, String, [u8; 32])> = (next..end)
            .map(|i| {
                let url = format!("{TARGET}{:08}", 10_000_000 + i);
                let hash = Sha256::digest(url.as_bytes()).into();
                (i as u64 + 1, url, hash)
            })
            .collect();
        if let Shape::SortedInsert = shape {
            // Ids handed out in key order too, else the table's inserts
            // become the random ones.
            work.sort_unstable_by(|a, b| a.2[..8].cmp(&b.2[..8]));
            for (k, w) in work.iter_mut().enumerate() {
                w.0 = (next + k + 1) as u64;
            }
        }
        spent.time(|| -> StoreResult<()> {
            let tx = c.unchecked_transaction()?;
            let mut ins = tx.prepare_cached(links::INSERT)?;
            let mut find = tx.prepare_cached(links::BY_DEDUPE_HASH)?;
            for (id, url, hash) in work {
                if probe {
                    let hit = links::by_dedupe_hash_with(&mut find, &hash, now)?;
                    assert!(hit.is_none(), "row {id} already stored");
                }
                let link = Link {
                    id,
                    url,
                    created_at: now,
                    updated_at: now,
                    team_id: 1,
                    ..Link::default()
                };
                links::insert_with(&tx, &mut ins, &link, Some(&hash))?;
            }
            drop((ins, find));
            tx.commit()?;
            Ok(())
        })?;
        // Every 100 commits or 20,000 rows: the daemon's checkpointer keeps
        // the log short (its writes land on pages the file already has),
        // without truncating it under every commit.
        commits += 1;
        if commits.is_multiple_of(100) || end / 20_000 != next / 20_000 || end == rows {
            c.query_row("PRAGMA wal_checkpoint(RESTART)", [], |_| Ok(()))?;
        }
        next = end;
    }
    Ok(spent)
}
