//! Password-protected links against the real nginx and daemon: the form
//! (escaped, never cached, a strict CSP, no target), a wrong password (the
//! form again, no click), the right one (a 303 to the target, one click,
//! the signed cookie scoped to the link's path), later visits let through
//! by the cookie at the edge with no daemon at all, and tampered or
//! foreign cookies refused. The browser half is in `password_browser.rs`.

use std::time::{Duration, Instant};

use serde_json::json;
use shortlink_e2e::{eventually, Response, Stack};

const FORM: (&str, &str) = ("Content-Type", "application/x-www-form-urlencoded");

fn stack(name: &str) -> Stack {
    Stack::start_edited(name, 2, "2s", |http| {
        http.replace(
            "        location / {\n            shortlink on;\n",
            "        location / {\n            shortlink on;\n            shortlink_preview_suffix +;\n            shortlink_password_cookie_ttl 10m;\n",
        )
    })
}

fn post(s: &Stack, path: &str, body: &str, headers: &[(&str, &str)]) -> Response {
    let mut h = vec![FORM];
    h.extend_from_slice(headers);
    s.nginx
        .request(b"POST", path.as_bytes(), &h, body.as_bytes())
}

fn is_form(r: &Response) -> bool {
    r.status == 200 && r.body_text().contains("<form method=\"post\">")
}

/// The clicks of `code` once they have settled (the edge flushes every 100 ms).
fn settled_clicks(s: &Stack, code: &str, expect: u64) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let n = s.daemon.clicks(code);
        if n >= expect || Instant::now() > deadline {
            std::thread::sleep(Duration::from_millis(400));
            return s.daemon.clicks(code);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_protected_link_asks_checks_counts_once_and_remembers_the_visitor() {
    let mut s = stack("password");
    let code = s.daemon.create(
        json!({"url": "https://example.com/secret-place", "alias": "vault", "password": "open sesame"}),
    );
    let other = s.daemon.create(
        json!({"url": "https://example.com/other", "alias": "other-vault", "password": "other pw"}),
    );
    let open = s
        .daemon
        .create(json!({"url": "https://example.com/open", "alias": "open-door"}));

    // The form, not the redirect: nothing about the target, never cached.
    let r = s.get(&code, &[]);
    assert!(is_form(&r), "{} {}", r.status, r.body_text());
    assert!(!r.body_text().contains("secret-place"), "{}", r.body_text());
    assert_eq!(r.header("Location"), None);
    assert_eq!(r.header("Cache-Control"), Some("no-store"));
    let csp = r.header("Content-Security-Policy").unwrap_or_default();
    assert!(
        csp.contains("default-src 'none'") && csp.contains("form-action 'self'"),
        "{csp}"
    );
    // The preview says nothing either.
    let r = s.get(&format!("{code}+"), &[]);
    assert_eq!(r.status, 200);
    assert!(!r.body_text().contains("secret-place"), "{}", r.body_text());
    assert!(r.body_text().contains("protected"));

    // A wrong password: the form again with a message; no cookie, no click.
    let r = post(&s, &format!("/{code}"), "password=guess", &[]);
    assert!(is_form(&r), "{} {}", r.status, r.body_text());
    assert!(
        r.body_text().contains("Wrong password"),
        "{}",
        r.body_text()
    );
    assert_eq!(r.header("Set-Cookie"), None);
    let r = post(&s, &format!("/{code}"), "nothing=here", &[]);
    assert!(
        r.body_text().contains("Enter the password"),
        "{}",
        r.body_text()
    );
    assert_eq!(
        settled_clicks(&s, &code, 0),
        0,
        "a wrong password counted a click"
    );

    // The right one: 303 to the target, the cookie, one click.
    let r = post(&s, &format!("/{code}"), "password=open+sesame", &[]);
    assert_eq!(r.status, 303, "{}", r.body_text());
    assert_eq!(
        r.header("Location"),
        Some("https://example.com/secret-place")
    );
    let set = r.header("Set-Cookie").expect("a cookie").to_string();
    assert!(set.starts_with("shortlink_pw=vault."), "{set}");
    for attr in ["Path=/vault", "Max-Age=600", "HttpOnly", "SameSite=Lax"] {
        assert!(set.contains(attr), "{attr} missing: {set}");
    }
    assert!(!set.contains("Secure"), "plain http: {set}");
    assert_eq!(settled_clicks(&s, &code, 1), 1, "exactly one click");
    let cookie = set.split(';').next().unwrap().to_string();

    // With the cookie, the redirect at once, each visit a click.
    let r = s.get(&code, &[("Cookie", &format!("a=b; {cookie}"))]);
    assert_eq!(r.status, 302, "{}", r.body_text());
    assert_eq!(
        r.header("Location"),
        Some("https://example.com/secret-place")
    );
    assert_eq!(settled_clicks(&s, &code, 2), 2);

    // Tampered, or another link's cookie: the form.
    let mut tampered = cookie.clone();
    let last = tampered.pop().unwrap();
    tampered.push(if last == '0' { '1' } else { '0' });
    assert!(is_form(&s.get(&code, &[("Cookie", &tampered)])));
    let mut parts: Vec<String> = cookie.split('.').map(str::to_string).collect();
    parts[2].push('0');
    let longer = parts.join(".");
    assert!(is_form(&s.get(&code, &[("Cookie", &longer)])));
    assert!(is_form(&s.get(&other, &[("Cookie", &cookie)])));
    // A form posted to a link with no password is not allowed.
    assert_eq!(post(&s, &format!("/{open}"), "password=x", &[]).status, 405);
    assert_eq!(s.get(&open, &[]).status, 302);

    // The daemon gone: the cookie still lets the visitor through (checked
    // at the edge, no I/O); without it the form; a post cannot be checked.
    s.daemon.kill();
    for _ in 0..4 {
        let r = s.get(&code, &[("Cookie", &cookie)]);
        assert_eq!(r.status, 302, "{}", r.body_text());
        assert_eq!(
            r.header("Location"),
            Some("https://example.com/secret-place")
        );
    }
    assert!(is_form(&s.get(&code, &[])));
    assert_eq!(
        post(&s, &format!("/{code}"), "password=open+sesame", &[]).status,
        503
    );
}

/// The cookie given for a password: `shortlink_pw` and its value.
fn granted_cookie(s: &Stack, code: &str, password: &str) -> String {
    let r = post(s, &format!("/{code}"), &format!("password={password}"), &[]);
    assert_eq!(r.status, 303, "{}", r.body_text());
    let set = r.header("Set-Cookie").expect("a cookie");
    set.split(';').next().unwrap().to_string()
}

/// A cookie opens the link it was given for, with the password it was
/// given for: not after the password changes (even to the same words),
/// and not a new protected link that takes the alias over, though that
/// link's password is the same.
#[test]
fn a_cookie_outlives_neither_its_password_nor_its_alias() {
    let s = stack("password-rebind");
    let code = s.daemon.create(
        json!({"url": "https://example.com/first", "alias": "keep", "password": "same words"}),
    );
    // A new alias reaches the workers as an event after the reply.
    assert!(eventually(Duration::from_secs(5), || is_form(
        &s.get(&code, &[])
    )));
    let cookie = granted_cookie(&s, &code, "same+words");
    let with = |c: &str| s.get(&code, &[("Cookie", c)]);
    assert_eq!(with(&cookie).status, 302, "the cookie opens the link");

    let r = s.daemon.api(
        "PATCH",
        "/api/v1/links/keep",
        Some(&json!({"password": "same words"})),
    );
    assert_eq!(r.status, 200, "{}", r.body_text());
    // The change reaches the workers as an event after the reply.
    assert!(
        eventually(Duration::from_secs(5), || is_form(&with(&cookie))),
        "a new password: the old cookie is spent"
    );
    let cookie = granted_cookie(&s, &code, "same+words");
    assert_eq!(with(&cookie).status, 302);

    let r = s.daemon.api("DELETE", "/api/v1/links/keep", None);
    assert_eq!(r.status, 204, "{}", r.body_text());
    let again = s.daemon.create(
        json!({"url": "https://example.com/someone-else", "alias": "keep", "password": "same words"}),
    );
    assert_eq!(again, code);
    assert!(
        eventually(Duration::from_secs(5), || is_form(&with(&cookie))),
        "another link under the alias: {:?}",
        with(&cookie).header("Location")
    );
    s.nginx.assert_clean_log();
}

#[test]
fn a_big_form_body_is_refused_before_it_is_read() {
    let s = stack("password-big");
    let code = s
        .daemon
        .create(json!({"url": "https://example.com/x", "password": "pw"}));
    let body = format!("password={}", "a".repeat(8000));
    let r = post(&s, &format!("/{code}"), &body, &[]);
    assert_eq!(r.status, 413, "{}", r.body_text());
    s.nginx.assert_clean_log();
}

#[test]
fn wrong_passwords_are_throttled_per_client_address() {
    let s = stack("password-throttle");
    let code = s
        .daemon
        .create(json!({"url": "https://example.com/t", "password": "right one"}));
    let from = |ip: [u8; 4], body: &str| {
        shortlink_e2e::http_from(
            std::net::Ipv4Addr::from(ip),
            s.nginx.port,
            b"POST",
            format!("/{code}").as_bytes(),
            &[FORM],
            body.as_bytes(),
        )
    };
    for i in 0..5 {
        let r = from([127, 0, 0, 2], "password=wrong");
        assert!(
            r.body_text().contains("Wrong password"),
            "try {i}: {}",
            r.body_text()
        );
    }
    // The sixth from that address is not checked, not even the right one.
    let r = from([127, 0, 0, 2], "password=right+one");
    assert_eq!(r.status, 429, "{}", r.body_text());
    assert!(r
        .header("Retry-After")
        .is_some_and(|v| v.parse::<u32>().is_ok_and(|n| n >= 1)));
    assert!(r.body_text().contains("Too many wrong passwords"));
    // Another address is not locked out.
    let r = from([127, 0, 0, 3], "password=right+one");
    assert_eq!(r.status, 303, "{}", r.body_text());
    assert_eq!(settled_clicks(&s, &code, 1), 1);
}

#[test]
fn over_https_the_cookie_is_secure() {
    let scratch_port = shortlink_e2e::free_port();
    let dir = tempfile_dir();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let ok = std::process::Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
        ])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("openssl");
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let s = Stack::start_edited("password-https", 1, "2s", |http| {
        format!(
            "{http}\n    server {{\n        listen 127.0.0.1:{scratch_port} ssl;\n        ssl_certificate {};\n        ssl_certificate_key {};\n        location / {{\n            shortlink on;\n        }}\n    }}",
            cert.display(),
            key.display()
        )
    });
    let code = s
        .daemon
        .create(json!({"url": "https://example.com/tls", "password": "over tls"}));
    let out = std::process::Command::new("curl")
        .args([
            "-k",
            "-s",
            "-o",
            "/dev/null",
            "-D",
            "-",
            "--data",
            "password=over+tls",
        ])
        .arg(format!("https://127.0.0.1:{scratch_port}/{code}"))
        .output()
        .expect("curl");
    let head = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(head.starts_with("HTTP/1.1 303"), "{head}");
    let set = head
        .lines()
        .find(|l| l.to_ascii_lowercase().starts_with("set-cookie:"))
        .unwrap_or_else(|| panic!("no cookie: {head}"));
    assert!(set.trim_end().ends_with("; Secure"), "{set}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A fresh directory for the test's certificate.
fn tempfile_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("shortlink-pw-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
