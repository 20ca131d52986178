//! `PgStore`'s imports and id leases on a real PostgreSQL: a re-import
//! stores nothing twice, kept ids move the allocator, and leases from two
//! nodes never overlap.

mod pg_common;
mod pg_store_common;

use pg_common::config_for;
use pg_store_common::{change_rows, import_row, new_link, open};
use shortlinkd::store::sqlite::SqliteStore;
use shortlinkd::store::{
    CodeRef, IdStore, ImportLink, ImportStore, Imported, Inserted, LinkStore, ListQuery,
};
use testpg::PgCluster;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn imports_keep_free_ids_and_count_what_is_there() {
    let cluster = PgCluster::start("import");
    let store = open(&config_for(&cluster, "import")).await;
    store
        .insert_links(vec![new_link(50, None, "https://e.com/other", &[])], 0)
        .await
        .unwrap();
    let rows = || {
        vec![
            // Keeps 500; its code may be cached as missing: logged.
            import_row(1001, Some(500), None, "https://e.com/kept"),
            // 50 is another link's: a new id.
            import_row(1002, Some(50), None, "https://e.com/moved"),
            import_row(1003, None, Some("al"), "https://e.com/aliased"),
            // The same URL twice in one file: two links.
            import_row(1004, None, None, "https://e.com/twice"),
            import_row(1005, None, None, "https://e.com/twice"),
        ]
    };
    let first = store.import_links(rows(), 0).await.unwrap();
    let written: Vec<(u64, bool, bool)> = first
        .iter()
        .map(|o| match o {
            Imported::Written {
                outcome: Inserted::New(l),
                kept,
                moved,
            } => (l.id, *kept, *moved),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        written,
        [
            (500, true, false),
            (1002, false, true),
            (1003, false, false),
            (1004, false, false),
            (1005, false, false)
        ]
    );
    let kept = store.find_link(CodeRef::Id(500)).await.unwrap().unwrap();
    assert_eq!((kept.clicks, kept.bot_clicks), (7, 2));
    assert_eq!(
        change_rows(&cluster, "import"),
        ["500|-|-", "1003|-|al"],
        "the kept code and the alias are logged"
    );
    // The allocator moved past the kept id in the import's transaction.
    assert!(store.lease_ids(1, 10, vec![]).await.unwrap().start > 500);

    // Again: everything is there already, nothing is written.
    let again = store.import_links(rows(), 0).await.unwrap();
    assert!(
        again.iter().all(|o| matches!(o, Imported::Present)),
        "{again:?}"
    );
    assert_eq!(store.count_links().await.unwrap(), 6);
    assert_eq!(change_rows(&cluster, "import").len(), 2);
    // An alias taken by another URL is refused like a create.
    let clash = store
        .import_links(
            vec![import_row(1010, None, Some("al"), "https://e.com/x")],
            0,
        )
        .await
        .unwrap();
    assert!(matches!(
        &clash[0],
        Imported::Written { outcome: Inserted::AliasTaken(a), .. } if a == "al"
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn leases_from_two_stores_never_overlap() {
    let cluster = PgCluster::start("leases");
    let config = config_for(&cluster, "leases");
    let (a, b) = (open(&config).await, open(&config).await);
    let (a, b) = (std::sync::Arc::new(a), std::sync::Arc::new(b));
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let store = if i % 2 == 0 { a.clone() } else { b.clone() };
            tokio::spawn(async move {
                let mut got = Vec::new();
                for _ in 0..10 {
                    got.push(store.lease_ids(100, 7, vec![]).await.unwrap());
                }
                got
            })
        })
        .collect();
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    all.sort_by_key(|r| r.start);
    assert_eq!(all.len(), 80);
    assert_eq!(all[0].start, 100);
    for w in all.windows(2) {
        assert_eq!(w[0].end, w[1].start, "{:?} then {:?}", w[0], w[1]);
    }
    b.reserve_ids_through(5000).await.unwrap();
    assert_eq!(a.lease_ids(100, 10, vec![]).await.unwrap(), 5001..5011);
    // Never back.
    a.reserve_ids_through(10).await.unwrap();
    assert_eq!(b.lease_ids(100, 1, vec![]).await.unwrap(), 5011..5012);
    let err = a.lease_ids(100, 0, vec![]).await.unwrap_err().to_string();
    assert!(err.contains("at least one id"), "{err}");
}

/// One import outcome in a comparable form.
fn summary(o: &Imported) -> String {
    match o {
        Imported::Present => "present".into(),
        Imported::Written {
            outcome,
            kept,
            moved,
        } => {
            let what = match outcome {
                Inserted::New(l) => format!("new {} {:?} {}", l.id, l.alias, l.url),
                Inserted::Existing(l) => format!("existing {}", l.id),
                Inserted::AliasTaken(a) => format!("alias taken {a}"),
                Inserted::TargetAlias(i) => format!("target alias {i}"),
            };
            format!("{what} kept {kept} moved {moved}")
        }
    }
}

/// The same file imported twice, then a variant of it, into SQLite and
/// PostgreSQL holding the same links: the same outcome row for row, and
/// the same links with the same click totals afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn imports_answer_row_for_row_as_sqlite_does() {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = SqliteStore::open(&dir.path().join("import.db"), 2, 100).unwrap();
    let cluster = PgCluster::start("import-same");
    let pg = open(&config_for(&cluster, "same")).await;
    let file = |shift: u64| -> Vec<ImportLink> {
        (0..24u64)
            .map(|i| {
                let alias = (i % 4 == 0).then(|| format!("a{}", i / 2));
                let url = format!("https://e.com/{}", (i + shift) % 9);
                let keep = (i % 3 == 0).then_some(10 + (i + shift) % 12);
                import_row(1000 + shift * 100 + i, keep, alias.as_deref(), &url)
            })
            .collect()
    };
    for store in [&sqlite as &dyn LinkStore, &pg] {
        let taken = vec![
            new_link(13, None, "https://e.com/4", &[]),
            new_link(16, Some("a2"), "https://e.com/elsewhere", &[]),
        ];
        store.insert_links(taken, 0).await.unwrap();
    }
    for (round, shift) in [0, 0, 5].into_iter().enumerate() {
        let want = sqlite.import_links(file(shift), 0).await.unwrap();
        let got = pg.import_links(file(shift), 0).await.unwrap();
        let (want, got): (Vec<String>, Vec<String>) = (
            want.iter().map(summary).collect(),
            got.iter().map(summary).collect(),
        );
        assert_eq!(got, want, "round {round}");
        if round == 1 {
            assert!(want.iter().all(|w| w == "present"), "{want:?}");
        }
    }
    let every = ListQuery {
        limit: 1000,
        ..Default::default()
    };
    let (want, got) = (
        sqlite.links_page(every.clone()).await.unwrap(),
        pg.links_page(every).await.unwrap(),
    );
    assert_eq!(got, want);
    assert!(want.len() > 30, "{} links", want.len());
    sqlite.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chunk_of_twenty_thousand_rows_fits_postgresqls_lock_table() {
    // The CLI sends imports in chunks of 20,000 rows; each row's alias and
    // URL are names the write locks. A lock per name overflowed the shared
    // lock table ("out of shared memory") at default settings.
    let cluster = PgCluster::start("bulk");
    let store = open(&config_for(&cluster, "bulk")).await;
    let rows: Vec<ImportLink> = (0..20_000u64)
        .map(|i| {
            let alias = format!("bulk-{i}");
            import_row(
                10_000 + i,
                None,
                Some(&alias),
                &format!("https://e.com/b/{i}"),
            )
        })
        .collect();
    let out = store.import_links(rows, 0).await.unwrap();
    assert!(out.iter().all(|o| matches!(
        o,
        Imported::Written {
            outcome: Inserted::New(_),
            ..
        }
    )));
    assert_eq!(store.count_links().await.unwrap(), 20_000);
}

/// Rows judged against the rows before them in the same chunk, as SQLite
/// does one statement at a time: a link the chunk made (under a kept id
/// lower than a stored twin, with an alias, or spent by restored clicks)
/// answers the later rows' lookups as a stored one would.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_see_the_links_made_before_them_in_their_chunk() {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = SqliteStore::open(&dir.path().join("chunk.db"), 2, 100).unwrap();
    let cluster = PgCluster::start("import-chunk");
    let pg = open(&config_for(&cluster, "chunk")).await;
    let stored = || {
        let mut disabled = import_row(502, None, None, "https://e.com/z").new;
        disabled.link.disabled = true;
        vec![
            import_row(500, None, None, "https://e.com/x").new,
            import_row(501, None, Some("held"), "https://e.com/y").new,
            disabled,
            import_row(600, None, None, "https://e.com/m").new,
        ]
    };
    let file = || {
        let mut spent = import_row(2008, Some(150), None, "https://e.com/m");
        spent.new.link.max_visits = Some(3);
        let mut targets = import_row(2010, None, None, "https://e.com/t");
        targets.new.alias_targets = vec!["dup".into()];
        let mut own = import_row(2011, None, Some("own"), "https://e.com/o");
        own.new.alias_targets = vec!["own".into()];
        vec![
            import_row(2000, Some(100), None, "https://e.com/x"),
            import_row(2001, None, None, "https://e.com/x"),
            import_row(2002, None, Some("dup"), "https://e.com/w"),
            import_row(2003, None, Some("dup"), "https://e.com/w"),
            import_row(2004, None, Some("held"), "https://e.com/y"),
            import_row(2005, None, Some("held"), "https://e.com/v"),
            import_row(2006, None, None, "https://e.com/z"),
            import_row(2007, None, None, "https://e.com/z"),
            spent,
            import_row(2009, None, None, "https://e.com/m"),
            targets,
            own,
            import_row(2012, Some(100), None, "https://e.com/x"),
            import_row(2013, Some(100), None, "https://e.com/q"),
            import_row(2014, Some(501), None, "https://e.com/y"),
        ]
    };
    sqlite.insert_links(stored(), 0).await.unwrap();
    pg.insert_links(stored(), 0).await.unwrap();
    let summaries = |out: Vec<Imported>| out.iter().map(summary).collect::<Vec<_>>();
    let sqlite_out = summaries(sqlite.import_links(file(), 0).await.unwrap());
    let pg_out = summaries(pg.import_links(file(), 0).await.unwrap());
    assert_eq!(pg_out, sqlite_out);
    let want = [
        "new 100 None https://e.com/x kept true moved false",
        "new 2001 None https://e.com/x kept false moved false",
        "new 2002 Some(\"dup\") https://e.com/w kept false moved false",
        "alias taken dup kept false moved false",
        "present",
        "alias taken held kept false moved false",
        "new 2006 None https://e.com/z kept false moved false",
        "new 2007 None https://e.com/z kept false moved false",
        "new 150 None https://e.com/m kept true moved false",
        "present",
        "target alias 0 kept false moved false",
        "target alias 0 kept false moved false",
        "present",
        "new 2013 None https://e.com/q kept false moved true",
        "present",
    ];
    assert_eq!(sqlite_out, want);
    let every = ListQuery {
        limit: 100,
        ..Default::default()
    };
    let (want, got) = (
        sqlite.links_page(every.clone()).await.unwrap(),
        pg.links_page(every).await.unwrap(),
    );
    assert_eq!(got, want);
    assert_eq!(got.len(), 4 + 7);
    for l in &got {
        let restored = !(500..=600).contains(&l.id);
        assert_eq!(l.clicks, if restored { 7 } else { 0 }, "{l:?}");
    }
    // The aliased link and the kept codes are in the change log.
    let log = change_rows(&cluster, "chunk");
    for row in ["100|-|-", "2002|-|dup", "150|-|-"] {
        assert!(log.iter().any(|r| r == row), "{row} not in {log:?}");
    }
    sqlite.close();
}
