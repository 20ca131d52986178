//! A streaming standby of a private cluster, for failover tests: a copy
//! taken with `pg_basebackup` that replays the primary's WAL on a port of
//! its own, made synchronous on request (a commit the primary acknowledges
//! is then on the standby too), and promoted as a failover manager would.

use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use crate::{free_port, unique, PgCluster, PASSWORD, USER};

impl PgCluster {
    /// A standby of this (running) cluster named `name` (its
    /// `application_name` on the primary), started and streaming. It
    /// is asynchronous until [`PgCluster::make_synchronous`].
    pub fn start_standby(&self, name: &str) -> PgCluster {
        self.try_start_standby(name)
            .unwrap_or_else(|e| panic!("standby of the private PostgreSQL cluster: {e}"))
    }

    fn try_start_standby(&self, name: &str) -> Result<PgCluster, String> {
        let dir = std::env::temp_dir().join(format!(
            "shortlink-pg-{name}-{}-{}",
            std::process::id(),
            unique()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        let fs = |r: std::io::Result<()>, p: &std::path::Path| {
            r.map_err(|e| format!("{}: {e}", p.display()))
        };
        fs(std::fs::create_dir_all(&dir), &dir)?;
        let standby = PgCluster {
            dir,
            port: free_port(),
            bin: self.bin.clone(),
            run_as: self.run_as,
            keep: self.keep,
            owned: true,
        };
        for d in [standby.dir.clone(), standby.socket_dir()] {
            fs(std::fs::create_dir_all(&d), &d)?;
            fs(
                std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)),
                &d,
            )?;
            standby.chown(&d)?;
        }
        fs(
            std::fs::copy(self.password_file(), standby.password_file()).map(drop),
            &standby.password_file(),
        )?;
        let mut cmd = standby.command("pg_basebackup");
        cmd.arg("-D")
            .arg(standby.data())
            .arg("-h")
            .arg(self.socket_dir())
            .args(["-p", &self.port.to_string(), "-U", USER])
            .args(["-X", "stream", "--checkpoint=fast", "--no-sync"])
            .env("PGPASSWORD", PASSWORD);
        standby.run(cmd, "pg_basebackup")?;
        // The copy's postgresql.conf names the primary's port and socket;
        // later lines win. standby.signal makes it replay; primary_conninfo
        // says from where and under which name.
        let conf = standby.data().join("postgresql.conf");
        let mut text =
            std::fs::read_to_string(&conf).map_err(|e| format!("{}: {e}", conf.display()))?;
        text.push_str(&format!(
            "\n# standby {name}\nport = {port}\nunix_socket_directories = '{sock}'\n\
             primary_conninfo = 'host={primary_sock} port={primary_port} user={USER} \
             password={PASSWORD} application_name={name}'\n",
            port = standby.port,
            sock = standby.socket_dir().display(),
            primary_sock = self.socket_dir().display(),
            primary_port = self.port,
        ));
        fs(std::fs::write(&conf, text), &conf)?;
        let signal = standby.data().join("standby.signal");
        fs(std::fs::write(&signal, ""), &signal)?;
        standby.chown(&signal)?;
        standby.start_server()?;
        let port_file = standby.dir.join("port");
        fs(
            std::fs::write(&port_file, standby.port.to_string()),
            &port_file,
        )?;
        Ok(standby)
    }

    /// Makes the standby named `name` synchronous (a commit waits until
    /// it has flushed the commit's WAL) and waits until the primary
    /// reports it so.
    pub fn make_synchronous(&self, name: &str) {
        self.psql(
            "postgres",
            &format!("ALTER SYSTEM SET synchronous_standby_names = '\"{name}\"'"),
        );
        self.psql("postgres", "SELECT pg_reload_conf()");
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let state = self.psql(
                "postgres",
                &format!(
                    "SELECT sync_state FROM pg_stat_replication WHERE application_name = '{name}'"
                ),
            );
            if state == "sync" {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "standby {name} is not synchronous (state {state:?}):\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Promotes a standby to primary and waits until it accepts writes.
    pub fn promote(&self) {
        let mut cmd = self.command("pg_ctl");
        cmd.arg("-D")
            .arg(self.data())
            .args(["-w", "-t", "60", "promote"]);
        self.run(cmd, "pg_ctl promote")
            .unwrap_or_else(|e| panic!("{e}\nserver log:\n{}", self.log()));
    }

    /// Whether the server is a standby (`pg_is_in_recovery()`).
    pub fn in_recovery(&self) -> bool {
        self.psql("postgres", "SELECT pg_is_in_recovery()") == "t"
    }

    /// Kills every server process at once (SIGKILL), as a host that dies
    /// does: no shutdown checkpoint, connections reset.
    pub fn kill_hard(&self) {
        self.signal_all(libc::SIGKILL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_synchronous_standby_holds_every_commit_and_takes_over() {
        let primary = PgCluster::start("replica-selftest");
        primary.create_db("t");
        primary.psql("t", "CREATE TABLE x (v int)");
        let standby = primary.start_standby("selftest_standby");
        primary.make_synchronous("selftest_standby");
        assert!(standby.in_recovery());
        for v in 0..20 {
            primary.psql("t", &format!("INSERT INTO x VALUES ({v})"));
        }
        primary.kill_hard();
        standby.promote();
        assert!(!standby.in_recovery());
        // Every acknowledged commit is there, and the new primary writes.
        assert_eq!(standby.psql("t", "SELECT count(*) FROM x"), "20");
        standby.psql("t", "INSERT INTO x VALUES (20)");
        assert_eq!(standby.psql("t", "SELECT count(*) FROM x"), "21");
    }
}
