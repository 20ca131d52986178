//! The edge check: codes are validated inside nginx with no I/O; invalid ones
//! get 404, valid ones expose `$shortlink_code` and `$shortlink_id`.

use shortlink_core::{Codec, DeploymentKey};
use shortlink_e2e::{main_context, nginx_test_config, Nginx, Scratch};

/// A server whose valid codes fall through to a static file, with the
/// module's variables echoed in headers.
fn edge(scratch: &Scratch, key: &std::path::Path) -> Nginx {
    std::fs::create_dir_all(scratch.path("html")).unwrap();
    std::fs::write(scratch.path("html/passed.txt"), "passed\n").unwrap();
    Nginx::start(
        scratch,
        1,
        &format!(
            r#"
    shortlink_key_file {key};
    server {{
        listen 127.0.0.1:{{port}};
        root html;
        add_header X-Shortlink-Id $shortlink_id always;
        add_header X-Shortlink-Code $shortlink_code always;
        add_header X-Shortlink-Status $shortlink_cache_status always;
        location / {{
            shortlink on;
            try_files /passed.txt =500;
        }}
        location /s/ {{
            shortlink on;
            try_files /passed.txt =500;
        }}
        location /plain/ {{
            try_files /passed.txt =500;
        }}
    }}"#,
            key = key.display()
        ),
    )
}

#[test]
fn valid_codes_pass_with_their_id() {
    let scratch = Scratch::new("valid");
    let (key, codec) = scratch.key();
    let nginx = edge(&scratch, &key);
    for len in [2usize, 3, 7, 9, 12] {
        let id = Codec::first_id_of_length(len) + 17;
        let code = codec.encode(id);
        let r = nginx.get(format!("/{code}").as_bytes());
        assert_eq!(r.status, 200, "code {code}");
        assert_eq!(r.body_text(), "passed\n");
        assert_eq!(r.header("X-Shortlink-Id"), Some(id.to_string().as_str()));
        assert_eq!(r.header("X-Shortlink-Code"), Some(code.as_str()));
    }
    nginx.assert_clean_log();
}

#[test]
fn location_prefix_and_query_string_do_not_change_the_code() {
    let scratch = Scratch::new("prefix");
    let (key, codec) = scratch.key();
    let nginx = edge(&scratch, &key);
    let id = 987_654;
    let code = codec.encode(id);
    for target in [
        format!("/s/{code}"),
        format!("/s/{code}?utm_source=sms&x=1"),
        format!("/{code}?"),
    ] {
        let r = nginx.get(target.as_bytes());
        assert_eq!(r.status, 200, "{target}");
        assert_eq!(r.header("X-Shortlink-Id"), Some("987654"), "{target}");
    }
    // A location without `shortlink on` is untouched, and sets nothing.
    let r = nginx.get(b"/plain/not-a-code");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("X-Shortlink-Id"), None);
    nginx.assert_clean_log();
}

#[test]
fn invalid_codes_get_404() {
    let scratch = Scratch::new("invalid");
    let (key, codec) = scratch.key();
    let nginx = edge(&scratch, &key);
    let code = codec.encode(123_456_789);
    let mut wrong_check = code.as_bytes().to_vec();
    let last = wrong_check.len() - 1;
    // Some other character fails the checksum.
    let bad = (b'0'..=b'z')
        .filter(|c| c.is_ascii_alphanumeric())
        .find(|&c| {
            wrong_check[last] = c;
            codec.decode(&wrong_check).is_err()
        })
        .unwrap();
    wrong_check[last] = bad;

    // Codes of another deployment (the harness's key is fixed).
    let other = Codec::new(&DeploymentKey::from_bytes([0x5a; 32]));
    let foreign: Vec<String> = (0..200u64)
        .map(|i| other.encode(5_000_000 + i).to_string())
        .filter(|c| codec.decode(c.as_bytes()).is_err())
        .collect();
    assert!(foreign.len() > 150);

    let mut targets: Vec<Vec<u8>> = vec![
        [b"/".as_slice(), &wrong_check].concat(),
        format!("/{}-", &code[..code.len() - 1]).into_bytes(),
        format!("/{}", &code.replace(|_: char| true, "_")).into_bytes(),
        b"/abcdefghijklm".to_vec(),
        b"/".to_vec(),
        b"/%41%42%2F%00".to_vec(),
        b"/%ff%fe%fd".to_vec(),
        b"/%2e%2e%2fetc".to_vec(),
        b"/ab\xc3\xa9cd".to_vec(),
        b"/\xff\xfe\x80abc".to_vec(),
        format!("/{code}/").into_bytes(),
    ];
    targets.extend(
        foreign
            .iter()
            .take(20)
            .map(|c| format!("/{c}").into_bytes()),
    );
    for target in &targets {
        let r = nginx.get(target);
        // nginx itself refuses some byte sequences with 400 before any
        // module runs; everything else is ours to refuse with 404.
        assert!(
            r.status == 404 || (r.status == 400 && target.contains(&b'%')),
            "{:?} got {}",
            String::from_utf8_lossy(target),
            r.status
        );
        assert_eq!(r.header("X-Shortlink-Id"), None);
        if r.status == 404 {
            assert_eq!(
                r.header("X-Shortlink-Status"),
                Some("INVALID"),
                "{:?}",
                String::from_utf8_lossy(target)
            );
        }
    }
    nginx.assert_clean_log();
}

#[test]
fn config_errors_stop_nginx_t_with_emerg() {
    let scratch = Scratch::new("conf");
    let (key, _) = scratch.key();
    std::fs::write(scratch.path("short.key"), "abcd\n").unwrap();
    let main = main_context(&scratch.dir, 1);
    let conf = |http: &str| format!("{main}http {{\n{http}\n}}\n");
    let server = "server { listen 127.0.0.1:1; location / { shortlink on; } }";

    let (ok, out) = nginx_test_config(
        &scratch,
        &conf(&format!("shortlink_key_file {};\n{server}", key.display())),
    );
    assert!(ok, "{out}");

    let cases = [
        (
            format!("shortlink_key_file {}/missing.key;\n{server}", scratch.dir.display()),
            vec!["[emerg]", "\"shortlink_key_file\"", "missing.key", "No such file", "nginx-t.conf:"],
        ),
        (
            format!("shortlink_key_file {}/short.key;\n{server}", scratch.dir.display()),
            vec!["[emerg]", "\"shortlink_key_file\"", "64 hex characters", "found 4 characters"],
        ),
        (
            server.to_string(),
            vec!["[emerg]", "\"shortlink on\"", "needs \"shortlink_key_file\""],
        ),
        (
            format!(
                "shortlink_key_file {};\nserver {{ listen 127.0.0.1:1; location / {{ shortlink maybe; }} }}",
                key.display()
            ),
            vec!["[emerg]", "\"shortlink\"", "\"on\" or \"off\"", "maybe"],
        ),
        (
            format!("shortlink_key_file {0};\nshortlink_key_file {0};\n{server}", key.display()),
            vec!["[emerg]", "\"shortlink_key_file\" is duplicate"],
        ),
        (
            format!("shortlink_key_file {};\nshortlink_zone zone=links:10k;\n{server}", key.display()),
            vec!["[emerg]", "\"shortlink_zone\"", "too small"],
        ),
        (
            format!("shortlink_key_file {};\nshortlink_zone zone=links:1m ttl=soon;\n{server}", key.display()),
            vec!["[emerg]", "\"shortlink_zone\"", "invalid time", "ttl=soon"],
        ),
        (
            format!("shortlink_key_file {};\nshortlink_zone links:1m;\n{server}", key.display()),
            vec!["[emerg]", "\"shortlink_zone\"", "unknown parameter"],
        ),
        (
            format!("shortlink_key_file {};\nshortlink_pass 127.0.0.1:9000;\n{server}", key.display()),
            vec!["[emerg]", "\"shortlink_pass\"", "unix:/absolute/path"],
        ),
        (
            format!("shortlink_key_file {};\nshortlink_timeout forever;\n{server}", key.display()),
            vec!["[emerg]", "\"shortlink_timeout\"", "invalid value"],
        ),
        (
            "shortlink_pass unix:/run/x.sock;\nserver { listen 127.0.0.1:1; }".to_string(),
            vec!["[emerg]", "need \"shortlink_key_file\""],
        ),
        (
            format!(
                "shortlink_key_file {};\nserver {{ listen 127.0.0.1:1; location / {{ shortlink on; shortlink_redirect 303; }} }}",
                key.display()
            ),
            vec!["[emerg]", "\"shortlink_redirect\"", "301, 302, 307 or 308", "303"],
        ),
        (
            format!(
                "shortlink_key_file {};\nserver {{ listen 127.0.0.1:1; location / {{ shortlink on; shortlink_fallback javascript:alert(1); }} }}",
                key.display()
            ),
            vec!["[emerg]", "\"shortlink_fallback\"", "scheme"],
        ),
    ];
    for (http, expected) in cases {
        let (ok, out) = nginx_test_config(&scratch, &conf(&http));
        assert!(!ok, "nginx -t accepted:\n{http}");
        for e in expected {
            assert!(out.contains(e), "expected {e:?} in:\n{out}");
        }
    }
}
