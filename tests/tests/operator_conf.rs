//! The conf/ snippets as an operator copies them (paths and ports
//! substituted), and domain rotation by editing nginx config alone.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use shortlink_e2e::{http, main_context, root, Daemon, Nginx, Scratch};

/// Builds nginx.conf from conf/nginx/*.conf for `domains`, plus a default
/// "main site" server on the same port.
fn operator_conf(
    scratch: &Scratch,
    daemon: &Daemon,
    key: &std::path::Path,
    port: u16,
    domains: &str,
) -> String {
    let subst = |text: String| {
        text.replace("/etc/shortlinkd/key", &key.display().to_string())
            .replace(
                "unix:/run/shortlinkd/ipc.sock",
                &format!("unix:{}", daemon.ipc.display()),
            )
            .replace(
                "unix:/run/shortlinkd/api.sock",
                &format!("unix:{}", scratch.path("api.sock").display()),
            )
            .replace("/var/spool/shortlinkd", &daemon.spool.display().to_string())
            .replace(
                "/var/log/nginx/",
                &format!("{}/logs/", scratch.dir.display()),
            )
            .replace(
                "/etc/nginx/snippets/shortlink-api-errors.conf",
                &root()
                    .join("conf/nginx/shortlink-api-errors.conf")
                    .display()
                    .to_string(),
            )
            .replace("listen       80;", &format!("listen 127.0.0.1:{port};"))
            .replace("s.example.com s.example.net", domains)
    };
    let read = |name: &str| std::fs::read_to_string(root().join("conf/nginx").join(name)).unwrap();
    std::fs::write(
        scratch.path("shortlink-http.conf"),
        subst(read("shortlink-http.conf")),
    )
    .unwrap();
    std::fs::write(
        scratch.path("short-domains.conf"),
        subst(read("short-domains.conf")),
    )
    .unwrap();
    format!(
        "{main}http {{\n    access_log off;\n    include {dir}/shortlink-http.conf;\n    include {dir}/short-domains.conf;\n    \
         server {{ listen 127.0.0.1:{port} default_server; location / {{ return 404 \"main site\\n\"; }} }}\n}}\n",
        main = main_context(&scratch.dir, 2),
        dir = scratch.dir.display(),
    )
}

fn get(port: u16, host: &str, path: &str) -> shortlink_e2e::Response {
    http(port, b"GET", path.as_bytes(), &[("Host", host)], b"")
}

fn create(port: u16, host: &str, key: &str, url: &str) -> serde_json::Value {
    let body = json!({ "url": url }).to_string();
    let r = http(
        port,
        b"POST",
        b"/api/v1/links",
        &[
            ("Host", host),
            ("X-Api-Key", key),
            ("Content-Type", "application/json"),
        ],
        body.as_bytes(),
    );
    assert_eq!(r.status, 201, "{}", r.body_text());
    serde_json::from_slice(&r.body).unwrap()
}

#[test]
fn shipped_snippets_serve_links_api_metrics_and_limit_floods() {
    let scratch = Scratch::new("operator-conf");
    let (key, _) = scratch.key();
    // conf/shortlinkd.toml as shipped, its paths moved into the test's
    // directory and its socket group (www-data) the test's own: nogroup
    // from the command line as root, the user's own group otherwise.
    let toml = std::fs::read_to_string(root().join("conf/shortlinkd.toml"))
        .unwrap()
        .replace(
            "/var/lib/shortlinkd",
            &scratch.path("data").display().to_string(),
        )
        .replace(
            "/var/spool/shortlinkd",
            &scratch.path("spool").display().to_string(),
        )
        .replace("/etc/shortlinkd/key", &key.display().to_string())
        .replace("/run/shortlinkd", &scratch.dir.display().to_string())
        .replace("socket_group = \"www-data\"", "");
    std::fs::write(scratch.path("shortlinkd.toml"), toml).unwrap();
    let daemon = Daemon::start_with_config(&scratch, &key, Some(scratch.path("shortlinkd.toml")));
    let port = shortlink_e2e::free_port();
    let conf = operator_conf(&scratch, &daemon, &key, port, "s.example.com s.example.net");
    let nginx = Nginx::start_with(&scratch, port, &conf);

    let link = create(
        port,
        "s.example.com",
        &daemon.api_key,
        "https://example.org/from-conf",
    );
    let code = link["code"].as_str().unwrap();
    assert_eq!(link["short_url"], format!("http://s.example.com/{code}"));
    for host in ["s.example.com", "s.example.net"] {
        let r = get(port, host, &format!("/{code}"));
        assert_eq!(
            (r.status, r.header("Location")),
            (302, Some("https://example.org/from-conf"))
        );
        assert_eq!(r.header("Cache-Control"), Some("private, max-age=90"));
    }
    // Other hosts reach the main site, not the short links.
    assert_eq!(
        get(port, "www.example.com", &format!("/{code}")).body_text(),
        "main site\n"
    );

    // Unknown codes go to the fallback; a flood of them is refused with 429.
    let r = get(port, "s.example.com", "/not.a.code");
    assert_eq!(
        (r.status, r.header("Location")),
        (302, Some("https://example.com/"))
    );
    let statuses: Vec<u16> = (0..60)
        .map(|i| get(port, "s.example.com", &format!("/junk.{i}")).status)
        .collect();
    assert!(statuses.contains(&429), "{statuses:?}");
    // Real links are not limited by the flood.
    assert_eq!(get(port, "s.example.com", &format!("/{code}")).status, 302);

    let r = http(
        port,
        b"GET",
        b"/metrics",
        &[("Host", "s.example.com"), ("X-Api-Key", &daemon.api_key)],
        b"",
    );
    assert_eq!(r.status, 200, "{}", r.body_text());
    assert!(r.body_text().contains("shortlinkd_ipc_lookups_total"));

    let access = std::fs::read_to_string(scratch.path("logs/shortlink.log")).unwrap();
    assert!(access.contains(&format!("code={code} ")), "{access}");
    assert!(
        access.contains("cache=HIT") && access.contains("cache=INVALID"),
        "{access}"
    );

    // Errors nginx makes in front of the API are JSON with a stable code.
    let r = http(
        port,
        b"POST",
        b"/api/v1/links/batch",
        &[
            ("Host", "s.example.com"),
            ("X-Api-Key", &daemon.api_key),
            ("Content-Type", "application/json"),
            ("Content-Length", "40000000"),
        ],
        b"",
    );
    assert_json_error(&r, 413, "body_too_large");
    // The admin UI's CSV upload may be larger than nginx's 1 MiB default:
    // a 2 MiB upload reaches the daemon (which wants a session), not 413.
    let upload = vec![b'a'; 2 << 20];
    let r = http(
        port,
        b"POST",
        b"/admin/csv",
        &[
            ("Host", "s.example.com"),
            ("Content-Type", "multipart/form-data; boundary=x"),
        ],
        &upload,
    );
    assert_ne!(r.status, 413, "{}", r.body_text());
    assert!(
        [303, 401, 403].contains(&r.status),
        "the daemon answers: {} {}",
        r.status,
        r.body_text()
    );
    let mut daemon = daemon;
    daemon.kill();
    let r = get(port, "s.example.com", "/api/v1/health");
    assert_json_error(&r, 503, "daemon_unavailable");
    assert_eq!(r.header("Retry-After"), Some("5"));
    // Cached short links keep redirecting while the daemon is down.
    assert_eq!(get(port, "s.example.com", &format!("/{code}")).status, 302);
    nginx.assert_clean_log();
}

/// Methods the API does not take, TRACE included (which nginx refuses
/// itself before any location): the API's problem document with `Allow`.
/// A short link still answers its own 405 with `Allow: GET, HEAD`.
#[test]
fn undeclared_methods_on_the_api_answer_json_with_allow() {
    let scratch = Scratch::new("api-methods");
    let (key, _) = scratch.key();
    let daemon = Daemon::start(&scratch, &key);
    let port = shortlink_e2e::free_port();
    let conf = operator_conf(&scratch, &daemon, &key, port, "s.example.com");
    let nginx = Nginx::start_with(&scratch, port, &conf);
    let host = [("Host", "s.example.com")];

    for path in ["/api/v1/links", "/api/v1/health", "/api/v1/no-such-route"] {
        let r = http(port, b"TRACE", path.as_bytes(), &host, b"");
        assert_json_error(&r, 405, "method_not_allowed");
        let allow = r
            .header("Allow")
            .unwrap_or_else(|| panic!("no Allow on TRACE {path}"));
        assert!(allow.contains("GET") && allow.contains("POST"), "{allow}");
        assert!(!allow.contains("TRACE"), "{allow}");
        assert!(
            r.body_text().contains("TRACE is not allowed"),
            "{}",
            r.body_text()
        );
    }
    // A method nginx passes on: the daemon's answer, its route's methods.
    let r = http(port, b"PROPFIND", b"/api/v1/links", &host, b"");
    assert_json_error(&r, 405, "method_not_allowed");
    let allow = r.header("Allow").unwrap_or_default();
    assert!(allow.contains("GET") && allow.contains("POST"), "{allow}");

    let link = create(
        port,
        "s.example.com",
        &daemon.api_key,
        "https://example.org/m",
    );
    let code = link["code"].as_str().unwrap();
    for method in [&b"DELETE"[..], b"TRACE"] {
        let r = http(port, method, format!("/{code}").as_bytes(), &host, b"");
        assert_eq!(r.status, 405, "{}", r.body_text());
        assert_ne!(r.header("Content-Type"), Some("application/problem+json"));
        if method == b"DELETE" {
            assert_eq!(r.header("Allow"), Some("GET, HEAD"));
        }
    }
    assert_eq!(get(port, "s.example.com", &format!("/{code}")).status, 302);
    nginx.assert_clean_log();
}

fn assert_json_error(r: &shortlink_e2e::Response, status: u16, code: &str) {
    assert_eq!(r.status, status, "{}", r.body_text());
    assert_eq!(r.header("Content-Type"), Some("application/problem+json"));
    let v: serde_json::Value = serde_json::from_slice(&r.body)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", r.body_text()));
    assert_eq!(v["error"]["code"], code, "{v}");
    // The problem document the daemon's own errors are.
    assert_eq!(v["code"], code, "{v}");
    assert_eq!(v["status"], status, "{v}");
    assert_eq!(
        v["type"].as_str(),
        Some(format!("https://shortlink.dev/errors/{code}").as_str())
    );
    assert!(v["title"].as_str().is_some_and(|t| !t.is_empty()), "{v}");
    assert!(v["error"]["message"]
        .as_str()
        .is_some_and(|m| !m.is_empty()));
}

#[test]
fn domain_rotation_is_an_nginx_reload_and_loses_no_request() {
    let scratch = Scratch::new("rotation");
    let (key, _) = scratch.key();
    let daemon = Daemon::start(&scratch, &key);
    let daemon_pid = daemon.pid();
    let port = shortlink_e2e::free_port();
    let nginx = Nginx::start_with(
        &scratch,
        port,
        &operator_conf(&scratch, &daemon, &key, port, "a.test"),
    );

    let link = create(
        port,
        "a.test",
        &daemon.api_key,
        "https://example.org/rotate",
    );
    let code = link["code"].as_str().unwrap().to_string();
    assert_eq!(link["short_url"], format!("http://a.test/{code}"));
    assert_eq!(get(port, "a.test", &format!("/{code}")).status, 302);

    // Hammers `host` with the code while a reload happens; counts failures.
    let during_reload = |host: &'static str, domains: &str| {
        let stop = Arc::new(AtomicBool::new(false));
        let failures = Arc::new(AtomicU64::new(0));
        let total = Arc::new(AtomicU64::new(0));
        let workers: Vec<_> = (0..2)
            .map(|_| {
                let (stop, failures, total, path) = (
                    stop.clone(),
                    failures.clone(),
                    total.clone(),
                    format!("/{code}"),
                );
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        let r = std::panic::catch_unwind(|| get(port, host, &path).status);
                        total.fetch_add(1, Ordering::Relaxed);
                        if r.map_or(true, |s| s != 302) {
                            failures.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(100));
        nginx.reload(&operator_conf(&scratch, &daemon, &key, port, domains));
        std::thread::sleep(Duration::from_millis(300));
        stop.store(true, Ordering::Relaxed);
        for w in workers {
            w.join().unwrap();
        }
        (
            failures.load(Ordering::Relaxed),
            total.load(Ordering::Relaxed),
        )
    };

    // Add b.test while a.test keeps working, then drop a.test while b.test works.
    let (failed, total) = during_reload("a.test", "a.test b.test");
    assert_eq!(
        failed, 0,
        "{failed} of {total} requests to a.test failed during the reload"
    );
    assert!(total > 20);
    let (failed, total) = during_reload("b.test", "b.test");
    assert_eq!(
        failed, 0,
        "{failed} of {total} requests to b.test failed during the reload"
    );

    let r = get(port, "b.test", &format!("/{code}"));
    assert_eq!(
        (r.status, r.header("Location")),
        (302, Some("https://example.org/rotate"))
    );
    assert_eq!(
        get(port, "a.test", &format!("/{code}")).body_text(),
        "main site\n"
    );
    let again = create(port, "b.test", &daemon.api_key, "https://example.org/after");
    assert!(
        again["short_url"]
            .as_str()
            .unwrap()
            .starts_with("http://b.test/"),
        "{again}"
    );
    assert_eq!(daemon.pid(), daemon_pid, "the daemon was not restarted");
    nginx.assert_clean_log();
}
