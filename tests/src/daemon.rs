//! The real `shortlinkd` for end-to-end tests: its own data directory,
//! sockets in the test's scratch directory, the HTTP API on a free loopback
//! port, and an API key with every scope.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::{daemon_bin, free_port, http, Response, Scratch};

/// Gives a directory the nginx workers write to (the click spool) to them
/// and nobody else: as root the workers run as `nobody:nogroup` (see
/// `main_context`), so it is theirs with mode 0770; otherwise they run as
/// this user, and it is 0700.
pub fn give_to_workers(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    // SAFETY: getuid(2) has no preconditions.
    let mode = if unsafe { libc::getuid() } == 0 {
        let (uid, gid) = workers_ids();
        std::os::unix::fs::chown(dir, Some(uid), Some(gid)).unwrap();
        0o770
    } else {
        0o700
    };
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// The uid of `nobody` and the gid of `nogroup`, which the workers run as
/// when nginx starts as root.
pub fn workers_ids() -> (u32, u32) {
    // SAFETY: getpwnam/getgrnam with NUL-terminated names; the fields are
    // read at once, before another call could reuse the static buffers.
    unsafe {
        let pw = libc::getpwnam(c"nobody".as_ptr());
        let gr = libc::getgrnam(c"nogroup".as_ptr());
        assert!(!pw.is_null() && !gr.is_null(), "no nobody:nogroup");
        ((*pw).pw_uid, (*gr).gr_gid)
    }
}

/// A running daemon.
pub struct Daemon {
    pub api_port: u16,
    pub ipc: PathBuf,
    pub spool: PathBuf,
    pub api_key: String,
    dir: PathBuf,
    key: PathBuf,
    config: Option<PathBuf>,
    child: Option<Child>,
}

impl Daemon {
    /// Starts a daemon on `key` with its state under `scratch`.
    pub fn start(scratch: &Scratch, key: &Path) -> Daemon {
        Self::start_with_config(scratch, key, None)
    }

    /// Starts a daemon that also reads a config file (flags still win).
    pub fn start_with_config(scratch: &Scratch, key: &Path, config: Option<PathBuf>) -> Daemon {
        let mut d = Daemon {
            api_port: free_port(),
            ipc: scratch.path("ipc.sock"),
            spool: scratch.path("spool"),
            api_key: String::new(),
            dir: scratch.dir.clone(),
            key: key.to_path_buf(),
            config,
            child: None,
        };
        std::fs::create_dir_all(&d.spool).unwrap();
        give_to_workers(&d.spool);
        d.spawn();
        let out = d
            .cli(&[
                "key",
                "create",
                "--name",
                "e2e",
                "--scopes",
                "links:write,links:read,stats:read,admin",
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "key create: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        d.api_key = String::from_utf8_lossy(&out.stdout).trim().to_string();
        assert!(!d.api_key.is_empty());
        d
    }

    /// A `shortlinkd` command with this daemon's settings.
    pub fn cli(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(daemon_bin());
        if let Some(config) = &self.config {
            cmd.arg("--config").arg(config);
        }
        cmd.args(args)
            .arg("--data-dir")
            .arg(self.dir.join("data"))
            .arg("--key-file")
            .arg(&self.key)
            .arg("--ipc-socket")
            .arg(&self.ipc)
            .arg("--api-socket")
            .arg(self.dir.join("api.sock"))
            .arg("--api-listen")
            .arg(format!("127.0.0.1:{}", self.api_port))
            .arg("--spool-dir")
            .arg(&self.spool)
            .arg("--base-url")
            .arg("http://short.test");
        // SAFETY: getuid(2) has no preconditions.
        if unsafe { libc::getuid() } == 0 {
            cmd.arg("--socket-group").arg("nogroup");
        }
        cmd
    }

    fn spawn(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("logs/daemon.log"))
            .unwrap();
        let child = self
            .cli(&["serve"])
            .stdout(Stdio::from(log.try_clone().unwrap()))
            .stderr(Stdio::from(log))
            .spawn()
            .expect("start shortlinkd");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                panic!("shortlinkd exited with {status}:\n{}", self.log());
            }
            if crate::listening(self.api_port)
                && http(self.api_port, b"GET", b"/api/v1/health", &[], b"").status == 200
                && self.ipc.exists()
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "shortlinkd not ready in 15 s:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    /// The directory of its database.
    pub fn data_dir(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// The daemon's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("logs/daemon.log")).unwrap_or_default()
    }

    /// The pid of the nginx worker of each subscription so far, oldest
    /// first (the daemon pushes its events to the latest).
    pub fn subscriptions(&self) -> Vec<u32> {
        let marker = "nginx worker subscribed pid=";
        let log = self.log();
        log.match_indices(marker)
            .map(|(at, _)| {
                let rest = &log[at + marker.len()..];
                let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                digits.parse().expect("a pid after the marker")
            })
            .collect()
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, |c| c.id())
    }

    /// SIGSTOP, then waits until every thread of the daemon has stopped.
    /// The stop is not immediate: the kernel hands the signal to one
    /// thread, and until that thread runs, the others can still be woken
    /// by I/O (a lookup from nginx) and answer it. On a loaded machine
    /// that window lasts long enough for a test's first requests.
    pub fn freeze(&self) {
        let pid = self.pid();
        // SAFETY: kill(2) on our own child.
        unsafe { libc::kill(pid as i32, libc::SIGSTOP) };
        let every_thread_stopped = || {
            let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
                return false;
            };
            tasks.flatten().all(|t| {
                let stat = std::fs::read_to_string(t.path().join("stat")).unwrap_or_default();
                // The state follows the command name's closing parenthesis.
                stat.rsplit_once(") ")
                    .is_some_and(|(_, rest)| rest.starts_with(['T', 't']))
            })
        };
        assert!(
            crate::eventually(Duration::from_secs(10), every_thread_stopped),
            "shortlinkd (pid {pid}) did not stop within 10 s of SIGSTOP"
        );
    }

    /// SIGCONT after [`Daemon::freeze`].
    pub fn thaw(&self) {
        // SAFETY: kill(2) on our own child.
        unsafe { libc::kill(self.pid() as i32, libc::SIGCONT) };
    }

    /// SIGKILL, as a crash would.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts it again on the same data.
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    /// An API call with the test's key.
    pub fn api(&self, method: &str, path: &str, body: Option<&serde_json::Value>) -> Response {
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let mut headers = vec![("X-Api-Key", self.api_key.as_str())];
        if !body.is_empty() {
            headers.push(("Content-Type", "application/json"));
        }
        http(
            self.api_port,
            method.as_bytes(),
            path.as_bytes(),
            &headers,
            body.as_bytes(),
        )
    }

    /// Creates a link; returns its code.
    pub fn create(&self, body: serde_json::Value) -> String {
        let r = self.api("POST", "/api/v1/links", Some(&body));
        assert_eq!(r.status, 201, "create {body}: {}", r.body_text());
        let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        v["code"].as_str().unwrap().to_string()
    }

    /// Total clicks the daemon reports for a code.
    pub fn clicks(&self, code: &str) -> u64 {
        let r = self.api("GET", &format!("/api/v1/links/{code}/stats"), None);
        assert_eq!(r.status, 200, "stats: {}", r.body_text());
        let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        v["total"].as_u64().unwrap()
    }

    /// Clicks of every link, by code (every page of the list).
    pub fn clicks_by_code(&self) -> std::collections::HashMap<String, u64> {
        let mut out = std::collections::HashMap::new();
        let mut cursor = String::new();
        loop {
            let r = self.api(
                "GET",
                &format!("/api/v1/links?limit=1000&cursor={cursor}"),
                None,
            );
            assert_eq!(r.status, 200, "list: {}", r.body_text());
            let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
            for l in v["links"].as_array().unwrap() {
                out.insert(
                    l["code"].as_str().unwrap().to_string(),
                    l["clicks"].as_u64().unwrap(),
                );
            }
            match v["next_cursor"].as_str() {
                Some(c) => cursor = c.to_string(),
                None => return out,
            }
        }
    }

    /// A Prometheus counter or gauge (summed over labels).
    pub fn metric(&self, name: &str) -> f64 {
        let r = self.api("GET", "/metrics", None);
        assert_eq!(r.status, 200, "metrics: {}", r.body_text());
        r.body_text()
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter(|l| l.split([' ', '{']).next() == Some(name))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(child) = &self.child {
            // SAFETY: plain kill(2) on our own child.
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        }
        if let Some(mut c) = self.child.take() {
            let deadline = Instant::now() + Duration::from_secs(5);
            while Instant::now() < deadline {
                if c.try_wait().unwrap().is_some() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
