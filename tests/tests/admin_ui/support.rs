//! What the admin UI tests share: users made with the CLI, signing in
//! (in the browser and over plain HTTP), requests with a session cookie.

use shortlink_e2e::{http, Browser, Response, Stack};

pub const PASSWORD: &str = "correct horse battery";

pub fn add_user(s: &Stack, name: &str, password: &str) {
    user_cmd(s, "add", name, password);
}

/// `shortlinkd user add|passwd NAME` with the password on stdin.
pub fn user_cmd(s: &Stack, cmd: &str, name: &str, password: &str) {
    use std::io::Write;
    let mut child = s
        .daemon
        .cli(&["user", cmd, name])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(format!("{password}\n").as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "user {cmd}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

pub fn admin_url(s: &Stack, path: &str) -> String {
    format!("http://127.0.0.1:{}{path}", s.nginx.port)
}

pub fn sign_in(b: &mut Browser, s: &Stack, name: &str, password: &str) {
    b.goto(&admin_url(s, "/admin/login"), "login");
    b.fill("#f-name", name);
    b.fill("#f-password", password);
    b.click("#login button[type=submit]", "after-sign-in");
}

/// A request through nginx with the browser's session cookie.
pub fn with_session(s: &Stack, method: &str, path: &str, session: &str, body: &str) -> Response {
    let cookie = format!("shortlink_session={session}");
    let mut headers = vec![("Cookie", cookie.as_str())];
    if !body.is_empty() {
        headers.push(("Content-Type", "application/x-www-form-urlencoded"));
    }
    http(
        s.nginx.port,
        method.as_bytes(),
        path.as_bytes(),
        &headers,
        body.as_bytes(),
    )
}

/// The sign-in form's token, from the page and its cookie.
pub fn login_form(s: &Stack) -> (String, String) {
    let r = http(s.nginx.port, b"GET", b"/admin/login", &[], b"");
    assert_eq!(r.status, 200);
    let cookie = r.header("Set-Cookie").unwrap().to_string();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    assert!(!cookie.contains("Secure"), "plain http: {cookie}");
    let token = cookie
        .split(';')
        .next()
        .unwrap()
        .trim_start_matches("shortlink_login=")
        .to_string();
    assert!(r.body_text().contains(&format!("value=\"{token}\"")));
    (format!("shortlink_login={token}"), token)
}

pub fn post_login(s: &Stack, cookie: &str, body: &str, headers: &[(&str, &str)]) -> Response {
    let mut h = vec![
        ("Cookie", cookie),
        ("Content-Type", "application/x-www-form-urlencoded"),
    ];
    h.extend_from_slice(headers);
    http(s.nginx.port, b"POST", b"/admin/login", &h, body.as_bytes())
}
