//! Starting a daemon on a data directory a test chose, with a given umask;
//! a small tmpfs to fill; file modes.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::{self, cli_in, http_unix, stderr, stdout};

const ADMIN_SCOPES: &str = "links:write,links:read,stats:read,admin";

/// A `shortlinkd serve` on a data directory the test chose, started from
/// a shell with umask 022 (what a daemon started by hand usually gets).
pub struct Serve {
    data: PathBuf,
    log: PathBuf,
    child: Child,
    pub admin_key: String,
}

impl Serve {
    pub async fn start(data: &Path, log: &Path, extra: &[&str]) -> Serve {
        let child = Command::new("sh")
            .arg("-c")
            .arg("umask 022; exec \"$0\" \"$@\"")
            .arg(common::BIN)
            .arg("serve")
            .arg("--data-dir")
            .arg(data)
            .args(extra)
            .env("RUST_LOG", "info")
            .env_remove("SHORTLINKD_CONFIG")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(log).unwrap())
            .spawn()
            .unwrap();
        let mut s = Serve {
            data: data.to_path_buf(),
            log: log.to_path_buf(),
            child,
            admin_key: String::new(),
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while !matches!(s.health(None).await, Ok((200, _))) {
            if let Some(status) = s.child.try_wait().unwrap() {
                panic!("daemon exited with {status}: {}", s.log());
            }
            assert!(Instant::now() < deadline, "not ready: {}", s.log());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let out = cli_in(
            data,
            &["key", "create", "--name", "admin", "--scopes", ADMIN_SCOPES],
            "",
        );
        assert!(out.status.success(), "key create: {}", stderr(&out));
        s.admin_key = stdout(&out).trim().to_string();
        s
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub async fn health(&self, key: Option<&str>) -> Result<(u16, Value), String> {
        let headers: Vec<(&str, &str)> = key.map(|k| ("x-api-key", k)).into_iter().collect();
        http_unix(
            &self.data.join("api.sock"),
            "GET",
            "/api/v1/health",
            &headers,
            None,
        )
        .await
        .map(|(s, _, v)| (s, v))
    }

    /// SIGTERM and wait.
    pub fn stop(&mut self) {
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        )
        .unwrap();
        self.child.wait().unwrap();
    }

    pub async fn post_link(&self, url: &str) -> (u16, Value) {
        let (s, _, v) = http_unix(
            &self.data.join("api.sock"),
            "POST",
            "/api/v1/links",
            &[("x-api-key", &self.admin_key)],
            Some(json!({ "url": url }).to_string().into_bytes()),
        )
        .await
        .unwrap();
        (s, v)
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A small tmpfs, unmounted when dropped (mounting needs root, which the
/// test suite runs as).
pub struct Tmpfs(PathBuf);

impl Tmpfs {
    pub fn mount(dir: &Path, size: &str) -> Tmpfs {
        std::fs::create_dir_all(dir).unwrap();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size},mode=0700")])
            .arg("tmpfs")
            .arg(dir)
            .output()
            .expect("run mount");
        assert!(
            out.status.success(),
            "cannot mount a tmpfs at {} (needs root): {}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        Tmpfs(dir.to_path_buf())
    }

    /// Fills the file system; returns the filler file.
    pub fn fill(&self) -> PathBuf {
        use std::io::Write;
        let path = self.0.join("filler");
        let mut f = std::fs::File::create(&path).unwrap();
        for size in [64 * 1024, 4096, 1] {
            let chunk = vec![0u8; size];
            while f.write_all(&chunk).is_ok() {}
        }
        path
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

pub fn mode(p: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .permissions()
        .mode()
        & 0o7777
}

pub fn set_mode(p: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Kills the child when dropped.
pub struct KillOnDrop(pub Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
