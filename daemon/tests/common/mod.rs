//! Test harness: a real `shortlinkd` process on temporary sockets and a
//! temporary database, an HTTP client over its API socket, and an IPC
//! client speaking the nginx module's protocol.
#![allow(dead_code)]

pub mod admin;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use http_body_util::BodyExt;
use serde_json::Value;
use shortlink_core::handshake::{self, LinkAuth, Nonce};
use shortlink_core::ipc::{self, Hello, Reply, Request, PROTOCOL_VERSION};
use shortlink_core::{Codec, DeploymentKey, Fingerprint};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;

pub const BIN: &str = env!("CARGO_BIN_EXE_shortlinkd");

/// The deployment key of every test daemon. Fixed, so that whether an
/// alphanumeric alias a test uses has the form of a generated code (about
/// one in 31 does, under any given key) is the same on every run: a random
/// key made such tests fail now and then.
pub const TEST_KEY: [u8; 32] = *b"shortlink daemon tests, fixed ky";

/// Under `with-pg` (`$SHORTLINK_TEST_PG`), the `serve` arguments that put a
/// new daemon on a fresh database of the suite's PostgreSQL cluster; else
/// none (SQLite under the data directory).
pub fn suite_database() -> Vec<String> {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let Some(cluster) = testpg::PgCluster::suite() else {
        return Vec::new();
    };
    let db = format!(
        "t{}_{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    );
    vec![
        "--database".into(),
        cluster.create_db(&db),
        "--database-password-file".into(),
        cluster.password_file().display().to_string(),
    ]
}

/// A daemon on database `url` of a test's own `cluster`, with `extra`
/// `serve` arguments.
pub async fn on_cluster(cluster: &testpg::PgCluster, url: &str, extra: &[&str]) -> Daemon {
    let password = cluster.password_file();
    let mut args = vec![
        "--database",
        url,
        "--database-password-file",
        password.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    Daemon::start_with(&args).await
}

/// Whether the suite runs on PostgreSQL (`with-pg`).
pub fn on_postgres() -> bool {
    std::env::var_os(testpg::SUITE_CLUSTER_ENV).is_some()
}

/// A running daemon and its files.
pub struct Daemon {
    pub dir: tempfile::TempDir,
    pub key: DeploymentKey,
    pub admin_key: String,
    child: Option<Child>,
    extra: Vec<String>,
}

impl Daemon {
    /// Starts a daemon with an admin API key ready.
    pub async fn start() -> Self {
        Self::start_with(&[]).await
    }

    /// Starts a daemon with extra `serve` arguments.
    pub async fn start_with(extra: &[&str]) -> Self {
        // A test naming its own database keeps it.
        let suite = (!extra.contains(&"--database"))
            .then(suite_database)
            .unwrap_or_default();
        Self::start_on(suite, extra).await
    }

    /// Starts a daemon on SQLite even under `with-pg`: for what only the
    /// SQLite file has (its backup, its WAL).
    pub async fn start_on_sqlite() -> Self {
        Self::start_on(Vec::new(), &[]).await
    }

    /// Starts a daemon on SQLite in `dir`, whose database a test made
    /// beforehand (an older schema, say).
    pub async fn start_on_sqlite_in(dir: tempfile::TempDir) -> Self {
        Self::start_in(dir, Vec::new(), &[]).await
    }

    async fn start_on(store: Vec<String>, extra: &[&str]) -> Self {
        Self::start_in(tempfile::tempdir().expect("temp dir"), store, extra).await
    }

    async fn start_in(dir: tempfile::TempDir, store: Vec<String>, extra: &[&str]) -> Self {
        let key = DeploymentKey::from_bytes(TEST_KEY);
        key.write_new(&dir.path().join("key")).unwrap();
        let mut d = Daemon {
            dir,
            key,
            admin_key: String::new(),
            child: None,
            extra: store
                .into_iter()
                .chain(extra.iter().map(|s| s.to_string()))
                .collect(),
        };
        d.spawn().await;
        let out = d.cli(&[
            "key",
            "create",
            "--name",
            "admin",
            "--scopes",
            "links:write,links:read,stats:read,admin",
        ]);
        assert!(out.status.success(), "key create: {}", stderr(&out));
        d.admin_key = stdout(&out).trim().to_string();
        d
    }

    pub fn data_dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn api_path(&self) -> PathBuf {
        self.dir.path().join("api.sock")
    }

    pub fn ipc_path(&self) -> PathBuf {
        self.dir.path().join("ipc.sock")
    }

    pub fn codec(&self) -> Codec {
        Codec::new(&self.key)
    }

    pub fn fingerprint(&self) -> Fingerprint {
        self.key.fingerprint()
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("daemon.log")).unwrap_or_default()
    }

    /// Starts the process and waits for `/api/v1/health`.
    pub async fn spawn(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("daemon.log"))
            .unwrap();
        let child = Command::new(BIN)
            .arg("serve")
            .arg("--data-dir")
            .arg(self.dir.path())
            .args(&self.extra)
            .env("RUST_LOG", "info")
            .env_remove("SHORTLINKD_CONFIG")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn shortlinkd");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                panic!("daemon exited with {status}: {}", self.log());
            }
            if let Ok((200, _)) = self.try_get_health().await {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "daemon not ready: {}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn try_get_health(&self) -> Result<(u16, Value), String> {
        http_unix(&self.api_path(), "GET", "/api/v1/health", &[], None)
            .await
            .map(|(s, _, v)| (s, v))
    }

    /// SIGKILL: no chance to flush anything.
    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            c.kill().unwrap();
            c.wait().unwrap();
        }
    }

    /// SIGTERM and wait for a clean exit; returns the exit status.
    pub fn sigterm(&mut self) -> std::process::ExitStatus {
        let mut c = self.child.take().expect("running");
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(c.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        )
        .unwrap();
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            if let Some(s) = c.try_wait().unwrap() {
                return s;
            }
            assert!(Instant::now() < deadline, "daemon did not stop on SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stops the daemon (SIGTERM) and starts it again with `extra` added
    /// to its `serve` arguments.
    pub async fn restart_with(&mut self, extra: &[&str]) {
        assert!(self.sigterm().success(), "{}", self.log());
        self.extra.extend(extra.iter().map(|s| s.to_string()));
        self.spawn().await;
    }

    /// Stops the daemon (SIGTERM) and starts it again without the `serve`
    /// arguments that start with `prefix`.
    pub async fn restart_without(&mut self, prefix: &str) {
        assert!(self.sigterm().success(), "{}", self.log());
        self.extra.retain(|a| !a.starts_with(prefix));
        self.spawn().await;
    }

    /// Stops the daemon (SIGTERM) and starts it again with `flag` given
    /// `value` (replacing the value it had, if any).
    pub async fn restart_setting(&mut self, flag: &str, value: &str) {
        assert!(self.sigterm().success(), "{}", self.log());
        match self.extra.iter().position(|a| a == flag) {
            Some(i) if i + 1 < self.extra.len() => self.extra[i + 1] = value.to_string(),
            _ => self.extra.extend([flag.to_string(), value.to_string()]),
        }
        self.spawn().await;
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// Runs a CLI command against this daemon's data directory.
    pub fn cli(&self, args: &[&str]) -> Output {
        self.cli_stdin(args, "")
    }

    pub fn cli_stdin(&self, args: &[&str], input: &str) -> Output {
        cli_in(self.dir.path(), args, input)
    }

    /// An API request with the admin key.
    pub async fn req(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let (s, _, v) = self
            .req_with(method, path, &[("x-api-key", &self.admin_key)], body)
            .await;
        (s, v)
    }

    /// An API request with the given headers only.
    pub async fn req_with(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<Value>,
    ) -> (u16, axum::http::HeaderMap, Value) {
        http_unix(
            &self.api_path(),
            method,
            path,
            headers,
            body.map(|b| b.to_string().into_bytes()),
        )
        .await
        .unwrap()
    }

    /// A new API key with `scopes` (comma-separated), made by the CLI.
    pub async fn key_with(&self, scopes: &str) -> String {
        let out = self.cli(&["key", "create", "--name", scopes, "--scopes", scopes]);
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out).trim().to_string()
    }

    /// Raw body variant.
    pub async fn req_raw(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Vec<u8>,
    ) -> (u16, Value) {
        let (s, _, v) = http_unix(&self.api_path(), method, path, headers, Some(body))
            .await
            .unwrap();
        (s, v)
    }

    /// Creates a link, asserting 201; returns the reply.
    pub async fn create(&self, body: Value) -> Value {
        let (s, v) = self.req("POST", "/api/v1/links", Some(body)).await;
        assert_eq!(s, 201, "{v}");
        v
    }

    /// `/metrics` text.
    pub async fn metrics(&self) -> String {
        let (s, _, v) = self
            .req_with("GET", "/metrics", &[("x-api-key", &self.admin_key)], None)
            .await;
        assert_eq!(s, 200);
        v.as_str().unwrap().to_string()
    }

    /// One metric value.
    pub async fn metric(&self, name: &str) -> f64 {
        let text = self.metrics().await;
        text.lines()
            .find_map(|l| l.strip_prefix(name).and_then(|r| r.strip_prefix(' ')))
            .unwrap_or_else(|| panic!("no metric {name}"))
            .trim()
            .parse()
            .unwrap()
    }

    /// An IPC connection that has completed the handshake (the daemon's
    /// proof checked).
    pub async fn ipc(&self) -> Ipc {
        let mut c = Ipc::connect(&self.ipc_path()).await;
        c.handshake(&self.key).await;
        c
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

pub fn cli_in(dir: &Path, args: &[&str], input: &str) -> Output {
    use std::io::Write;
    let mut child = Command::new(BIN)
        .arg("--data-dir")
        .arg(dir)
        .args(args)
        .env_remove("RUST_LOG")
        .env_remove("SHORTLINKD_CONFIG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// One HTTP/1.1 request over a Unix socket.
pub async fn http_unix(
    path: &Path,
    method: &str,
    uri: &str,
    headers: &[(&str, &str)],
    body: Option<Vec<u8>>,
) -> Result<(u16, axum::http::HeaderMap, Value), String> {
    let stream = UnixStream::connect(path).await.map_err(|e| e.to_string())?;
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .map_err(|e| e.to_string())?;
    tokio::spawn(conn);
    let mut b = axum::http::Request::builder()
        .method(method)
        .uri(uri)
        .header("host", "localhost");
    if body.is_some() {
        b = b.header("content-type", "application/json");
    }
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    let req = b
        .body(axum::body::Body::from(body.unwrap_or_default()))
        .unwrap();
    let resp = sender.send_request(req).await.map_err(|e| e.to_string())?;
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let bytes = resp
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    let value = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()))
    };
    Ok((status, headers, value))
}

/// A client of the IPC protocol, like one nginx worker.
pub struct Ipc {
    pub stream: UnixStream,
    buf: Vec<u8>,
}

impl Ipc {
    pub async fn connect(path: &Path) -> Self {
        Ipc {
            stream: UnixStream::connect(path).await.expect("connect IPC"),
            buf: Vec::new(),
        }
    }

    /// Sends the hello; returns the first reply (a challenge or a refusal).
    pub async fn hello(&mut self, fingerprint: Fingerprint, protocol: u16) -> Reply {
        self.send(&Request::Hello(Hello {
            protocol,
            fingerprint,
            pid: std::process::id(),
        }))
        .await;
        self.recv().await.expect("handshake reply")
    }

    /// Answers `challenge` with a proof made under `key` (the right one or
    /// not); returns the client nonce used and the daemon's reply (`None`
    /// when it closed without one).
    pub async fn auth(&mut self, key: &DeploymentKey, challenge: Nonce) -> (Nonce, Option<Reply>) {
        let nonce = handshake::nonce().unwrap();
        let proof = LinkAuth::new(key).edge_proof(&challenge, &nonce, std::process::id());
        self.send(&Request::Auth { nonce, proof }).await;
        (nonce, self.recv().await)
    }

    /// The whole handshake as a worker holding `key` does it, checking the
    /// daemon's proof in the welcome.
    pub async fn handshake(&mut self, key: &DeploymentKey) {
        let challenge = match self.hello(key.fingerprint(), PROTOCOL_VERSION).await {
            Reply::Challenge { nonce } => nonce,
            other => panic!("expected a challenge, got {other:?}"),
        };
        match self.auth(key, challenge).await {
            (nonce, Some(Reply::Welcome { proof, .. })) => assert!(
                LinkAuth::new(key).verify_daemon(&nonce, &challenge, &proof),
                "the daemon's proof does not verify"
            ),
            (_, other) => panic!("expected a welcome, got {other:?}"),
        }
    }

    pub async fn send(&mut self, req: &Request) {
        self.stream
            .write_all(&ipc::frame(req).unwrap())
            .await
            .unwrap();
    }

    pub async fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).await.unwrap();
    }

    /// Next reply, or `None` when the daemon closed the connection. Panics
    /// after 5 s of silence.
    pub async fn recv(&mut self) -> Option<Reply> {
        self.recv_timeout(Duration::from_secs(5))
            .await
            .expect("IPC reply timed out")
    }

    /// `Err(())` on timeout, `Ok(None)` on close.
    pub async fn recv_timeout(&mut self, t: Duration) -> Result<Option<Reply>, ()> {
        let deadline = tokio::time::Instant::now() + t;
        loop {
            if let Some((reply, used)) = ipc::read_frame::<Reply>(&self.buf).unwrap() {
                self.buf.drain(..used);
                return Ok(Some(reply));
            }
            // On the heap: futures holding it nest, and debug builds do not
            // overlap their states (a stack overflow in tests otherwise).
            let mut chunk = vec![0u8; 65536];
            let n = match tokio::time::timeout_at(deadline, self.stream.read(&mut chunk)).await {
                Err(_) => return Err(()),
                Ok(Ok(n)) => n,
                Ok(Err(_)) => 0,
            };
            if n == 0 {
                return Ok(None);
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    /// Replies already received or sitting in the socket buffer, without
    /// waiting.
    pub fn ready_now(&mut self) -> Vec<Reply> {
        use std::os::fd::AsRawFd;
        // A raw non-blocking recv: tokio's try_read trusts readiness state
        // its reactor may not have refreshed yet.
        let fd = self.stream.as_raw_fd();
        let mut chunk = [0u8; 65536];
        while let Ok(n) =
            nix::sys::socket::recv(fd, &mut chunk, nix::sys::socket::MsgFlags::MSG_DONTWAIT)
        {
            if n == 0 {
                break;
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
        let mut out = Vec::new();
        while let Some((reply, used)) = ipc::read_frame::<Reply>(&self.buf).unwrap() {
            self.buf.drain(..used);
            out.push(reply);
        }
        out
    }

    /// Subscribes as a worker with an empty zone and returns the alias
    /// snapshot (the daemon resets the worker first).
    pub async fn subscribe(&mut self, id: u32) -> Vec<String> {
        let r = self.resume(id, None).await;
        assert!(r.reset, "a worker without a position is reset");
        assert!(r.replayed.is_empty());
        r.aliases
    }

    /// Subscribes as a worker that applied the changes up to `since`.
    pub async fn resume(&mut self, id: u32, since: Option<ipc::ChangePosition>) -> Resumed {
        self.send(&Request::Subscribe { id, since }).await;
        assert_eq!(self.recv().await, Some(Reply::Subscribed { id }));
        let mut reset = false;
        let total = loop {
            match self.recv().await {
                Some(Reply::Event(ipc::Event::Reset)) if !reset => reset = true,
                Some(Reply::Event(ipc::Event::AliasSnapshotBegin { total })) => break total,
                other => panic!("expected snapshot begin, got {other:?}"),
            }
        };
        let mut aliases = Vec::new();
        loop {
            match self.recv().await {
                Some(Reply::Event(ipc::Event::Aliases { aliases: a })) => aliases.extend(a),
                Some(Reply::Event(ipc::Event::AliasSnapshotEnd)) => break,
                other => panic!("unexpected during snapshot: {other:?}"),
            }
        }
        assert_eq!(aliases.len() as u64, total);
        let mut replayed = Vec::new();
        let position = loop {
            match self.recv().await {
                Some(Reply::Event(ipc::Event::Position(p))) => break p,
                Some(Reply::Event(e)) => replayed.push(e),
                other => panic!("unexpected during replay: {other:?}"),
            }
        };
        Resumed {
            reset,
            aliases,
            replayed,
            position,
        }
    }

    pub async fn lookup(&mut self, id: u32, code: &str) -> ipc::LookupResult {
        self.send(&Request::Lookup {
            id,
            code: code.to_string(),
        })
        .await;
        loop {
            match self.recv().await {
                Some(Reply::Lookup { id: got, result }) if got == id => return result,
                Some(Reply::Event(_)) => continue,
                other => panic!("expected lookup {id}, got {other:?}"),
            }
        }
    }

    pub async fn clicks(&mut self, id: u32, batch: ipc::ClickBatch) {
        let batch_id = batch.batch_id;
        self.send(&Request::Clicks { id, batch }).await;
        loop {
            match self.recv().await {
                Some(Reply::ClicksAck {
                    id: got,
                    batch_id: b,
                }) if got == id => {
                    assert_eq!(b, batch_id);
                    return;
                }
                Some(Reply::Event(_)) => continue,
                other => panic!("expected ack {id}, got {other:?}"),
            }
        }
    }
}

/// What a subscription started with.
#[derive(Debug)]
pub struct Resumed {
    /// The daemon told the worker to drop its cache.
    pub reset: bool,
    /// The alias snapshot.
    pub aliases: Vec<String>,
    /// The changes after the worker's position.
    pub replayed: Vec<ipc::Event>,
    /// Where the worker is now.
    pub position: ipc::ChangePosition,
}

/// A click batch for one link.
pub fn batch(id_byte: u8, link_id: u64, count: u32, bot: bool) -> ipc::ClickBatch {
    let mut batch_id = [0u8; 16];
    batch_id[0] = id_byte;
    batch_id[15] = (std::process::id() & 0xff) as u8;
    ipc::ClickBatch {
        batch_id: ipc::BatchId(batch_id),
        clicks: vec![ipc::ClickCount {
            link_id,
            hour: (shortlinkd::timestamp::unix_now() / 3600) as u32,
            device: shortlink_core::device::DeviceClass::Desktop,
            bot,
            referrer: Some("news.example.com".into()),
            count,
            country: shortlink_core::country::UNKNOWN,
            variant: 0,
        }],
    }
}

/// Waits until `f` is true (polling), up to `t`.
pub async fn eventually<F, Fut>(t: Duration, mut f: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + t;
    while Instant::now() < deadline {
        if f().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

/// Unix seconds of a time in a reply (RFC 3339 there); panics naming the
/// value when it is neither RFC 3339 nor a number.
pub fn unix(v: &Value) -> i64 {
    match v {
        Value::String(s) => shortlinkd::timestamp::parse_time(s).unwrap_or_else(|e| panic!("{e}")),
        other => other
            .as_i64()
            .unwrap_or_else(|| panic!("{other} is not a time")),
    }
}
