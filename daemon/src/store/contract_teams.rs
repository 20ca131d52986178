//! What every store promises about teams, checked through [`Store`] alone
//! on SQLite and on PostgreSQL (a private cluster): lists and stats scoped
//! to a team, users and their keys following a team and role, a team
//! deleted only when nothing is left in it.

use shortlink_core::device::DeviceClass;
use shortlink_core::ipc::{BatchId, ClickBatch, ClickCount};

use super::{NewLink, Store};
use crate::access::Role;
use crate::store::teams::DEFAULT_TEAM;
use crate::store::{Link, ListQuery, Owner, StoreError};

/// A plain create of link `id` in team `team_id`.
pub(crate) fn link_of(id: u64, team_id: i64) -> NewLink {
    NewLink {
        link: Link {
            id,
            url: format!("https://e.com/{id}"),
            team_id,
            ..Link::default()
        },
        dedupe_hash: [id as u8; 32],
        dedupe: false,
        alias_targets: Vec::new(),
    }
}

/// The site stats filter of team `id`.
fn of_team(id: i64) -> crate::store::SiteFilter {
    crate::store::SiteFilter {
        team: Some(id),
        tag: None,
    }
}

fn ids(links: &[Link]) -> Vec<u64> {
    links.iter().map(|l| l.id).collect()
}

/// Teams are made and named once; the default team is there from the
/// migration.
async fn teams(store: &Store) -> i64 {
    let all = store.list_teams().await.unwrap();
    assert_eq!(all[0].id, DEFAULT_TEAM);
    assert_eq!(all[0].name, "default");
    let sales = store.add_team("sales".into(), 5).await.unwrap();
    assert_ne!(sales.id, DEFAULT_TEAM);
    assert!(matches!(
        store.add_team("sales".into(), 6).await,
        Err(StoreError::Conflict(_))
    ));
    let found = store.team_by_name("sales".into()).await.unwrap().unwrap();
    assert_eq!(found, sales);
    assert!(store.team_by_name("nope".into()).await.unwrap().is_none());
    sales.id
}

/// A list, its total and an export page see one team when asked; site
/// stats count only that team's clicks.
async fn scoped_lists(store: &Store, sales: i64) {
    let news = vec![
        link_of(1, DEFAULT_TEAM),
        link_of(2, sales),
        link_of(3, sales),
    ];
    store.insert_links(news, 0).await.unwrap();
    let stored = store
        .find_link(crate::store::CodeRef::Id(2))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.team_id, sales, "the team is stored with the link");
    let query = |team| ListQuery {
        limit: 10,
        team,
        now: 1,
        ..ListQuery::default()
    };
    let page = store.list_links(query(Some(sales))).await.unwrap();
    assert_eq!((ids(&page.links), page.total), (vec![3, 2], 2));
    let page = store.list_links(query(Some(DEFAULT_TEAM))).await.unwrap();
    assert_eq!((ids(&page.links), page.total), (vec![1], 1));
    let page = store.list_links(query(None)).await.unwrap();
    assert_eq!(page.total, 3);
    let export = store.links_page(query(Some(sales))).await.unwrap();
    assert_eq!(ids(&export), vec![3, 2]);

    let click = |link_id, count| ClickCount {
        link_id,
        hour: 10,
        device: DeviceClass::Desktop,
        bot: false,
        referrer: None,
        count,
        country: shortlink_core::country::Country::parse("DE").unwrap(),
        variant: 0,
    };
    let batch = ClickBatch {
        batch_id: BatchId([4; 16]),
        clicks: vec![click(1, 5), click(2, 7)],
    };
    store.append_clicks(vec![batch], 36_000).await.unwrap();
    let (all, _) = store
        .site_stats(0, 20, false, 5, Default::default())
        .await
        .unwrap();
    assert_eq!(all.total, 12);
    let (team, top) = store
        .site_stats(0, 20, false, 5, of_team(sales))
        .await
        .unwrap();
    assert_eq!(team.total, 7, "only the team's clicks, pending ones too");
    assert_eq!(top.iter().map(|(l, _)| l.id).collect::<Vec<_>>(), vec![2]);
    store.fold_clicks().await.unwrap();
    let (team, _) = store
        .site_stats(0, 20, false, 5, of_team(sales))
        .await
        .unwrap();
    assert_eq!(team.total, 7, "and once folded");
}

/// Users are in a team with a role; a key made for a user follows that
/// user's team and role, and is refused once the user is gone.
async fn users_and_keys(store: &Store, sales: i64) {
    assert!(matches!(
        store
            .add_user("ghost".into(), "h".into(), 1, 999, Role::Member)
            .await,
        Err(StoreError::NotFound(_))
    ));
    let bob = store
        .add_user("bob".into(), "h".into(), 1, sales, Role::Viewer)
        .await
        .unwrap();
    let user = store.user_by_name("bob".into()).await.unwrap().unwrap();
    assert_eq!((user.team_id, user.role), (sales, Role::Viewer));
    let owner = Owner {
        user_id: Some(bob),
        team_id: sales,
        role: Role::Viewer,
    };
    let scopes = "links:write,links:read".to_string();
    store
        .create_key(
            "bob's".into(),
            "b0b".into(),
            vec![1],
            scopes,
            1,
            None,
            owner,
        )
        .await
        .unwrap();
    let key = store.key_by_prefix("b0b".into()).await.unwrap().unwrap();
    assert_eq!(
        (key.user_id, key.team_id, key.role),
        (Some(bob), sales, Role::Viewer)
    );

    let moved = store
        .set_user_membership("bob".into(), DEFAULT_TEAM, Role::Member)
        .await
        .unwrap();
    assert_eq!((moved.team_id, moved.role), (DEFAULT_TEAM, Role::Member));
    let key = store.key_by_prefix("b0b".into()).await.unwrap().unwrap();
    assert_eq!(
        (key.team_id, key.role),
        (DEFAULT_TEAM, Role::Member),
        "the key follows"
    );
    assert!(matches!(
        store
            .set_user_membership("nobody".into(), sales, Role::Admin)
            .await,
        Err(StoreError::NotFound(_))
    ));

    store.delete_user("bob".into(), 77).await.unwrap();
    let key = store.key_by_prefix("b0b".into()).await.unwrap().unwrap();
    assert!(
        key.revoked_at.is_some(),
        "a deleted user's keys are revoked"
    );
}

/// A team is deleted only when no link or user is left in it.
async fn team_deletion(store: &Store, sales: i64) {
    assert!(matches!(
        store.delete_team(sales).await,
        Err(StoreError::InUse(_))
    ));
    store.delete_link(2).await.unwrap();
    store.delete_link(3).await.unwrap();
    store.delete_team(sales).await.unwrap();
    assert!(matches!(
        store.delete_team(sales).await,
        Err(StoreError::NotFound(_))
    ));
    let left: Vec<String> = store
        .list_teams()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(left, ["default"]);
}

/// An import sees only its team: another team's link is never "present"
/// for a row, whatever its URL (a right guess of its target and a wrong
/// one are told apart by nothing), its alias is taken and its code moved.
async fn imports_see_their_team(store: &Store) {
    use crate::store::{ImportLink, Imported, Inserted};
    let ops = store.add_team("ops".into(), 6).await.unwrap().id;
    let mut secret = link_of(700, ops);
    secret.link.alias = Some("ops-secret".into());
    secret.link.url = "https://e.com/secret".into();
    store.insert_links(vec![secret], 6).await.unwrap();
    let row = |id: u64, alias: Option<&str>, keep: Option<u64>, sees| {
        let mut new = link_of(id, DEFAULT_TEAM);
        new.link.alias = alias.map(Into::into);
        new.link.url = "https://e.com/secret".into();
        ImportLink {
            new,
            keep_id: keep,
            advance: true,
            clicks: None,
            sees,
        }
    };
    let member = Some(DEFAULT_TEAM);
    let out = store
        .import_links(
            vec![
                row(701, Some("ops-secret"), None, member),
                row(702, None, Some(700), member),
            ],
            7,
        )
        .await
        .unwrap();
    assert!(
        matches!(&out[0], Imported::Written { outcome: Inserted::AliasTaken(a), .. } if a == "ops-secret"),
        "{:?}",
        out[0]
    );
    assert!(
        matches!(
            &out[1],
            Imported::Written {
                moved: true,
                kept: false,
                ..
            }
        ),
        "{:?}",
        out[1]
    );
    let taken = store
        .aliases_taken(vec!["ops-secret".into()], member)
        .await
        .unwrap();
    assert_eq!(taken["ops-secret"], None, "held, URL unsaid");
    // Whoever sees every team finds it there.
    let out = store
        .import_links(vec![row(703, Some("ops-secret"), None, None)], 8)
        .await
        .unwrap();
    assert!(matches!(out[0], Imported::Present), "{:?}", out[0]);
    let taken = store
        .aliases_taken(vec!["ops-secret".into()], None)
        .await
        .unwrap();
    assert_eq!(taken["ops-secret"].as_deref(), Some("https://e.com/secret"));
}

/// Every team check, in order, on a fresh, empty store.
pub async fn check_teams(store: &Store) {
    let sales = teams(store).await;
    scoped_lists(store, sales).await;
    users_and_keys(store, sales).await;
    team_deletion(store, sales).await;
    imports_see_their_team(store).await;
}

#[tokio::test]
async fn sqlite_keeps_the_team_contract() {
    let (_dir, sqlite) = crate::store::sqlite::tests::temp_store();
    let store = Store::from(sqlite);
    check_teams(&store).await;
    store.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_keeps_the_team_contract() {
    let (_cluster, store) = super::contract::postgres_store("contract-teams").await;
    check_teams(&store).await;
    store.close();
}
