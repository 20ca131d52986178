//! Click batches under pressure, with a test peer playing the daemon: a
//! page that fills up goes to the daemon at once, not at the next flush (at
//! a high click rate the pages ran out between flushes and went to the
//! spool); and with a daemon slow to acknowledge, the pages fill while
//! their batches wait for answers, what they hold goes to the spool, and
//! once the daemon answers again every later click still reaches it over
//! IPC (a page spooled while in flight once kept its in-flight mark: the
//! batch it held next was never sent, and waited for the next spool or
//! nginx's exit).

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use shortlink_core::handshake::LinkAuth;
use shortlink_core::ipc::{
    frame, read_frame, EdgeLink, LookupResult, Reply, Request, PROTOCOL_VERSION,
};
use shortlink_core::DeploymentKey;
use shortlink_e2e::{eventually, peer, Nginx, Scratch};

/// What the peer saw: the link ids of every click batch it was sent.
type Seen = Arc<Mutex<Vec<Vec<u64>>>>;

/// Answers lookups of `/c<n>` with link `n`; holds every click batch
/// unanswered until `acking` is set, then acknowledges the held ones and
/// every one after.
fn slow_daemon(listener: UnixListener, key: DeploymentKey, acking: Arc<AtomicBool>, seen: Seen) {
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let (key, acking, seen) = (key.clone(), acking.clone(), seen.clone());
            std::thread::spawn(move || {
                let auth = LinkAuth::new(&key);
                let challenge = [3u8; 16];
                let (mut buf, mut chunk, mut held) = (Vec::new(), [0u8; 65536], Vec::new());
                stream
                    .set_read_timeout(Some(Duration::from_millis(50)))
                    .unwrap();
                loop {
                    match stream.read(&mut chunk) {
                        Ok(0) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                        Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
                        Err(_) => return,
                    }
                    let mut out = Vec::new();
                    while let Ok(Some((req, used))) = read_frame::<Request>(&buf) {
                        buf.drain(..used);
                        let reply = match req {
                            Request::Hello(_) => Reply::Challenge { nonce: challenge },
                            Request::Auth { nonce, .. } => Reply::Welcome {
                                protocol: PROTOCOL_VERSION,
                                fingerprint: key.fingerprint(),
                                proof: auth.daemon_proof(&nonce, &challenge),
                            },
                            Request::Lookup { id, code } => Reply::Lookup {
                                id,
                                result: match code.strip_prefix('c').and_then(|n| n.parse().ok()) {
                                    Some(n) => LookupResult::Found(EdgeLink {
                                        id: n,
                                        target: format!("https://example.com/{n}"),
                                        ..EdgeLink::default()
                                    }),
                                    None => LookupResult::NotFound,
                                },
                            },
                            Request::Clicks { id, batch } => {
                                seen.lock()
                                    .unwrap()
                                    .push(batch.clicks.iter().map(|c| c.link_id).collect());
                                held.push((id, batch.batch_id));
                                continue;
                            }
                            _ => continue,
                        };
                        out.extend(frame(&reply).unwrap());
                    }
                    if acking.load(Ordering::SeqCst) {
                        for (id, batch_id) in held.drain(..) {
                            out.extend(frame(&Reply::ClicksAck { id, batch_id }).unwrap());
                        }
                    }
                    if !out.is_empty() && stream.write_all(&out).is_err() {
                        return;
                    }
                }
            });
        }
    });
}

fn wait_for(what: &str, limit: Duration, done: impl FnMut() -> bool) {
    assert!(eventually(limit, done), "{what}: not within {limit:?}");
}

/// nginx with one worker whose daemon is a [`slow_daemon`] (acknowledging
/// from the start with `acking` set), flushing clicks every `flush`.
fn start(name: &str, flush: &str, acking: bool) -> (Scratch, Nginx, Arc<AtomicBool>, Seen) {
    let scratch = Scratch::new(name);
    let spool = scratch.path("spool");
    std::fs::create_dir_all(&spool).unwrap();
    std::fs::set_permissions(&spool, std::fs::Permissions::from_mode(0o777)).unwrap();
    let (listener, key, nginx) = peer(
        &scratch,
        &format!(
            "shortlink_spool {};\n    shortlink_flush_interval {flush};",
            spool.display()
        ),
    );
    let acking = Arc::new(AtomicBool::new(acking));
    let seen: Seen = Arc::default();
    slow_daemon(listener, key, acking.clone(), seen.clone());
    let nginx = nginx.start(&scratch);
    (scratch, nginx, acking, seen)
}

/// A click on `/c1` from referrer host `r<i>.example` (a row of its own).
fn click_from(nginx: &Nginx, i: usize) {
    let referrer = format!("http://r{i}.example/");
    let r = shortlink_e2e::http(nginx.port, b"GET", b"/c1", &[("Referer", &referrer)], b"");
    assert_eq!(r.status, 302);
}

#[test]
fn a_page_that_fills_up_goes_to_the_daemon_before_the_flush() {
    let (_scratch, nginx, _, seen) = start("full-page", "60s", true);
    // More rows than a page takes; the flush is a minute away.
    for i in 0..7000 {
        click_from(&nginx, i);
    }
    wait_for("a full page sent", Duration::from_secs(3), || {
        !seen.lock().unwrap().is_empty()
    });
    assert!(!nginx.error_log().contains("written to the spool"));
    nginx.assert_clean_log();
}

#[test]
fn clicks_after_a_spool_of_unanswered_batches_still_reach_the_daemon() {
    let (scratch, nginx, acking, seen) = start("slow-acks", "100ms", false);
    // Clicks from ever more referrers (a row each): every flush seals a
    // page and sends it, none is answered, and once the last page is full
    // the clicks overflow and everything sealed goes to the spool.
    let log = || nginx.error_log();
    for i in 0..20_000 {
        click_from(&nginx, i);
        if i % 500 == 499 && log().contains("written to the spool") {
            break;
        }
    }
    wait_for("a spool of the held clicks", Duration::from_secs(5), || {
        log().contains("written to the spool")
    });
    let spooled = std::fs::read_dir(scratch.path("spool")).unwrap().count();
    assert!(spooled >= 1, "a spool file: {}", log());
    let sent_before = seen.lock().unwrap().len();
    assert!(
        sent_before >= 2,
        "batches sent before the spool: {sent_before}"
    );

    // The daemon answers again (the held batches too, late): clicks after
    // the spool reach it, each within a few flushes.
    acking.store(true, Ordering::SeqCst);
    for n in [1001u64, 1002, 1003, 1004, 1005, 1006] {
        assert_eq!(nginx.get(format!("/c{n}").as_bytes()).status, 302);
        wait_for(
            &format!("click of link {n} sent to the daemon"),
            Duration::from_secs(3),
            || seen.lock().unwrap().iter().any(|b| b.contains(&n)),
        );
    }
    nginx.assert_clean_log();
}
