//! What `--help` says: each command lists the daemon flags it uses, not
//! every setting of `serve`, and what it says about links is what the edge
//! does.

mod common;

use common::{stderr, stdout, BIN};

/// `shortlinkd ARGS... --help`, its text.
fn help(args: &[&str]) -> String {
    let out = std::process::Command::new(BIN)
        .args(args)
        .arg("--help")
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
}

/// The `--long` flags a help text lists (lines such as `  -n, --limit <N>`).
fn flags(help: &str) -> Vec<String> {
    help.lines()
        .filter(|l| l.trim_start().starts_with('-'))
        .filter_map(|l| l.split_whitespace().find_map(|w| w.strip_prefix("--")))
        .map(|f| {
            f.trim_end_matches(',')
                .split(['=', '['])
                .next()
                .unwrap()
                .to_string()
        })
        .collect()
}

#[test]
fn each_command_lists_the_daemon_flags_it_uses() {
    let serve = flags(&help(&["serve"]));
    for flag in [
        "data-dir",
        "ipc-socket",
        "socket-group",
        "check-interval",
        "log-json",
    ] {
        assert!(
            serve.iter().any(|f| f == flag),
            "serve lacks --{flag}: {serve:?}"
        );
    }
    let serve_only = [
        "ipc-socket",
        "api-listen",
        "socket-group",
        "check-interval",
        "cors-origins",
        "log-json",
    ];
    for args in [
        &["link", "create"][..],
        &["link", "disable"],
        &["key", "list"],
        &["stats"],
        &["backup"],
        &["restore"],
        &[],
    ] {
        let listed = flags(&help(args));
        assert!(
            listed.iter().any(|f| f == "data-dir"),
            "{args:?}: {listed:?}"
        );
        assert!(listed.iter().any(|f| f == "config"), "{args:?}: {listed:?}");
        for flag in serve_only {
            assert!(
                !listed.iter().any(|f| f == flag),
                "{args:?} lists --{flag}: {listed:?}"
            );
        }
        let text = help(args);
        assert!(text.contains("shortlinkd serve --help"), "{args:?}: {text}");
        let daemon_flags = listed.iter().filter(|f| serve.contains(f)).count();
        assert!(daemon_flags < serve.len() / 2, "{args:?}: {listed:?}");
    }
    // The admin commands run the API in-process without a daemon: the
    // link rules are theirs too.
    let create = flags(&help(&["link", "create"]));
    for flag in ["base-url", "min-length", "allow-hosts", "alias"] {
        assert!(
            create.iter().any(|f| f == flag),
            "link create lacks --{flag}"
        );
    }
}

#[test]
fn hidden_daemon_flags_still_work_after_any_command() {
    let dir = tempfile::tempdir().unwrap();
    shortlink_core::DeploymentKey::generate()
        .unwrap()
        .write_new(&dir.path().join("key"))
        .unwrap();
    let out = std::process::Command::new(BIN)
        .args(["key", "list", "--data-dir"])
        .arg(dir.path())
        .args(["--log-json", "--ipc-socket", "/nonexistent/ipc.sock"])
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn link_disable_says_what_the_edge_answers() {
    let text = help(&["link", "disable"]);
    assert!(text.contains("410"), "{text}");
    assert!(!text.contains("404"), "{text}");
}
