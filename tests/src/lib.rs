//! Harness for the end-to-end suite: starts the built nginx with the built
//! module (and, where a test asks, the real daemon) in a fresh prefix on free
//! loopback ports, and speaks raw HTTP/1.1 to it so tests can send any bytes.
//!
//! Binaries come from `build/` (run `make build`), or from
//! `SHORTLINK_NGINX`, `SHORTLINK_MODULE` and `SHORTLINK_DAEMON`.
//! On a failing test the prefix (config and logs) is kept under
//! `target/e2e-logs/` and its path printed.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use shortlink_core::{Codec, DeploymentKey};

mod browser;
mod cluster;
mod daemon;
pub mod load;
mod stack;
pub mod tally;
pub use browser::Browser;
pub use cluster::{Cluster, Node};
pub use daemon::{give_to_workers, workers_ids, Daemon};
pub use stack::{http_conf, Figures, Stack};

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn binary(var: &str, default: &str) -> PathBuf {
    let path = std::env::var_os(var)
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join(default));
    assert!(
        path.exists(),
        "{} not found: run `make build` first, or set {var}",
        path.display()
    );
    path
}

/// The nginx binary under test.
pub fn nginx_bin() -> PathBuf {
    binary("SHORTLINK_NGINX", "build/sbin/nginx")
}

/// The module under test.
pub fn module_so() -> PathBuf {
    binary(
        "SHORTLINK_MODULE",
        "build/modules/ngx_http_shortlink_module.so",
    )
}

/// The daemon under test.
pub fn daemon_bin() -> PathBuf {
    binary("SHORTLINK_DAEMON", "build/bin/shortlinkd")
}

/// A free TCP port on loopback (bound and released). The kernel may hand the
/// same ephemeral port to two tests running at once before either binds it,
/// so a port is never given out twice in one test process.
pub fn free_port() -> u16 {
    static GIVEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        if !given.contains(&port) {
            given.push(port);
            return port;
        }
    }
}

/// True when something listens on `port` on loopback. A connect to a free
/// port in the ephemeral range can reach itself (TCP simultaneous open), so
/// a connection whose two ends are the same address does not count.
pub fn listening(port: u16) -> bool {
    TcpStream::connect(("127.0.0.1", port)).is_ok_and(|s| s.local_addr().ok() != s.peer_addr().ok())
}

/// A fresh directory for one test, removed when dropped unless the test failed.
pub struct Scratch {
    pub dir: PathBuf,
    name: String,
}

impl Scratch {
    pub fn new(name: &str) -> Self {
        static SEQ: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "shortlink-e2e-{}-{}-{}",
            name,
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("logs")).unwrap();
        Self {
            dir,
            name: name.to_string(),
        }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.join(rel)
    }

    /// The deployment key in this directory, and its codec. The key is
    /// fixed ([`TEST_KEY`]): whether an alias a test uses has the form of a
    /// generated code (one alphanumeric alias in about 31 does, under any
    /// key) must not change from run to run.
    pub fn key(&self) -> (PathBuf, Codec) {
        let path = self.path("key");
        let key = DeploymentKey::from_bytes(TEST_KEY);
        key.write_new(&path).unwrap();
        (path, Codec::new(&key))
    }
}

/// The deployment key of the end-to-end tests.
pub const TEST_KEY: [u8; 32] = *b"shortlink end-to-end tests, key!";

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let keep = root().join("target/e2e-logs").join(format!(
                "{}-{}",
                self.name,
                std::process::id()
            ));
            let _ = std::fs::create_dir_all(keep.parent().unwrap());
            let _ = std::fs::remove_dir_all(&keep);
            if std::fs::rename(&self.dir, &keep).is_err() {
                let _ = Command::new("cp")
                    .arg("-a")
                    .arg(&self.dir)
                    .arg(&keep)
                    .status();
            }
            eprintln!(
                "kept config and logs of the failed test in {}",
                keep.display()
            );
        } else {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// A running nginx master (foreground, `daemon off`) with the module loaded.
pub struct Nginx {
    pub port: u16,
    pub prefix: PathBuf,
    child: Option<Child>,
}

/// The main-context lines every test config starts with.
pub fn main_context(prefix: &Path, workers: u32) -> String {
    // As root, workers run as nobody:nogroup, the group the daemon's
    // sockets are given in the tests.
    // SAFETY: getuid(2) has no preconditions.
    let user = if unsafe { libc::getuid() } == 0 {
        "user nobody nogroup;\n"
    } else {
        ""
    };
    format!(
        "{user}load_module {module};\n\
         daemon off;\n\
         worker_processes {workers};\n\
         error_log {prefix}/logs/error.log info;\n\
         pid {prefix}/logs/nginx.pid;\n\
         events {{ worker_connections 1024; }}\n",
        module = module_so().display(),
        prefix = prefix.display(),
    )
}

impl Nginx {
    /// Writes `nginx.conf` = main context + `http { <http_body> }` (with
    /// `{port}` replaced) and starts nginx with it.
    pub fn start(scratch: &Scratch, workers: u32, http_body: &str) -> Nginx {
        let port = free_port();
        let conf = format!(
            "{}http {{\n    access_log off;\n{}\n}}\n",
            main_context(&scratch.dir, workers),
            http_body.replace("{port}", &port.to_string())
        );
        Self::start_with(scratch, port, &conf)
    }

    /// Starts nginx with a complete configuration text, listening on `port`.
    pub fn start_with(scratch: &Scratch, port: u16, conf: &str) -> Nginx {
        let prefix = scratch.dir.clone();
        std::fs::write(prefix.join("nginx.conf"), conf).unwrap();
        let child = Command::new(nginx_bin())
            .arg("-p")
            .arg(&prefix)
            .arg("-c")
            .arg(prefix.join("nginx.conf"))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(prefix.join("logs/stderr.log")).unwrap())
            .spawn()
            .expect("start nginx");
        let mut nginx = Nginx {
            port,
            prefix,
            child: Some(child),
        };
        nginx.wait_ready();
        nginx
    }

    fn wait_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                panic!(
                    "nginx exited with {status}:\n{}",
                    std::fs::read_to_string(self.prefix.join("logs/stderr.log"))
                        .unwrap_or_default()
                );
            }
            if listening(self.port) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("nginx did not listen on port {} within 10 s", self.port);
    }

    /// The master's pid.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    /// Sends a signal to the master.
    pub fn signal(&self, sig: i32) {
        // SAFETY: plain kill(2) on our own child.
        unsafe { libc::kill(self.pid() as i32, sig) };
    }

    /// Replaces the config and reloads (SIGHUP), waiting until the new
    /// workers have started.
    pub fn reload(&self, conf: &str) {
        let before = self.error_log().matches("start worker process").count();
        std::fs::write(self.prefix.join("nginx.conf"), conf).unwrap();
        self.signal(libc::SIGHUP);
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.error_log().matches("start worker process").count() == before {
            assert!(
                Instant::now() < deadline,
                "reload did not start new workers"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The error log so far.
    pub fn error_log(&self) -> String {
        std::fs::read_to_string(self.prefix.join("logs/error.log")).unwrap_or_default()
    }

    /// Pids of the master's current worker processes (not those shutting
    /// down after a reload).
    pub fn workers(&self) -> Vec<u32> {
        let master = self.pid();
        let mut out = Vec::new();
        for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
            let ppid = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                .and_then(|p| p.parse::<u32>().ok());
            let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            if ppid == Some(master) && cmd.starts_with(b"nginx: worker process\0") {
                out.push(pid);
            }
        }
        out.sort();
        out
    }

    /// SIGKILLs worker `pid` and waits until nginx has started one in its
    /// place.
    pub fn kill_worker(&self, pid: u32) {
        let before = self.workers().len();
        // SAFETY: plain kill(2) on a worker of our own nginx.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let now = self.workers();
            if !now.contains(&pid) && now.len() >= before {
                return;
            }
            assert!(Instant::now() < deadline, "no worker replaced {pid}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// As [`Nginx::assert_clean_log`], for tests that kill workers on
    /// purpose: nginx's `[alert]` that a worker "exited on signal 9" is
    /// expected, nothing else at `[alert]` or above is.
    pub fn assert_clean_log_but_killed_workers(&self) {
        let log = self.error_log();
        for line in log.lines() {
            let killed = line.contains("[alert]") && line.contains("exited on signal 9");
            for bad in ["[crit]", "[alert]", "[emerg]", "exited on signal"] {
                assert!(killed || !line.contains(bad), "error log has {bad}: {line}");
            }
        }
    }

    /// Fails when the module made nginx log anything at `[crit]`, `[alert]`
    /// or `[emerg]`, or a worker died.
    pub fn assert_clean_log(&self) {
        let log = self.error_log();
        for bad in ["[crit]", "[alert]", "[emerg]", "exited on signal"] {
            assert!(!log.contains(bad), "error log has {bad}:\n{log}");
        }
    }

    /// A GET with `target` sent as raw bytes in the request line.
    pub fn get(&self, target: &[u8]) -> Response {
        http(self.port, b"GET", target, &[], b"")
    }

    /// Any request, raw.
    pub fn request(
        &self,
        method: &[u8],
        target: &[u8],
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Response {
        http(self.port, method, target, headers, body)
    }

    /// Stops nginx gracefully (SIGQUIT) and waits for it.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // SAFETY: plain kill(2) on our own child.
            unsafe { libc::kill(child.id() as i32, libc::SIGQUIT) };
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if child.try_wait().unwrap().is_some() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Runs `nginx -t` on a complete config; returns (success, stderr).
pub fn nginx_test_config(scratch: &Scratch, conf: &str) -> (bool, String) {
    let path = scratch.path("nginx-t.conf");
    std::fs::write(&path, conf).unwrap();
    let out = Command::new(nginx_bin())
        .arg("-t")
        .arg("-p")
        .arg(&scratch.dir)
        .arg("-c")
        .arg(&path)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A parsed HTTP response.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    /// First header of that name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn body_text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// One HTTP/1.1 exchange over a fresh connection (`Connection: close`).
pub fn http(
    port: u16,
    method: &[u8],
    target: &[u8],
    headers: &[(&str, &str)],
    body: &[u8],
) -> Response {
    try_http(port, method, target, headers, body).unwrap_or_else(|e| panic!("{e}"))
}

/// As [`http`], with `Err` for a refused or broken connection, for tests
/// that expect them.
pub fn try_http(
    port: u16,
    method: &[u8],
    target: &[u8],
    headers: &[(&str, &str)],
    body: &[u8],
) -> Result<Response, String> {
    let s = send_request(port, method, target, headers, body)?;
    read_response(s, method)
}

/// The first half of [`try_http`]: the request written, the connection
/// left for [`read_response`] (for tests that must know every request has
/// been sent before they let the answer come).
pub fn send_request(
    port: u16,
    method: &[u8],
    target: &[u8],
    headers: &[(&str, &str)],
    body: &[u8],
) -> Result<TcpStream, String> {
    let s = TcpStream::connect(("127.0.0.1", port))
        .map_err(|e| format!("connect to port {port}: {e}"))?;
    write_request(s, method, target, headers, body)
}

/// As [`http`], from the loopback address `source` (all of 127.0.0.0/8 is
/// local): the client socket is bound to it before it connects, so nginx
/// sees it as `$remote_addr` (for `geo` and the like).
pub fn http_from(
    source: std::net::Ipv4Addr,
    port: u16,
    method: &[u8],
    target: &[u8],
    headers: &[(&str, &str)],
    body: &[u8],
) -> Response {
    let s = connect_from(source, port)
        .unwrap_or_else(|e| panic!("connect from {source} to port {port}: {e}"));
    let s = write_request(s, method, target, headers, body).unwrap_or_else(|e| panic!("{e}"));
    read_response(s, method).unwrap_or_else(|e| panic!("{e}"))
}

/// A TCP connection to 127.0.0.1:`port` from `source`.
fn connect_from(source: std::net::Ipv4Addr, port: u16) -> std::io::Result<TcpStream> {
    use std::os::fd::FromRawFd;
    let sockaddr = |ip: std::net::Ipv4Addr, port: u16| libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(ip).to_be(),
        },
        sin_zero: [0; 8],
    };
    let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: plain socket(2); the descriptor is owned by the stream below
    // (or closed on error).
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd is a new socket we own.
    let stream = unsafe { TcpStream::from_raw_fd(fd) };
    let local = sockaddr(source, 0);
    let remote = sockaddr(std::net::Ipv4Addr::LOCALHOST, port);
    // SAFETY: valid sockaddr_in values of `len` bytes, a live socket.
    if unsafe { libc::bind(fd, std::ptr::addr_of!(local).cast(), len) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: as above.
    if unsafe { libc::connect(fd, std::ptr::addr_of!(remote).cast(), len) } != 0 {
        let e = std::io::Error::last_os_error();
        // A refusal while nginx listens was seen once and not explained:
        // say which source port was bound and what the kernel held on the
        // port at that moment.
        let from = stream
            .local_addr()
            .map_or_else(|unknown| unknown.to_string(), |a| a.to_string());
        return Err(std::io::Error::new(
            e.kind(),
            format!(
                "{e} (bound {from}; sockets on port {port}: {})",
                tcp_sockets_on(port)
            ),
        ));
    }
    Ok(stream)
}

/// The IPv4 TCP sockets whose local or remote port is `port`, from
/// `/proc/net/tcp`: "local remote state" each (state in the kernel's hex,
/// 0A listening, 06 TIME_WAIT).
fn tcp_sockets_on(port: u16) -> String {
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
    let hex = format!(":{port:04X}");
    let found: Vec<String> = table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (local, remote, state) = (f.get(1)?, f.get(2)?, f.get(3)?);
            (local.ends_with(&hex) || remote.ends_with(&hex))
                .then(|| format!("{local} {remote} {state}"))
        })
        .collect();
    if found.is_empty() {
        "none".into()
    } else {
        found.join(", ")
    }
}

/// The `User-Agent` every request sends unless the test gives its own: a
/// person's, of no device class in particular ("other").
pub const BROWSER_UA: &str = "Mozilla/5.0 (shortlink e2e)";

/// Writes one request on `s` (`Connection: close`).
fn write_request(
    mut s: TcpStream,
    method: &[u8],
    target: &[u8],
    headers: &[(&str, &str)],
    body: &[u8],
) -> Result<TcpStream, String> {
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut req = Vec::new();
    req.extend_from_slice(method);
    req.push(b' ');
    req.extend_from_slice(target);
    req.extend_from_slice(b" HTTP/1.1\r\nConnection: close\r\n");
    if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
        req.extend_from_slice(b"Host: localhost\r\n");
    }
    // A browser's, as people's clicks carry (none at all is a bot's).
    if !headers
        .iter()
        .any(|(n, _)| n.eq_ignore_ascii_case("user-agent"))
    {
        req.extend_from_slice(format!("User-Agent: {BROWSER_UA}\r\n").as_bytes());
    }
    for (n, v) in headers {
        req.extend_from_slice(format!("{n}: {v}\r\n").as_bytes());
    }
    if !body.is_empty() {
        req.extend_from_slice(format!("Content-Length: {}\r\n", body.len()).as_bytes());
    }
    req.extend_from_slice(b"\r\n");
    req.extend_from_slice(body);
    s.write_all(&req)
        .map_err(|e| format!("write request: {e}"))?;
    Ok(s)
}

/// The second half of [`try_http`]: the whole response of a request sent
/// with [`send_request`].
pub fn read_response(mut s: TcpStream, method: &[u8]) -> Result<Response, String> {
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)
        .map_err(|e| format!("read response: {e}"))?;
    if !raw.windows(4).any(|w| w == b"\r\n\r\n") {
        return Err(format!(
            "no header end in {:?}",
            String::from_utf8_lossy(&raw)
        ));
    }
    Ok(parse_response(&raw, method == b"HEAD"))
}

fn parse_response(raw: &[u8], head: bool) -> Response {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no header end in {:?}", String::from_utf8_lossy(raw)));
    let head_text = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head_text.split("\r\n");
    let status_line = lines.next().unwrap();
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("bad status line {status_line:?}"));
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    if head {
        body.clear();
    } else if headers
        .iter()
        .any(|(n, v)| n.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"))
    {
        body = dechunk(&body);
    }
    Response {
        status,
        headers,
        body,
    }
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(eol) = data.windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let size = usize::from_str_radix(
            String::from_utf8_lossy(&data[..eol])
                .split(';')
                .next()
                .unwrap()
                .trim(),
            16,
        )
        .unwrap_or(0);
        if size == 0 {
            return out;
        }
        let start = eol + 2;
        out.extend_from_slice(&data[start..start + size]);
        data = &data[start + size + 2..];
    }
}

/// A test peer in the daemon's place: the IPC socket bound in `scratch`
/// (open to the workers) and the deployment key, for a scripted daemon to
/// serve, and nginx (`workers` workers) passing to it with `directives`
/// added to the `http` block, one location `/` with `shortlink on`.
pub fn peer(
    scratch: &Scratch,
    directives: &str,
) -> (std::os::unix::net::UnixListener, DeploymentKey, PeerNginx) {
    use std::os::unix::fs::PermissionsExt;
    let (key_path, _) = scratch.key();
    let key = DeploymentKey::load(&key_path).unwrap();
    let socket = scratch.path("ipc.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    let conf = format!(
        r#"
    shortlink_key_file {key};
    shortlink_zone zone=links:1m;
    shortlink_pass unix:{socket};
    {directives}
    server {{
        listen 127.0.0.1:{{port}};
        location / {{ shortlink on; }}
    }}"#,
        key = key_path.display(),
        socket = socket.display(),
    );
    (listener, key, PeerNginx(conf))
}

/// nginx's configuration for a [`peer`], started once the peer serves.
pub struct PeerNginx(String);

impl PeerNginx {
    /// Starts nginx with one worker.
    pub fn start(self, scratch: &Scratch) -> Nginx {
        Nginx::start(scratch, 1, &self.0)
    }
}

/// Polls `f` until it returns true or `within` passes; false then. For what
/// reaches the edge asynchronously (an edit's event, a reload's workers).
pub fn eventually(within: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + within;
    loop {
        if f() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_connection_names_the_bound_port_and_the_sockets() {
        let port = free_port();
        let e = connect_from(std::net::Ipv4Addr::new(127, 0, 0, 5), port).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused, "{e}");
        let text = e.to_string();
        assert!(text.contains("bound 127.0.0.5:"), "{text}");
        assert!(
            text.contains(&format!("sockets on port {port}: ")),
            "{text}"
        );
    }

    #[test]
    fn sockets_on_a_listening_port_are_listed() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        assert!(
            tcp_sockets_on(port).contains(" 0A"),
            "{}",
            tcp_sockets_on(port)
        );
        drop(listener);
    }
}
