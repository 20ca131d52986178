//! An answer given before the request body was read (no session, no key,
//! a body over its limit) reaches a client that is still writing the body,
//! as it reaches nginx forwarding a large upload: the daemon reads the rest
//! instead of resetting the connection under the client's write.

mod common;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;

use common::Daemon;

/// Writes `method path` with a body of `len` bytes in full, then reads the
/// answer's status line. A reset during the write fails with its error.
fn send(
    socket: PathBuf,
    method: &str,
    path: &str,
    headers: &str,
    len: usize,
) -> Result<String, String> {
    let mut s = UnixStream::connect(&socket).map_err(|e| format!("connect: {e}"))?;
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: s.example.com\r\n{headers}Content-Length: {len}\r\n\r\n"
    );
    s.write_all(head.as_bytes())
        .map_err(|e| format!("head: {e}"))?;
    let chunk = vec![b'a'; 64 << 10];
    let mut left = len;
    while left > 0 {
        let n = left.min(chunk.len());
        s.write_all(&chunk[..n])
            .map_err(|e| format!("body, {} of {len} bytes written: {e}", len - left))?;
        left -= n;
    }
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    while !answer.windows(2).any(|w| w == b"\r\n") {
        let n = s.read(&mut buf).map_err(|e| format!("answer: {e}"))?;
        if n == 0 {
            return Err("closed without an answer".into());
        }
        answer.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&answer);
    Ok(text.lines().next().unwrap_or_default().to_string())
}

#[tokio::test]
async fn early_answers_reach_a_client_still_writing_its_body() {
    let d = Daemon::start().await;
    let cases = [
        // No admin session: the login redirect, before the upload is read.
        (
            "POST",
            "/admin/csv/import",
            "Content-Type: multipart/form-data; boundary=x\r\n",
            4 << 20,
            "303",
        ),
        // No API key.
        (
            "POST",
            "/api/v1/links",
            "Content-Type: application/json\r\n",
            4 << 20,
            "401",
        ),
        // Over the route's limit (256 KiB) with a key: refused unread.
        (
            "POST",
            "/api/v1/links",
            &format!(
                "Content-Type: application/json\r\nX-Api-Key: {}\r\n",
                d.admin_key
            ),
            2 << 20,
            "413",
        ),
    ];
    for (method, path, headers, len, status) in cases {
        let socket = d.api_path();
        let headers = headers.to_string();
        let got = tokio::task::spawn_blocking(move || send(socket, method, path, &headers, len))
            .await
            .unwrap();
        let line = got.unwrap_or_else(|e| panic!("{method} {path} with {len} bytes: {e}"));
        assert!(
            line.contains(&format!(" {status} ")),
            "{method} {path}: {line}"
        );
    }
    // The connection's reading did not hold the daemon: it still answers.
    let (s, _) = d.req("GET", "/api/v1/health", None).await;
    assert_eq!(s, 200);
}
