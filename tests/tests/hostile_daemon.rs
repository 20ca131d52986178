//! Whatever the daemon sends, the edge answers with a clear status and an
//! error-log line: here a test peer on the IPC socket plays a daemon that
//! stores unsafe targets and sends malformed frames, and one that knows the
//! key's fingerprint (which is no secret) but not the key.

use std::io::{Read, Write};
use std::os::unix::net::UnixListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use shortlink_core::handshake::LinkAuth;
use shortlink_core::ipc::{
    frame, read_frame, BatchId, EdgeLink, LookupResult, Reply, Request, PROTOCOL_VERSION,
};
use shortlink_core::DeploymentKey;
use shortlink_e2e::{peer, Scratch};

/// How the test daemon goes through the handshake.
#[derive(Clone, Copy, PartialEq)]
enum Proving {
    /// It holds the key: challenge, check, prove.
    WithKey,
    /// It has the fingerprint only: its proof is a guess.
    Guessing,
    /// It welcomes at once, as protocol 1 did, with no challenge.
    NoChallenge,
}

/// Serves connections until the listener is dropped with the test.
/// Click batches are refused as out of bounds, their ids noted in
/// `refused`, and the connection closed after each, so a worker that sent
/// one again would do so on its next connection.
fn hostile_daemon(
    listener: UnixListener,
    key: DeploymentKey,
    proving: Proving,
    refused: Arc<Mutex<Vec<BatchId>>>,
) {
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let key = key.clone();
            let refused = refused.clone();
            std::thread::spawn(move || {
                let auth = LinkAuth::new(&key);
                let challenge = [9u8; 16];
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    let n = match stream.read(&mut chunk) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => n,
                    };
                    buf.extend_from_slice(&chunk[..n]);
                    while let Ok(Some((req, used))) = read_frame::<Request>(&buf) {
                        buf.drain(..used);
                        let welcome = |proof| {
                            frame(&Reply::Welcome {
                                protocol: PROTOCOL_VERSION,
                                fingerprint: key.fingerprint(),
                                proof,
                            })
                            .unwrap()
                        };
                        let out = match req {
                            Request::Hello(_) if proving == Proving::NoChallenge => {
                                welcome([0; 32])
                            }
                            Request::Hello(_) => {
                                frame(&Reply::Challenge { nonce: challenge }).unwrap()
                            }
                            Request::Auth { nonce, .. } => match proving {
                                Proving::WithKey => welcome(auth.daemon_proof(&nonce, &challenge)),
                                _ => welcome([7; 32]),
                            },
                            Request::Lookup { id, .. } if proving != Proving::WithKey => {
                                frame(&Reply::Lookup {
                                    id,
                                    result: LookupResult::Found(EdgeLink {
                                        id: 6,
                                        target: "https://phishing.example/".into(),
                                        ..EdgeLink::default()
                                    }),
                                })
                                .unwrap()
                            }
                            Request::Lookup { id, code } if code == "crlf-target" => {
                                frame(&Reply::Lookup {
                                    id,
                                    result: LookupResult::Found(EdgeLink {
                                        id: 7,
                                        target: "https://example.com/\r\nSet-Cookie: stolen=1"
                                            .into(),
                                        ..EdgeLink::default()
                                    }),
                                })
                                .unwrap()
                            }
                            Request::Lookup { id, code } if code == "click-me" => {
                                frame(&Reply::Lookup {
                                    id,
                                    result: LookupResult::Found(EdgeLink {
                                        id: 42,
                                        target: "https://example.com/clicked".into(),
                                        ..EdgeLink::default()
                                    }),
                                })
                                .unwrap()
                            }
                            Request::Lookup { id, code } if code == "space-target" => {
                                frame(&Reply::Lookup {
                                    id,
                                    result: LookupResult::Found(EdgeLink {
                                        id: 8,
                                        target: "https://example.com/a b".into(),
                                        ..EdgeLink::default()
                                    }),
                                })
                                .unwrap()
                            }
                            Request::Lookup { code, .. } if code == "garbage-reply" => {
                                vec![0, 0, 0, 3, 0xff, 0xfe, 0xfd]
                            }
                            Request::Lookup { code, .. } if code == "huge-reply" => {
                                vec![0x7f, 0xff, 0xff, 0xff]
                            }
                            Request::Lookup { id, .. } => frame(&Reply::Lookup {
                                id,
                                result: LookupResult::NotFound,
                            })
                            .unwrap(),
                            Request::Clicks { id, batch } => {
                                refused.lock().unwrap().push(batch.batch_id);
                                let reply = frame(&Reply::ClicksRefused {
                                    id,
                                    batch_id: batch.batch_id,
                                    reason: "click row 0: count 4294967295 is outside 1..=1000000"
                                        .into(),
                                })
                                .unwrap();
                                let _ = stream.write_all(&reply);
                                std::thread::sleep(Duration::from_millis(50));
                                return;
                            }
                            _ => continue,
                        };
                        if stream.write_all(&out).is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
}

#[test]
fn bad_replies_never_reach_the_client() {
    let scratch = Scratch::new("hostile");
    let (listener, key, nginx) = peer(&scratch, "shortlink_timeout 500ms;");
    hostile_daemon(listener, key, Proving::WithKey, Arc::default());
    let nginx = nginx.start(&scratch);
    std::thread::sleep(Duration::from_millis(200));

    for code in ["crlf-target", "space-target"] {
        for _ in 0..2 {
            let r = nginx.get(format!("/{code}").as_bytes());
            assert_eq!(r.status, 500, "{code}");
            assert_eq!(r.header("Location"), None);
            assert_eq!(r.header("Set-Cookie"), None);
        }
    }
    assert!(nginx
        .error_log()
        .contains("target of code \"crlf-target\" is not a safe Location value"));

    // A malformed frame drops the link: that request and the next fail fast
    // with 503, and the worker lives on and reconnects.
    for code in ["garbage-reply", "huge-reply"] {
        let r = nginx.get(format!("/{code}").as_bytes());
        assert_eq!(r.status, 503, "{code}");
        let log = nginx.error_log();
        assert!(log.contains("bad frame from the daemon"), "{log}");
        std::thread::sleep(Duration::from_millis(400));
    }
    let r = nginx.get(b"/someone-else");
    assert_eq!(r.status, 404, "after reconnecting, ordinary lookups work");
    nginx.assert_clean_log();
}

#[test]
fn a_daemon_without_the_key_is_never_trusted() {
    for proving in [Proving::Guessing, Proving::NoChallenge] {
        let scratch = Scratch::new("impostor");
        let (listener, key, nginx) = peer(&scratch, "shortlink_timeout 500ms;");
        hostile_daemon(listener, key, proving, Arc::default());
        let nginx = nginx.start(&scratch);
        std::thread::sleep(Duration::from_millis(300));
        for _ in 0..3 {
            let r = nginx.get(b"/some-alias");
            assert_eq!(r.status, 503, "never the impostor's answer");
            assert_eq!(r.header("Location"), None);
            std::thread::sleep(Duration::from_millis(100));
        }
        let log = nginx.error_log();
        assert!(
            log.contains("did not prove it holds the key of \"shortlink_key_file\""),
            "{log}"
        );
        assert!(!log.contains("connected to the daemon"), "{log}");
        nginx.assert_clean_log();
    }
}

#[test]
fn a_refused_click_batch_is_dropped_once_never_resent() {
    let scratch = Scratch::new("clicks-refused");
    let (listener, key, nginx) = peer(&scratch, "shortlink_flush_interval 100ms;");
    let refused = Arc::new(Mutex::new(Vec::new()));
    hostile_daemon(listener, key, Proving::WithKey, refused.clone());
    let nginx = nginx.start(&scratch);
    std::thread::sleep(Duration::from_millis(300));
    // Each redirect is a click; each flush a batch the daemon refuses and
    // then hangs up on, so the worker reconnects between batches.
    for round in 0..3 {
        let r = nginx.get(b"/click-me");
        assert_eq!(r.status, 302, "round {round}");
        std::thread::sleep(Duration::from_millis(500));
    }
    let seen = refused.lock().unwrap().clone();
    assert!(seen.len() >= 3, "a batch per click: {seen:?}");
    let mut unique = seen.clone();
    unique.sort_by_key(|b| b.0);
    unique.dedup();
    assert_eq!(
        unique.len(),
        seen.len(),
        "a refused batch was sent again: {seen:?}"
    );
    let log = nginx.error_log();
    assert_eq!(
        log.matches("refused click batch").count(),
        seen.len(),
        "one line per refused batch:\n{log}"
    );
    nginx.assert_clean_log();
}
