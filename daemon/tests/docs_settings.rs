//! The configuration reference (`docs/configuration.md`) against the code,
//! so neither drifts from the other: every daemon setting (its flag,
//! environment variable and file key, read from `Config` itself) and every
//! nginx directive and `$shortlink_*` variable (read from the module's
//! source) is documented there, with the context nginx accepts it in, and
//! nothing documented there is gone from the code. Each failure names what
//! is missing or stale.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use clap::{Args, Command};
use shortlinkd::config::Config;

/// The one daemon flag that is not a setting of `Config` (it names the
/// file the settings are read from; `cli::settings` declares it).
const CONFIG_FLAG: (&str, &str) = ("config", "SHORTLINKD_CONFIG");

/// The header of the settings tables in the reference.
const SETTINGS_HEADER: &str = "| flag | environment | file key | default | what |";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn reference() -> String {
    let path = repo().join("docs/configuration.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn fail_on(problems: Vec<String>) {
    assert!(
        problems.is_empty(),
        "docs/configuration.md is out of step with the code:\n  {}",
        problems.join("\n  ")
    );
}

/// The cells of a Markdown table row (`\|` inside a cell kept as `|`).
fn cells(row: &str) -> Vec<String> {
    let row = row.trim().trim_start_matches('|').trim_end_matches('|');
    row.replace("\\|", "\u{0}")
        .split('|')
        .map(|c| c.replace('\u{0}', "|").trim().to_string())
        .collect()
}

/// The body rows of every table whose header line is `header`.
fn table_rows(text: &str, header: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.trim() != header {
            continue;
        }
        lines.next(); // |---|---|
        for row in lines.by_ref() {
            if !row.trim_start().starts_with('|') {
                break;
            }
            rows.push(cells(row));
        }
    }
    rows
}

/// Words of `cell` that start with `prefix` and go on with `allowed`
/// characters (`--data-dir` in `--data-dir DIR`).
fn words(cell: &str, prefix: &str, allowed: fn(char) -> bool) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut rest = cell;
    while let Some(at) = rest.find(prefix) {
        let tail = &rest[at + prefix.len()..];
        let end = tail.find(|c| !allowed(c)).unwrap_or(tail.len());
        if end > 0 {
            found.insert(tail[..end].to_string());
        }
        rest = &tail[end..];
    }
    found
}

/// What `cell` holds in backticks.
fn quoted(cell: &str) -> BTreeSet<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// One documented row: its flags (without `--`), variables and file keys.
struct Row {
    flags: BTreeSet<String>,
    envs: BTreeSet<String>,
    keys: BTreeSet<String>,
}

fn documented_settings(text: &str) -> Vec<Row> {
    let flag_char = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-';
    let env_char = |c: char| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_';
    table_rows(text, SETTINGS_HEADER)
        .into_iter()
        .map(|c| Row {
            flags: words(&c[0], "--", flag_char),
            envs: words(&c[1], "SHORTLINKD_", env_char)
                .into_iter()
                .map(|e| format!("SHORTLINKD_{e}"))
                .collect(),
            keys: quoted(&c[2]),
        })
        .collect()
}

/// Every file key of `Config`, dotted for the tables (`targets.max_len`):
/// what serde writes for the defaults, `None`s included.
fn file_keys() -> BTreeSet<String> {
    fn walk(prefix: &str, value: &serde_json::Value, out: &mut BTreeSet<String>) {
        for (key, value) in value.as_object().expect("a table") {
            let path = format!("{prefix}{key}");
            if value.is_object() {
                walk(&format!("{path}."), value, out);
            } else {
                out.insert(path);
            }
        }
    }
    let mut keys = BTreeSet::new();
    walk(
        "",
        &serde_json::to_value(Config::default()).unwrap(),
        &mut keys,
    );
    keys
}

/// Every flag of `Config` with its environment variable and clap id.
fn flags() -> Vec<(String, String, String)> {
    let cmd = Config::augment_args_for_update(Command::new("shortlinkd"));
    let mut flags: Vec<_> = cmd
        .get_arguments()
        .filter_map(|a| {
            let long = a.get_long()?.to_string();
            let env = a
                .get_env()
                .unwrap_or_else(|| panic!("--{long} has no environment variable"))
                .to_string_lossy()
                .into_owned();
            Some((long, env, a.get_id().to_string()))
        })
        .collect();
    flags.push((CONFIG_FLAG.0.into(), CONFIG_FLAG.1.into(), String::new()));
    flags
}

#[test]
fn every_daemon_setting_is_documented_and_nothing_else() {
    let rows = documented_settings(&reference());
    assert!(
        !rows.is_empty(),
        "no table headed `{SETTINGS_HEADER}` in docs/configuration.md"
    );
    let flags = flags();
    let keys = file_keys();
    assert!(flags.len() > 30 && keys.len() > 40, "{flags:?} {keys:?}");
    let mut problems = Vec::new();

    for (long, env, id) in &flags {
        let Some(row) = rows.iter().find(|r| r.flags.contains(long)) else {
            problems.push(format!("flag --{long} ({env}) is not documented"));
            continue;
        };
        if !row.envs.contains(env) {
            problems.push(format!("--{long} is documented without {env} beside it"));
        }
        // A top-level setting's flag takes the field's name as its id.
        if keys.contains(id) && !row.keys.contains(id) {
            problems.push(format!(
                "--{long} is documented without its file key `{id}`"
            ));
        }
    }
    for key in &keys {
        if !rows.iter().any(|r| r.keys.contains(key)) {
            problems.push(format!("file key `{key}` is not documented"));
        }
    }

    let known_flags: BTreeSet<_> = flags.iter().map(|f| &f.0).collect();
    let known_envs: BTreeSet<_> = flags.iter().map(|f| &f.1).collect();
    for row in &rows {
        for flag in row.flags.iter().filter(|f| !known_flags.contains(f)) {
            problems.push(format!("--{flag} is documented but is no daemon flag"));
        }
        for env in row.envs.iter().filter(|e| !known_envs.contains(e)) {
            problems.push(format!("{env} is documented but is no daemon setting"));
        }
        for key in row.keys.iter().filter(|k| !keys.contains(*k)) {
            problems.push(format!("file key `{key}` is documented but is no setting"));
        }
    }
    fail_on(problems);
}

/// Every `.rs` file under `dir`, with its text.
fn sources(dir: &Path, out: &mut Vec<(PathBuf, String)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).unwrap();
            out.push((path, text));
        }
    }
}

/// What the module declares: directives with their contexts as the
/// reference writes them, and variables. A directive is an
/// `ngx_string!("name")` followed by its context flags (`MAIN`, `LOC`,
/// `ANY`: see `conf/mod.rs`); a variable, one in `variables.rs`.
fn module_names() -> (BTreeMap<String, &'static str>, BTreeSet<String>, usize) {
    let mut files = Vec::new();
    sources(&repo().join("nginx-module/src"), &mut files);
    let mut directives = BTreeMap::new();
    let mut variables = BTreeSet::new();
    let mut table_len = 0;
    for (path, text) in &files {
        if let Some(at) = text.find("[ngx_command_t; ") {
            let n = &text[at + "[ngx_command_t; ".len()..];
            let n = &n[..n.find(']').unwrap()];
            table_len = n.parse::<usize>().unwrap() - 1; // nginx's null command
        }
        let mut rest = text.as_str();
        while let Some(at) = rest.find("ngx_string!(\"") {
            let tail = &rest[at + "ngx_string!(\"".len()..];
            let end = tail.find('"').unwrap();
            let name = tail[..end].to_string();
            let after = tail[end + 1..].trim_start_matches([')', ',']).trim_start();
            let flag: String = after
                .chars()
                .take_while(|c| c.is_ascii_uppercase() || *c == '_')
                .collect();
            let context = match flag.as_str() {
                "MAIN" => Some("http"),
                "LOC" => Some("location"),
                "ANY" => Some("http, server, location"),
                _ => None,
            };
            if let Some(context) = context {
                directives.insert(name, context);
            } else if path.ends_with("variables.rs") {
                variables.insert(name);
            }
            rest = &tail[end..];
        }
    }
    (directives, variables, table_len)
}

/// The directives the reference describes (`#### \`name\``), each with
/// its `Context:` row.
fn documented_directives(text: &str) -> BTreeMap<String, Option<String>> {
    let mut found = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if let Some(name) = line
            .strip_prefix("#### `")
            .and_then(|l| l.strip_suffix('`'))
        {
            found.insert(name.to_string(), None);
            current = Some(name.to_string());
        } else if line.starts_with('#') {
            current = None;
        } else if let (Some(name), true) = (&current, line.starts_with("| Context: |")) {
            found.insert(name.clone(), Some(cells(line)[1].clone()));
        }
    }
    found
}

#[test]
fn every_nginx_directive_and_variable_is_documented_and_nothing_else() {
    let text = reference();
    let (directives, variables, table_len) = module_names();
    assert!(
        table_len > 0 && directives.len() == table_len,
        "found {} directives in nginx-module/src, the command table holds {table_len}: \
         this test no longer reads the source right",
        directives.len()
    );
    assert!(!variables.is_empty(), "no variables found in variables.rs");
    let documented = documented_directives(&text);
    let mut problems = Vec::new();
    for (name, context) in &directives {
        match documented.get(name) {
            None => problems.push(format!("directive {name} is not documented")),
            Some(None) => problems.push(format!("directive {name} has no `| Context: |` row")),
            Some(Some(doc)) if doc != context => problems.push(format!(
                "directive {name}: documented context \"{doc}\", the module takes \"{context}\""
            )),
            Some(Some(_)) => {}
        }
    }
    for name in documented.keys().filter(|n| !directives.contains_key(*n)) {
        problems.push(format!(
            "directive {name} is documented but the module has none"
        ));
    }

    let documented_vars: BTreeSet<String> = table_rows(&text, "| variable | value |")
        .iter()
        .flat_map(|row| quoted(&row[0]))
        .filter_map(|v| v.strip_prefix('$').map(str::to_string))
        .collect();
    for name in variables.difference(&documented_vars) {
        problems.push(format!("variable ${name} is not documented"));
    }
    for name in documented_vars.difference(&variables) {
        problems.push(format!(
            "variable ${name} is documented but the module has none"
        ));
    }
    fail_on(problems);
}
