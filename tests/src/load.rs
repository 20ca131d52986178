//! Load for the fault suite: threads sending GETs for short codes to nginx
//! on loopback, over keep-alive connections or one connection per request,
//! tallying every answer, until stopped.
//!
//! A keep-alive thread whose reused connection is closed before any byte
//! of the answer arrives sends the request again on a new connection, as
//! HTTP clients do for idempotent requests (the server closed an idle
//! connection: it never read the request). Anything else that is not an
//! answer counts as a failed request.
//!
//! [`Load::quiet`] runs a fault with no request in flight, so that "sent"
//! (answers received) and "counted" (clicks the daemon has) can be compared
//! exactly: a request a killed worker had read but not answered would
//! otherwise count on one side only.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What one kind of load saw.
#[derive(Debug, Default, Clone)]
pub struct Tally {
    /// 301/302/307/308 answers per code.
    pub redirects: HashMap<String, u64>,
    /// Other answers per (code, status).
    pub others: HashMap<(String, u16), u64>,
    /// Requests that got no answer.
    pub failed: u64,
    /// Time to answer of each non-redirect, for "misses fail fast".
    pub other_latencies: Vec<Duration>,
}

impl Tally {
    fn merge(&mut self, o: Tally) {
        for (k, v) in o.redirects {
            *self.redirects.entry(k).or_default() += v;
        }
        for (k, v) in o.others {
            *self.others.entry(k).or_default() += v;
        }
        self.failed += o.failed;
        self.other_latencies.extend(o.other_latencies);
    }

    /// Redirects over all codes.
    pub fn total_redirects(&self) -> u64 {
        self.redirects.values().sum()
    }

    /// Non-redirect answers over all codes.
    pub fn total_others(&self) -> u64 {
        self.others.values().sum()
    }

    /// The 99th percentile of non-redirect answer times.
    pub fn other_p99(&self) -> Duration {
        let mut l = self.other_latencies.clone();
        if l.is_empty() {
            return Duration::ZERO;
        }
        l.sort();
        l[(l.len() * 99)
            .div_ceil(100)
            .saturating_sub(1)
            .min(l.len() - 1)]
    }
}

/// Running load.
pub struct Load {
    stop: Arc<AtomicBool>,
    gate: Arc<RwLock<()>>,
    threads: Vec<JoinHandle<Tally>>,
}

/// How a thread connects.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Conn {
    KeepAlive,
    /// `Connection: close`, a new connection per request.
    Plain,
}

impl Load {
    /// Starts `threads` threads per connection kind in `kinds`, each cycling
    /// through `codes` (paths without the leading slash) from its own
    /// offset, pausing `pause` between requests.
    pub fn start(port: u16, codes: &[String], kinds: &[(Conn, usize)], pause: Duration) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let gate = Arc::new(RwLock::new(()));
        let mut threads = Vec::new();
        let mut n = 0;
        for &(kind, count) in kinds {
            for _ in 0..count {
                let (stop, gate) = (stop.clone(), gate.clone());
                let codes = codes.to_vec();
                let offset = n * 7;
                n += 1;
                threads.push(std::thread::spawn(move || {
                    run(port, &codes, offset, kind, pause, &stop, &gate)
                }));
            }
        }
        Load {
            stop,
            gate,
            threads,
        }
    }

    /// Runs `f` while no request is in flight (requests wait for it).
    pub fn quiet<R>(&self, f: impl FnOnce() -> R) -> R {
        let _held = self.gate.write().unwrap_or_else(|e| e.into_inner());
        f()
    }

    /// Stops every thread and adds up what they saw.
    pub fn stop(self) -> Tally {
        self.stop.store(true, Ordering::Relaxed);
        let mut all = Tally::default();
        for t in self.threads {
            all.merge(t.join().expect("load thread"));
        }
        all
    }
}

fn run(
    port: u16,
    codes: &[String],
    offset: usize,
    kind: Conn,
    pause: Duration,
    stop: &AtomicBool,
    gate: &RwLock<()>,
) -> Tally {
    let mut tally = Tally::default();
    let mut conn: Option<BufReader<TcpStream>> = None;
    let mut i = offset;
    while !stop.load(Ordering::Relaxed) {
        let code = &codes[i % codes.len()];
        i += 1;
        {
            let _in_flight = gate.read().unwrap_or_else(|e| e.into_inner());
            let started = Instant::now();
            match request(port, code, kind, &mut conn) {
                Some(301 | 302 | 307 | 308) => {
                    *tally.redirects.entry(code.clone()).or_default() += 1
                }
                Some(status) => {
                    *tally.others.entry((code.clone(), status)).or_default() += 1;
                    tally.other_latencies.push(started.elapsed());
                }
                None => tally.failed += 1,
            }
        }
        if !pause.is_zero() {
            std::thread::sleep(pause);
        }
    }
    tally
}

/// One request; the status, or `None` when no answer came.
fn request(
    port: u16,
    code: &str,
    kind: Conn,
    conn: &mut Option<BufReader<TcpStream>>,
) -> Option<u16> {
    if kind == Conn::Plain {
        let mut fresh = None;
        return exchange(port, code, false, &mut fresh).ok();
    }
    let reused = conn.is_some();
    match exchange(port, code, true, conn) {
        Ok(status) => Some(status),
        // The server closed an idle connection before reading the request.
        Err(Nothing) if reused => exchange(port, code, true, conn).ok(),
        Err(_) => None,
    }
}

/// Why an exchange failed: `Nothing` when not a byte of the answer came.
enum Failure {
    Nothing,
    Partial,
}
use Failure::{Nothing, Partial};

fn exchange(
    port: u16,
    code: &str,
    keep_alive: bool,
    conn: &mut Option<BufReader<TcpStream>>,
) -> Result<u16, Failure> {
    if conn.is_none() {
        let s = TcpStream::connect(("127.0.0.1", port)).map_err(|_| Partial)?;
        s.set_read_timeout(Some(Duration::from_secs(10))).ok();
        s.set_nodelay(true).ok();
        *conn = Some(BufReader::new(s));
    }
    let r = conn.as_mut().ok_or(Partial)?;
    let close = if keep_alive {
        ""
    } else {
        "Connection: close\r\n"
    };
    let req = format!("GET /{code} HTTP/1.1\r\nHost: localhost\r\n{close}\r\n");
    let result = (|| {
        r.get_mut().write_all(req.as_bytes()).map_err(|_| Nothing)?;
        let mut line = String::new();
        match r.read_line(&mut line) {
            Ok(0) | Err(_) => return Err(Nothing),
            Ok(_) => {}
        }
        let status: u16 = line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or(Partial)?;
        let mut length = 0usize;
        let mut closes = !keep_alive;
        loop {
            let mut h = String::new();
            if r.read_line(&mut h).map_err(|_| Partial)? == 0 {
                return Err(Partial);
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            let lower = h.to_ascii_lowercase();
            if let Some(v) = lower.strip_prefix("content-length:") {
                length = v.trim().parse().map_err(|_| Partial)?;
            }
            if lower.starts_with("connection:") && lower.contains("close") {
                closes = true;
            }
        }
        let mut body = vec![0u8; length];
        r.read_exact(&mut body).map_err(|_| Partial)?;
        Ok((status, closes))
    })();
    match result {
        Ok((status, closes)) => {
            if closes {
                *conn = None;
            }
            Ok(status)
        }
        Err(e) => {
            *conn = None;
            Err(e)
        }
    }
}
