//! The import operation: rows judged, codes and clicks kept, re-imports
//! counted.

use super::*;
use crate::links::fixture::Parts;
use crate::links::CreateLink;

#[tokio::test]
async fn import_commits_good_rows_and_names_bad_lines() {
    let dir = tempfile::tempdir().unwrap();
    let parts = Parts::open(dir.path());
    let links = parts.links();
    let row = |line, url: &str, alias: Option<&str>| {
        ImportRow(
            line,
            url.into(),
            alias.map(Into::into),
            None,
            None,
            ImportExtra::default(),
        )
    };
    let out = links
        .import(
            vec![
                row(2, "https://e.com/1", Some("imp")),
                row(3, "nope", None),
                row(4, "https://e.com/2", Some("imp")),
                row(5, "https://e.com/3", None),
            ],
            Some("cli"),
        )
        .await
        .unwrap();
    assert_eq!(out.imported, 2);
    let lines: Vec<(u64, Option<&str>)> = out
        .errors
        .iter()
        .map(|e| (e.line, e.field.as_deref()))
        .collect();
    assert_eq!(lines, vec![(3, Some("url")), (4, Some("alias"))]);
    assert_eq!(links.get("imp").await.unwrap().url, "https://e.com/1");
    let n = parts.store.count_links().await.unwrap();
    assert_eq!(n, 2);
    parts.store.close();
}

#[tokio::test]
async fn a_second_import_counts_rows_already_present() {
    let dir = tempfile::tempdir().unwrap();
    let parts = Parts::open(dir.path());
    let links = parts.links();
    let rows = || {
        let off = ImportExtra {
            disabled: true,
            ..ImportExtra::default()
        };
        vec![
            ImportRow(2, "https://e.com/a".into(), None, None, None, off.clone()),
            ImportRow(
                3,
                "https://e.com/b".into(),
                None,
                None,
                None,
                Default::default(),
            ),
            ImportRow(
                4,
                "https://e.com/b".into(),
                None,
                None,
                None,
                Default::default(),
            ),
            ImportRow(
                5,
                "https://e.com/c".into(),
                Some("imp-off".into()),
                None,
                None,
                off,
            ),
        ]
    };
    let first = links.import(rows(), Some("cli")).await.unwrap();
    assert_eq!((first.imported, first.present), (4, 0), "{first:?}");
    let again = links.import(rows(), Some("cli")).await.unwrap();
    // The un-aliased disabled row cannot be recognised (dedupe finds
    // live links only); the others are present.
    assert_eq!((again.imported, again.present), (1, 3), "{again:?}");
    assert!(again.errors.is_empty(), "{again:?}");
    let n = parts.store.count_links().await.unwrap();
    assert_eq!(n, 5);
    parts.store.close();
}

#[tokio::test]
async fn exported_codes_and_clicks_are_kept_and_creates_never_collide() {
    let dir = tempfile::tempdir().unwrap();
    let parts = Parts::open(dir.path());
    let links = parts.links();
    parts.ids.prime().await.unwrap();
    let first = links
        .create(
            &CreateLink {
                url: "https://e.com/here".into(),
                ..CreateLink::default()
            },
            None,
        )
        .await
        .unwrap()
        .link()
        .id;
    let codec = &parts.rules.codec;
    // Ids just above the one created: in this process's leased memory.
    let code = |id: u64| codec.encode(id).as_str().to_string();
    let row = |line, id: u64, url: &str, clicks, bots| {
        let extra = ImportExtra {
            code: Some(code(id)),
            clicks: Some(clicks),
            bot_clicks: Some(bots),
            ..ImportExtra::default()
        };
        ImportRow(line, url.into(), None, None, None, extra)
    };
    let rows = vec![
        row(2, first + 1, "https://e.com/a", 7, 2),
        row(3, first + 3, "https://e.com/b", 0, 0),
        // Taken here by another link: a new code, said so.
        row(4, first, "https://e.com/c", 1, 0),
        row(5, first + 5, "https://e.com/d", 1, 2),
        // Beyond any id handed out: kept, and the allocator stays.
        row(6, MAX_KEPT_ID + 1, "https://e.com/far", 0, 0),
    ];
    let out = links.import(rows.clone(), Some("cli")).await.unwrap();
    assert_eq!((out.imported, out.present), (4, 0), "{out:?}");
    assert_eq!(out.errors.len(), 1, "{out:?}");
    assert_eq!(
        (out.errors[0].line, out.errors[0].field.as_deref()),
        (5, Some("bot_clicks"))
    );
    assert_eq!(out.notes.len(), 1, "{out:?}");
    assert_eq!(
        (out.notes[0].line, out.notes[0].field.as_deref()),
        (4, Some("code"))
    );
    assert_eq!(
        links.get(&code(MAX_KEPT_ID + 1)).await.unwrap().url,
        "https://e.com/far"
    );
    let a = links.get(&code(first + 1)).await.unwrap();
    assert_eq!(
        (a.url.as_str(), a.clicks, a.bot_clicks),
        ("https://e.com/a", 7, 2)
    );
    assert_eq!(
        links.get(&code(first + 3)).await.unwrap().url,
        "https://e.com/b"
    );
    // Later creates get none of the kept ids.
    for i in 0..10 {
        let made = links
            .create(
                &CreateLink {
                    url: format!("https://e.com/new/{i}"),
                    ..CreateLink::default()
                },
                None,
            )
            .await
            .unwrap();
        assert!(made.link().id > first + 3, "{:?}", made.link());
        assert!(made.link().id < MAX_KEPT_ID, "{:?}", made.link());
    }
    // Again: what was kept is present; the re-coded row is found by
    // its URL and options.
    let again = links.import(rows, Some("cli")).await.unwrap();
    assert_eq!((again.imported, again.present), (0, 4), "{again:?}");
    parts.store.close();
}

#[tokio::test]
async fn a_foreign_code_already_ours_with_the_same_url_is_present() {
    let dir = tempfile::tempdir().unwrap();
    let parts = Parts::open(dir.path());
    let links = parts.links();
    // The file's URL is not in normal form; the stored one is.
    let rows = || {
        let extra = ImportExtra {
            alias_optional: true,
            ..ImportExtra::default()
        };
        vec![ImportRow(
            2,
            "https://E.COM/x".into(),
            Some("go-x".into()),
            None,
            None,
            extra,
        )]
    };
    let first = links.import(rows(), Some("cli")).await.unwrap();
    assert_eq!((first.imported, first.notes.len()), (1, 0), "{first:?}");
    let again = links.import(rows(), Some("cli")).await.unwrap();
    assert_eq!((again.imported, again.present), (0, 1), "{again:?}");
    assert!(again.notes.is_empty(), "{again:?}");
    assert_eq!(parts.store.count_links().await.unwrap(), 1);
    parts.store.close();
}

#[tokio::test]
async fn a_member_import_keeps_its_links_in_its_own_team_and_name() {
    let dir = tempfile::tempdir().unwrap();
    let parts = Parts::open(dir.path());
    let field = parts.store.add_team("field".into(), 0).await.unwrap();
    let sales = parts.store.add_team("sales".into(), 0).await.unwrap();
    let mut links = parts.links();
    links.team = crate::links::team::TeamScope {
        sees: Some(field.id),
        owner: field.id,
    };
    let claims = ImportExtra {
        team: Some("sales".into()),
        creator: Some("alice".into()),
        ..ImportExtra::default()
    };
    let row = ImportRow(
        2,
        "https://e.com/x".into(),
        Some("sneaky".into()),
        None,
        None,
        claims,
    );
    let out = links.import(vec![row.clone()], Some("mo")).await.unwrap();
    assert_eq!(out.imported, 1, "{out:?}");
    let made = links.get("sneaky").await.unwrap();
    assert_eq!(made.team_id, field.id);
    assert_eq!(made.created_by.as_deref(), Some("mo"));
    // The same row from the CLI (every team) keeps what the file says.
    let mut admin = parts.links();
    admin.team = crate::links::team::TeamScope::ALL;
    let row = ImportRow(
        3,
        "https://e.com/y".into(),
        Some("placed".into()),
        None,
        None,
        row.5,
    );
    admin.import(vec![row], Some("cli")).await.unwrap();
    let placed = admin.get("placed").await.unwrap();
    assert_eq!(
        (placed.team_id, placed.created_by.as_deref()),
        (sales.id, Some("alice"))
    );
    parts.store.close();
}
