//! `PgStore`'s link lists on a real PostgreSQL: the filters, sorts and
//! keyset pages of the SQLite store (store/links/list.rs).

mod pg_common;
mod pg_store_common;

use pg_common::config_for;
use pg_store_common::{new_link, open};
use shortlinkd::store::postgres::backend::PgStore;
use shortlinkd::store::sqlite::SqliteStore;
use shortlinkd::store::{CodeRef, Inserted, LinkState, LinkStore, ListQuery, ListSort, NewLink};
use testpg::PgCluster;

/// A link for the list test: created at `id * 10`.
fn listed(id: u64, expires_at: Option<i64>, tags: &[&str]) -> NewLink {
    let mut n = new_link(id, None, &format!("https://example.com/{id}"), &[]);
    n.link.created_at = id as i64 * 10;
    n.link.expires_at = expires_at;
    n.link.tags = tags.iter().map(|t| t.to_string()).collect();
    n
}

/// Every page of `query`, following each page's `next` until there is
/// none; every page's total is the same.
async fn pages(store: &PgStore, mut query: ListQuery) -> (Vec<Vec<u64>>, u64) {
    let mut out = Vec::new();
    let mut totals = Vec::new();
    loop {
        let page = store.list_links(query.clone()).await.unwrap();
        totals.push(page.total);
        if !page.links.is_empty() {
            out.push(page.links.iter().map(|l| l.id).collect());
        }
        match page.next {
            Some(next) => query.after = Some(next),
            None => break,
        }
    }
    totals.dedup();
    assert_eq!(totals.len(), 1, "{totals:?}");
    (out, totals[0])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_filter_sort_and_page_like_sqlite() {
    let cluster = PgCluster::start("list");
    let store = open(&config_for(&cluster, "list")).await;
    let mut off = listed(4, None, &[]);
    off.link.disabled = true;
    let mut used = listed(5, None, &["c"]);
    used.link.max_visits = Some(3);
    used.link.alias = Some("five-x".into());
    let out = store
        .insert_links(
            vec![
                listed(1, Some(300), &["a"]),
                listed(2, None, &["a", "b"]),
                listed(3, Some(100), &["b"]),
                off,
                used,
            ],
            0,
        )
        .await
        .unwrap();
    assert!(out.iter().all(|o| matches!(o, Inserted::New(_))));
    cluster.psql(
        "list",
        "UPDATE links SET clicks = CASE id WHEN 1 THEN 5 WHEN 2 THEN 9 WHEN 3 THEN 5 \
         WHEN 5 THEN 3 ELSE 0 END",
    );
    let q = |sort, ascending| ListQuery {
        limit: 2,
        sort,
        ascending,
        now: 200,
        ..Default::default()
    };
    for (sort, ascending, want) in [
        (
            ListSort::Created,
            false,
            vec![vec![5, 4], vec![3, 2], vec![1]],
        ),
        (
            ListSort::Created,
            true,
            vec![vec![1, 2], vec![3, 4], vec![5]],
        ),
        (
            ListSort::Clicks,
            false,
            vec![vec![2, 3], vec![1, 5], vec![4]],
        ),
        (
            ListSort::Clicks,
            true,
            vec![vec![4, 5], vec![1, 3], vec![2]],
        ),
        (
            ListSort::Expires,
            true,
            vec![vec![3, 1], vec![2, 4], vec![5]],
        ),
        (
            ListSort::Expires,
            false,
            vec![vec![5, 4], vec![2, 1], vec![3]],
        ),
    ] {
        let got = pages(&store, q(sort, ascending)).await;
        assert_eq!(got, (want, 5), "{sort:?} ascending {ascending}");
    }
    // A page that ends the list exactly has a `next`, and the page after
    // it is empty with no `next`.
    let mut query = q(ListSort::Created, false);
    query.limit = 5;
    let page = store.list_links(query.clone()).await.unwrap();
    assert_eq!(page.next, Some((1, 1)));
    query.after = page.next;
    let last = store.list_links(query).await.unwrap();
    assert!(last.links.is_empty() && last.next.is_none() && last.total == 5);

    let matching = |f: &dyn Fn(&mut ListQuery)| {
        let mut query = q(ListSort::Created, false);
        query.limit = 100;
        f(&mut query);
        query
    };
    let tags = |t: &[&str]| t.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let cases: Vec<(ListQuery, Vec<u64>)> = vec![
        (matching(&|q| q.tags = tags(&["a", "b"])), vec![3, 2, 1]),
        (
            matching(&|q| {
                q.tags = tags(&["a", "b"]);
                q.all_tags = true
            }),
            vec![2],
        ),
        (
            matching(&|q| {
                q.tags = tags(&["b", "b"]);
                q.all_tags = true
            }),
            vec![3, 2],
        ),
        (matching(&|q| q.state = Some(LinkState::Active)), vec![2, 1]),
        (matching(&|q| q.state = Some(LinkState::Disabled)), vec![4]),
        (matching(&|q| q.state = Some(LinkState::Expired)), vec![3]),
        (matching(&|q| q.state = Some(LinkState::Exhausted)), vec![5]),
        (
            matching(&|q| {
                q.created_after = Some(20);
                q.created_before = Some(40)
            }),
            vec![3, 2],
        ),
        // A URL substring, an alias substring (case-sensitive), a code.
        (matching(&|q| q.q = Some("ple.com/3".into())), vec![3]),
        (matching(&|q| q.q = Some("ve-".into())), vec![5]),
        (matching(&|q| q.q = Some("VE-".into())), vec![]),
        (
            matching(&|q| {
                q.q = Some("zz".into());
                q.code_id = Some(4)
            }),
            vec![4],
        ),
    ];
    for (query, want) in cases {
        let page = store.list_links(query.clone()).await.unwrap();
        let got: Vec<u64> = page.links.iter().map(|l| l.id).collect();
        assert_eq!((&got, page.total), (&want, want.len() as u64), "{query:?}");
        let exported = store.links_page(query).await.unwrap();
        assert_eq!(exported.iter().map(|l| l.id).collect::<Vec<_>>(), want);
    }
    let mut states = store.count_links_by_state(200).await.unwrap();
    states.sort();
    let expected = [
        ("active", 2),
        ("disabled", 1),
        ("exhausted", 1),
        ("expired", 1),
    ];
    let expected: Vec<(String, u64)> = expected.iter().map(|(s, n)| (s.to_string(), *n)).collect();
    assert_eq!(states, expected);
    // The stored row comes back whole.
    let one = store.find_link(CodeRef::Id(5)).await.unwrap().unwrap();
    assert_eq!(
        (one.alias.as_deref(), one.max_visits, one.clicks, one.tags),
        (Some("five-x"), Some(3), 3, vec!["c".to_string()])
    );
}

/// Forty links with ties in every sort key, tags, aliases and every
/// state, the same on both stores.
fn varied() -> Vec<NewLink> {
    (1..=40u64)
        .map(|i| {
            let alias = match i % 5 {
                0 => Some(format!("al-{i}")),
                1 => Some(format!("Al-{i}")),
                _ => None,
            };
            let mut n = new_link(
                i,
                alias.as_deref(),
                &format!("https://ex{}.com/p{i}", i % 4),
                &[],
            );
            n.link.created_at = ((i * 37) % 100) as i64;
            n.link.expires_at = [None, Some(150), Some(300), Some(150)][(i % 4) as usize];
            n.link.max_visits = (i % 6 == 0).then_some(4);
            n.link.disabled = i % 7 == 0;
            let tags: &[&str] =
                [&[][..], &["a"], &["b"], &["a", "b"], &["c", "a"]][(i % 5) as usize];
            n.link.tags = tags.iter().map(|t| t.to_string()).collect();
            n
        })
        .collect()
}

/// A change to a query: one filter.
type Filter = Box<dyn Fn(&mut ListQuery)>;

/// Every page of `query` from `store` as `(ids, total, next)`.
async fn all_pages(
    store: &dyn LinkStore,
    mut query: ListQuery,
) -> Vec<(Vec<u64>, u64, Option<(i64, u64)>)> {
    let mut out = Vec::new();
    loop {
        let page = store.list_links(query.clone()).await.unwrap();
        out.push((
            page.links.iter().map(|l| l.id).collect(),
            page.total,
            page.next,
        ));
        match page.next {
            Some(next) if out.len() <= 50 => query.after = Some(next),
            _ => return out,
        }
    }
}

/// The same links on SQLite and PostgreSQL list the same pages, totals
/// and cursors for every sort, direction, filter and page size.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_page_for_page_as_sqlite_does() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("links.db");
    let sqlite = SqliteStore::open(&path, 2, 100).unwrap();
    let cluster = PgCluster::start("same");
    let pg = open(&config_for(&cluster, "same")).await;
    for store in [&sqlite as &dyn LinkStore, &pg] {
        let out = store.insert_links(varied(), 0).await.unwrap();
        assert!(out.iter().all(|o| matches!(o, Inserted::New(_))));
    }
    // Click totals with ties, as folded clicks on SQLite.
    let clicks = "UPDATE links SET clicks = (id * 7) % 9, bot_clicks = (id % 2)";
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute(clicks, [])
        .unwrap();
    cluster.psql("same", clicks);
    let tags = |t: &[&str]| t.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let filters: Vec<Filter> = vec![
        Box::new(|_| {}),
        Box::new(|q| q.q = Some("ex2.com".into())),
        Box::new(|q| q.q = Some("al-".into())),
        Box::new(|q| q.q = Some("/p1".into())),
        Box::new(|q| {
            q.q = Some("nothing".into());
            q.code_id = Some(12)
        }),
        Box::new(move |q| q.tags = tags(&["a", "c"])),
        Box::new(move |q| {
            q.tags = tags(&["a", "b", "a"]);
            q.all_tags = true
        }),
        Box::new(|q| q.state = Some(LinkState::Active)),
        Box::new(|q| q.state = Some(LinkState::Disabled)),
        Box::new(|q| q.state = Some(LinkState::Expired)),
        Box::new(|q| q.state = Some(LinkState::Exhausted)),
        Box::new(|q| {
            q.created_after = Some(20);
            q.created_before = Some(70)
        }),
    ];
    let mut compared = 0;
    for (f, filter) in filters.iter().enumerate() {
        for sort in [ListSort::Created, ListSort::Clicks, ListSort::Expires] {
            for ascending in [false, true] {
                for limit in [3, 7] {
                    let mut query = ListQuery {
                        limit,
                        sort,
                        ascending,
                        now: 200,
                        ..Default::default()
                    };
                    filter(&mut query);
                    let want = all_pages(&sqlite, query.clone()).await;
                    let got = all_pages(&pg, query).await;
                    assert_eq!(
                        got, want,
                        "filter {f}, {sort:?}, ascending {ascending}, limit {limit}"
                    );
                    compared += want.len();
                }
            }
        }
    }
    assert!(compared > 500, "{compared} pages compared");
    let (mut a, mut b) = (
        sqlite.count_links_by_state(200).await.unwrap(),
        pg.count_links_by_state(200).await.unwrap(),
    );
    a.sort();
    b.sort();
    assert_eq!(a, b);
    sqlite.close();
}
