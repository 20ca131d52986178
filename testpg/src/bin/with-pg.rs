//! `with-pg COMMAND [ARGS…]`: runs COMMAND with a private PostgreSQL
//! cluster up, its directory in `$SHORTLINK_TEST_PG`, and stops the cluster
//! afterwards, whatever COMMAND did. `make unit` runs the daemon's test
//! suite under it a second time, so every test runs against PostgreSQL too.

use std::process::{Command, ExitCode};

use shortlink_testpg::{PgCluster, SUITE_CLUSTER_ENV};

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    let Some(program) = args.next() else {
        eprintln!("usage: with-pg COMMAND [ARGS…]");
        return ExitCode::from(2);
    };
    let cluster = match PgCluster::try_start("suite") {
        Ok(c) => c,
        Err(e) => {
            eprintln!("with-pg: private PostgreSQL cluster: {e}");
            return ExitCode::from(2);
        }
    };
    let status = Command::new(&program)
        .args(args)
        .env(SUITE_CLUSTER_ENV, &cluster.dir)
        .status();
    drop(cluster);
    match status {
        Ok(s) if s.success() => ExitCode::SUCCESS,
        Ok(s) => {
            eprintln!("with-pg: {} exited with {s}", program.to_string_lossy());
            ExitCode::from(s.code().map_or(1, |c| c.clamp(1, 255) as u8))
        }
        Err(e) => {
            eprintln!("with-pg: {}: {e}", program.to_string_lossy());
            ExitCode::from(2)
        }
    }
}
