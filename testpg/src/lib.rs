//! A private PostgreSQL cluster for tests: `initdb` into a temporary
//! directory as an unprivileged user (PostgreSQL refuses to run as root),
//! listening on a Unix socket in that directory and on a free loopback port,
//! with SCRAM password authentication. Nothing relies on a system service;
//! the cluster is stopped (and its directory removed) when dropped.
//!
//! Used by the daemon's test suite and the end-to-end suite.

mod replica;

use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The database user the cluster is created with.
pub const USER: &str = "shortlink";
/// Its password (tests only; the cluster listens on loopback alone).
pub const PASSWORD: &str = "shortlink-test-password";

/// A running (or stopped) private cluster.
pub struct PgCluster {
    /// Everything of the cluster lives here.
    pub dir: PathBuf,
    /// TCP port on 127.0.0.1.
    pub port: u16,
    bin: PathBuf,
    /// The OS user the server runs as (`None`: the current user).
    run_as: Option<(u32, u32)>,
    keep: bool,
    /// Whether dropping this handle stops the server (not for a handle
    /// [attached](PgCluster::attach) to another process's cluster).
    owned: bool,
}

/// The variable `with-pg` names its cluster's directory in.
pub const SUITE_CLUSTER_ENV: &str = "SHORTLINK_TEST_PG";

/// The directory holding `initdb` and `pg_ctl`: `$SHORTLINK_PG_BIN`, or the
/// newest `/usr/lib/postgresql/*/bin` (Debian's layout).
pub fn bin_dir() -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os("SHORTLINK_PG_BIN") {
        return Ok(PathBuf::from(dir));
    }
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .map_err(|e| {
            format!("PostgreSQL is not installed (/usr/lib/postgresql: {e}); run `make deps`")
        })?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((version, bin))
        })
        .collect();
    found.sort();
    found
        .pop()
        .map(|(_, bin)| bin)
        .ok_or_else(|| "no initdb under /usr/lib/postgresql/*/bin; run `make deps`".into())
}

/// A free TCP port on loopback.
fn free_port() -> u16 {
    static GIVEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap_or(0);
        if port != 0 && !given.contains(&port) {
            given.push(port);
            return port;
        }
    }
}

impl PgCluster {
    /// Creates and starts a cluster in a fresh directory under the system
    /// temporary directory. Panics with the server's own words on failure:
    /// tests cannot go on without it.
    pub fn start(name: &str) -> PgCluster {
        Self::try_start(name).unwrap_or_else(|e| panic!("private PostgreSQL cluster: {e}"))
    }

    /// [`PgCluster::start`] without the panic.
    pub fn try_start(name: &str) -> Result<PgCluster, String> {
        let bin = bin_dir()?;
        let dir = std::env::temp_dir().join(format!(
            "shortlink-pg-{name}-{}-{}",
            std::process::id(),
            unique()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        // SAFETY: geteuid(2) has no preconditions.
        let run_as = (unsafe { libc::geteuid() } == 0).then_some((65534, 65534));
        let cluster = PgCluster {
            dir,
            port: free_port(),
            bin,
            run_as,
            keep: std::env::var_os("SHORTLINK_KEEP_PG").is_some(),
            owned: true,
        };
        cluster.init()?;
        cluster.start_server()?;
        let port_file = cluster.dir.join("port");
        std::fs::write(&port_file, cluster.port.to_string())
            .map_err(|e| format!("{}: {e}", port_file.display()))?;
        Ok(cluster)
    }

    /// A handle on the running cluster in `dir`, started by another process
    /// (`with-pg`); dropping it leaves the server running.
    pub fn attach(dir: &Path) -> Result<PgCluster, String> {
        let port_file = dir.join("port");
        let port = std::fs::read_to_string(&port_file)
            .map_err(|e| format!("{}: {e}", port_file.display()))?
            .trim()
            .parse()
            .map_err(|e| format!("{}: not a port: {e}", port_file.display()))?;
        Ok(PgCluster {
            dir: dir.to_path_buf(),
            port,
            bin: bin_dir()?,
            run_as: None,
            keep: true,
            owned: false,
        })
    }

    /// The cluster `with-pg` started for this test process, if any.
    pub fn suite() -> Option<PgCluster> {
        let dir = std::env::var_os(SUITE_CLUSTER_ENV)?;
        Some(
            Self::attach(Path::new(&dir)).unwrap_or_else(|e| {
                panic!("{SUITE_CLUSTER_ENV}: the suite's PostgreSQL cluster: {e}")
            }),
        )
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// The directory holding the server's Unix socket.
    pub fn socket_dir(&self) -> PathBuf {
        self.dir.join("run")
    }

    /// A file holding the password, as the daemon's `password_file` reads it.
    pub fn password_file(&self) -> PathBuf {
        self.dir.join("password")
    }

    fn chown(&self, path: &Path) -> Result<(), String> {
        if let Some((uid, gid)) = self.run_as {
            std::os::unix::fs::chown(path, Some(uid), Some(gid))
                .map_err(|e| format!("chown {}: {e}", path.display()))?;
        }
        Ok(())
    }

    fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new(self.bin.join(program));
        if let Some((uid, gid)) = self.run_as {
            // std drops the supplementary groups too when root sets a uid.
            cmd.uid(uid).gid(gid);
        }
        cmd.current_dir(&self.dir)
            .env("LC_ALL", "C.UTF-8")
            .env_remove("PGDATA");
        cmd
    }

    fn run(&self, mut cmd: Command, what: &str) -> Result<Output, String> {
        let out = cmd
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("{what}: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "{what} failed ({}):\n{}{}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(out)
    }

    fn init(&self) -> Result<(), String> {
        let fs = |r: std::io::Result<()>, p: &Path| r.map_err(|e| format!("{}: {e}", p.display()));
        let pwfile = self.dir.join("pwfile");
        fs(std::fs::write(&pwfile, PASSWORD), &pwfile)?;
        fs(
            std::fs::write(self.password_file(), format!("{PASSWORD}\n")),
            &self.password_file(),
        )?;
        fs(
            std::fs::set_permissions(self.password_file(), std::fs::Permissions::from_mode(0o600)),
            &self.password_file(),
        )?;
        for d in [self.dir.clone(), self.socket_dir()] {
            fs(std::fs::create_dir_all(&d), &d)?;
            fs(
                std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)),
                &d,
            )?;
            self.chown(&d)?;
        }
        self.chown(&pwfile)?;
        let mut cmd = self.command("initdb");
        cmd.arg("-D")
            .arg(self.data())
            .args([
                "-U",
                USER,
                "--auth=scram-sha-256",
                "--encoding=UTF8",
                "--no-sync",
            ])
            .arg(format!("--pwfile={}", pwfile.display()));
        self.run(cmd, "initdb")?;
        let _ = std::fs::remove_file(&pwfile);
        let conf = format!(
            "\n# shortlink test cluster\nlisten_addresses = '127.0.0.1'\nport = {port}\n\
             unix_socket_directories = '{sock}'\nmax_connections = 200\nfsync = on\n\
             shared_buffers = 64MB\nlog_min_messages = warning\n",
            port = self.port,
            sock = self.socket_dir().display()
        );
        let path = self.data().join("postgresql.conf");
        let mut text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        text.push_str(&conf);
        fs(std::fs::write(&path, text), &path)?;
        Ok(())
    }

    fn start_server(&self) -> Result<(), String> {
        let mut cmd = self.command("pg_ctl");
        cmd.arg("-D")
            .arg(self.data())
            .arg("-l")
            .arg(self.dir.join("server.log"))
            .args(["-w", "-t", "60", "start"]);
        self.run(cmd, "pg_ctl start")
            .map_err(|e| format!("{e}\nserver log:\n{}", self.log()))?;
        Ok(())
    }

    /// Starts the server again after [`PgCluster::stop`] or [`PgCluster::kill`].
    pub fn restart(&self) {
        self.start_server()
            .unwrap_or_else(|e| panic!("restart PostgreSQL: {e}"));
    }

    /// Stops the server (fast shutdown: sessions are cut, nothing is lost).
    pub fn stop(&self) {
        let mut cmd = self.command("pg_ctl");
        cmd.arg("-D")
            .arg(self.data())
            .args(["-w", "-m", "fast", "stop"]);
        if let Err(e) = self.run(cmd, "pg_ctl stop") {
            panic!("{e}");
        }
    }

    /// Stops the server as a crash would (immediate: recovery at the next start).
    pub fn kill(&self) {
        let mut cmd = self.command("pg_ctl");
        cmd.arg("-D")
            .arg(self.data())
            .args(["-w", "-m", "immediate", "stop"]);
        let _ = self.run(cmd, "pg_ctl stop -m immediate");
    }

    /// The server's processes: the postmaster (first line of
    /// `postmaster.pid`) and its children (backends, background workers).
    pub fn server_pids(&self) -> Vec<i32> {
        let pid_file = self.data().join("postmaster.pid");
        let Some(main) = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|t| t.lines().next().and_then(|l| l.trim().parse::<i32>().ok()))
        else {
            return Vec::new();
        };
        let mut pids = vec![main];
        for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            // /proc/PID/stat: "pid (comm) state ppid ..."; comm may hold
            // spaces, so read after its closing parenthesis.
            let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
            let ppid = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                .and_then(|p| p.parse::<i32>().ok());
            if ppid == Some(main) {
                pids.push(pid);
            }
        }
        pids
    }

    /// Stops every server process (SIGSTOP), as a crashed host or a cut
    /// network looks to a client: connections stay open, nothing answers,
    /// new connections are accepted by the kernel and never greeted.
    pub fn freeze(&self) {
        self.signal_all(libc::SIGSTOP);
    }

    /// Lets a [frozen](PgCluster::freeze) server go on.
    pub fn thaw(&self) {
        self.signal_all(libc::SIGCONT);
    }

    fn signal_all(&self, signal: libc::c_int) {
        for pid in self.server_pids() {
            // SAFETY: kill(2) has no memory preconditions; a pid gone
            // meanwhile gets ESRCH, which is ignored.
            unsafe { libc::kill(pid, signal) };
        }
    }

    /// The server log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
    }

    /// A URL for database `db` over TCP, without the password (the daemon
    /// reads it from [`PgCluster::password_file`]).
    pub fn url(&self, db: &str) -> String {
        format!("postgres://{USER}@127.0.0.1:{}/{db}", self.port)
    }

    /// A URL with the password in it (for clients in tests).
    pub fn url_with_password(&self, db: &str) -> String {
        format!("postgres://{USER}:{PASSWORD}@127.0.0.1:{}/{db}", self.port)
    }

    /// Runs SQL with `psql` against `db`; returns its output (unaligned, no
    /// headers) or panics with psql's error.
    pub fn psql(&self, db: &str, sql: &str) -> String {
        let psql = self.bin.join("psql");
        let out = Command::new(&psql)
            .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h"])
            .arg(self.socket_dir())
            .args([
                "-p",
                &self.port.to_string(),
                "-U",
                USER,
                "-d",
                db,
                "-c",
                sql,
            ])
            .env("PGPASSWORD", PASSWORD)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("{}: {e}", psql.display()));
        assert!(
            out.status.success(),
            "psql {sql:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// Creates a database and returns its URL (see [`PgCluster::url`]).
    pub fn create_db(&self, db: &str) -> String {
        self.psql("postgres", &format!("CREATE DATABASE \"{db}\""));
        self.url(db)
    }

    /// Waits until the server accepts connections again (after a restart).
    pub fn wait_ready(&self, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }

    /// Turns TLS on (or off, with `None`): the server's certificate and key
    /// (PEM) go into the data directory and the configuration is reloaded.
    pub fn set_tls(&self, cert_and_key: Option<(&str, &str)>) {
        if let Some((cert, key)) = cert_and_key {
            for (name, pem) in [("server.crt", cert), ("server.key", key)] {
                let path = self.data().join(name);
                std::fs::write(&path, pem).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                self.chown(&path).unwrap_or_else(|e| panic!("{e}"));
            }
        }
        let on = if cert_and_key.is_some() { "on" } else { "off" };
        self.psql("postgres", &format!("ALTER SYSTEM SET ssl = '{on}'"));
        self.psql("postgres", "SELECT pg_reload_conf()");
        // The postmaster applies the reload between connections.
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.psql("postgres", "SHOW ssl") != on {
            assert!(
                Instant::now() < deadline,
                "ssl = {on} was not applied:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Keeps the directory after drop (for a failed test's post-mortem).
    pub fn keep(&mut self) {
        self.keep = true;
    }
}

impl Drop for PgCluster {
    fn drop(&mut self) {
        if !self.owned {
            return;
        }
        // A frozen server would never act on pg_ctl's stop signal.
        self.thaw();
        self.kill();
        if !self.keep && !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cluster_starts_answers_restarts_and_goes_away() {
        let pg = PgCluster::start("selftest");
        let url = pg.create_db("t1");
        assert!(url.starts_with("postgres://shortlink@127.0.0.1:"), "{url}");
        assert_eq!(pg.psql("t1", "SELECT 40 + 2"), "42");
        pg.psql("t1", "CREATE TABLE x (v int); INSERT INTO x VALUES (7)");
        pg.kill();
        assert!(std::net::TcpStream::connect(("127.0.0.1", pg.port)).is_err());
        pg.restart();
        assert!(pg.wait_ready(Duration::from_secs(10)));
        assert_eq!(pg.psql("t1", "SELECT v FROM x"), "7");
        let dir = pg.dir.clone();
        drop(pg);
        assert!(!dir.exists());
    }
}
