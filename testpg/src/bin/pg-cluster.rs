//! `pg-cluster start DIR` / `pg-cluster stop DIR`: a private PostgreSQL
//! cluster that outlives this process, for `make demo-cluster` and the
//! PostgreSQL benchmarks.
//!
//! `start` creates and starts a cluster with testpg (initdb as an
//! unprivileged user when run as root, a free port, a password file; the
//! cluster's own directory is under the system temporary directory, where
//! that user can reach it), creates the database `shortlink` and writes
//! `DIR/pg.env`, which names the cluster and how to reach it:
//!
//! ```text
//! PG_DIR=/tmp/shortlink-pg-demo-…
//! PG_PORT=…
//! PG_URL=postgres://shortlink@127.0.0.1:…/shortlink
//! PG_PASSWORD_FILE=/tmp/shortlink-pg-demo-…/password
//! ```
//!
//! (also printed on stdout). A cluster already named there is stopped first.
//! `stop` stops the cluster `DIR/pg.env` names (fast shutdown), removes its
//! directory and the file; without one it does nothing.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use shortlink_testpg::PgCluster;

const ENV_FILE: &str = "pg.env";
const DB: &str = "shortlink";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.as_slice() {
        [cmd, dir] if cmd == "start" => start(Path::new(dir)),
        [cmd, dir] if cmd == "stop" => stop(Path::new(dir)).map(|_| ()),
        _ => {
            eprintln!("usage: pg-cluster start DIR | pg-cluster stop DIR");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pg-cluster: {e}");
            ExitCode::FAILURE
        }
    }
}

fn start(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    stop(dir)?;
    let cluster = PgCluster::try_start("demo")?;
    // On an error the handle drops here, which stops the new cluster.
    let url = create_db(&cluster)?;
    let env = format!(
        "PG_DIR={}\nPG_PORT={}\nPG_URL={url}\nPG_PASSWORD_FILE={}\n",
        cluster.dir.display(),
        cluster.port,
        cluster.password_file().display()
    );
    let path = dir.join(ENV_FILE);
    std::fs::write(&path, &env).map_err(|e| format!("{}: {e}", path.display()))?;
    print!("{env}");
    // The server must outlive this process: `stop` ends it, not a drop.
    std::mem::forget(cluster);
    Ok(())
}

/// psql panics with its error (a test helper); turn that into a message.
fn create_db(cluster: &PgCluster) -> Result<String, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| cluster.create_db(DB))).map_err(|p| {
        let what = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        format!("creating the database {DB}: {what}")
    })
}

/// Stops the cluster `DIR/pg.env` names; `Ok(false)` when there is none.
fn stop(dir: &Path) -> Result<bool, String> {
    let path = dir.join(ENV_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let pg_dir = text
        .lines()
        .find_map(|l| l.strip_prefix("PG_DIR="))
        .map(PathBuf::from)
        .ok_or_else(|| format!("{}: no PG_DIR= line", path.display()))?;
    // Only ever a directory testpg made: never remove anything else.
    let name = pg_dir.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if !name.starts_with("shortlink-pg-") {
        return Err(format!(
            "{}: PG_DIR {} is not a testpg cluster directory",
            path.display(),
            pg_dir.display()
        ));
    }
    if let Some(pid) = postmaster_pid(&pg_dir)? {
        // SIGINT is PostgreSQL's fast shutdown: sessions are cut, data kept.
        // (pg_ctl refuses to run as root; a signal needs no such tool.)
        // SAFETY: kill(2) with a pid read from the server's own pid file.
        if unsafe { libc::kill(pid, libc::SIGINT) } == 0 {
            let deadline = Instant::now() + Duration::from_secs(30);
            // SAFETY: signal 0 only checks that the process exists.
            while unsafe { libc::kill(pid, 0) } == 0 {
                if Instant::now() > deadline {
                    return Err(format!(
                        "PostgreSQL (pid {pid}, {}) did not stop within 30 s",
                        pg_dir.display()
                    ));
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
    match std::fs::remove_dir_all(&pg_dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("{}: {e}", pg_dir.display())),
    }
    std::fs::remove_file(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(true)
}

/// The postmaster's pid from `data/postmaster.pid` (first line), if running.
fn postmaster_pid(pg_dir: &Path) -> Result<Option<i32>, String> {
    let path = pg_dir.join("data/postmaster.pid");
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let pid = text
        .lines()
        .next()
        .and_then(|l| l.trim().parse::<i32>().ok())
        .filter(|&p| p > 0)
        .ok_or_else(|| format!("{}: no pid on its first line", path.display()))?;
    // A pid file left by a crash may name a pid reused by another program.
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    Ok(comm.starts_with("postgres").then_some(pid))
}
