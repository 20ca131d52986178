//! Whatever the daemon sends, the edge answers with a clear status and an
//! error-log line: here a test peer on the IPC socket plays a daemon that
//! stores unsafe targets and sends malformed frames.

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::time::Duration;

use shortlink_core::ipc::{
    frame, read_frame, EdgeLink, LookupResult, Reply, Request, PROTOCOL_VERSION,
};
use shortlink_core::DeploymentKey;
use shortlink_e2e::{Nginx, Scratch};

/// Serves connections until the listener is dropped with the test.
fn hostile_daemon(listener: UnixListener, key: DeploymentKey) {
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let key = key.clone();
            std::thread::spawn(move || {
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
                        let out = match req {
                            Request::Hello(_) => frame(&Reply::Welcome {
                                protocol: PROTOCOL_VERSION,
                                fingerprint: key.fingerprint(),
                            })
                            .unwrap(),
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
    let (key_path, _) = scratch.key();
    let key = DeploymentKey::load(&key_path).unwrap();
    let socket = scratch.path("ipc.sock");
    let listener = UnixListener::bind(&socket).unwrap();
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    hostile_daemon(listener, key);

    let nginx = Nginx::start(
        &scratch,
        1,
        &format!(
            r#"
    shortlink_key_file {key};
    shortlink_zone zone=links:1m;
    shortlink_pass unix:{socket};
    shortlink_timeout 500ms;
    server {{
        listen 127.0.0.1:{{port}};
        location / {{ shortlink on; }}
    }}"#,
            key = key_path.display(),
            socket = socket.display()
        ),
    );
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
